"""``kafka-transactions``: Kafka 3.x's ``TransactionsCommand`` (KIP-664), see ``command``."""
