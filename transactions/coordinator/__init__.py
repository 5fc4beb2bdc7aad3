"""Kafka's ``kafka.coordinator.transaction``: the transaction coordinator of the transactional ids whose
``__transaction_state`` partition this broker leads."""
