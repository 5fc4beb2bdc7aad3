from transactions.coordinator.config import TransactionConfig
from transactions.coordinator.placement import partition_for


def test_defaults_are_kafkas():
    c = TransactionConfig()
    assert (c.transaction_max_timeout_ms, c.transactional_id_expiration_ms, c.transaction_log_num_partitions,
            c.abort_timed_out_transactions_interval_ms, c.remove_expired_transactional_ids_interval_ms) == (
        900000, 604800000, 50, 10000, 3600000)


def test_from_broker_reads_the_keys():
    keys = {f: v for f, v in [("transactional.id.expiration.ms", 1000), ("transaction.max.timeout.ms", 5000),
                              ("transaction.state.log.num.partitions", 3), ("transaction.state.log.replication.factor", 1),
                              ("transaction.state.log.segment.bytes", 1 << 20),
                              ("transaction.state.log.load.buffer.size", 1 << 20), ("transaction.state.log.min.isr", 1),
                              ("transaction.abort.timed.out.transaction.cleanup.interval.ms", 100),
                              ("transaction.remove.expired.transaction.cleanup.interval.ms", 200),
                              ("transaction.partition.verification.enable", False)]}
    c = TransactionConfig.from_broker(keys)
    assert (c.transaction_max_timeout_ms, c.transaction_log_num_partitions, c.abort_timed_out_transactions_interval_ms,
            c.partition_verification_enable) == (5000, 3, 100, False)
    assert c.valid_timeout(5000) and not c.valid_timeout(5001) and not c.valid_timeout(0)


def test_partition_for_is_kafkas_hash():
    assert partition_for("hello", 50) == 99162322 % 50  # Java: "hello".hashCode() == 99162322
    assert partition_for("polygenelubricants", 50) == 0  # Java: its hashCode() is Integer.MIN_VALUE
    assert partition_for("", 50) == 0
