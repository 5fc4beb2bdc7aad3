"""The soak's workload processes, each its own OS process (``python -m scripts.soak.workloads <kind> ...``) so
the runner can stop, kill and restart it: ``producer``, ``reader``, ``group``, ``copier`` (one module each,
confluent-kafka only, nothing retried above the client), every op written to ``history-<process>.jsonl``
through ``scripts.soak.history.HistoryWriter``. ``launcher`` starts and supervises them."""
