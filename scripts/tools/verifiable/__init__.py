"""Kafka 2.8's verifiable clients, the tools Kafka's system tests drive: ``kafka-verifiable-producer``
(``producer``, Kafka's ``VerifiableProducer``) and ``kafka-verifiable-consumer`` (``consumer``, Kafka's
``VerifiableConsumer``), JSON events on stdout, over confluent-kafka. Pure parts: ``flags`` (both tools'
flags and client settings), ``events`` (the JSON lines), ``pacing`` (the producer's keys, values, creation
times and throttle), ``batches`` (what the consumer makes of a poll); shared I/O in ``runtime``."""
