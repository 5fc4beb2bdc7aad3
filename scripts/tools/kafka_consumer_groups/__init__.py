"""``kafka-consumer-groups``: Kafka 2.8's ``ConsumerGroupCommand`` (the entry point is ``command.main``)."""
