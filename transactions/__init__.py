"""Transactions (KIP-98): the transaction coordinator every broker runs for the ``__transaction_state``
partitions it leads (``transactions.coordinator``)."""
