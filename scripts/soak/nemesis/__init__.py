"""The soak's nemesis: a reproducible fault schedule (``schedule``), how each fault kind starts and heals on
a ``ZkafkaCluster`` (``faults``), and the thread that runs the schedule and logs what it did (``nemesis``)."""
