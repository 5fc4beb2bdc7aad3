"""Kafka 2.8's performance tools over confluent-kafka (librdkafka): ``kafka-producer-perf-test``
(``producer.py``, Kafka's ``ProducerPerformance``) and ``kafka-consumer-perf-test`` (``consumer.py``, Kafka's
``ConsumerPerformance``). Their flags (``producer_flags``, ``consumer_flags``), statistics and output lines
(``producer_stats``, ``consumer_stats``, ``dates``, ``formats``) are pure modules; the two entry modules are
the thin I/O shells around one librdkafka client each."""
