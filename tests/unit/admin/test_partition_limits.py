"""The partition caps (``brokers/admin/partition_limits.py``): refused whole, with the cap named."""
from __future__ import annotations

import pytest

from brokers.admin.partition_limits import check_partition_limits, replicas_per_broker
from brokers.protocol.errors import ErrorCode, KafkaError

EXISTING = [[1, 2], [2, 3], [3, 1]]  # 3 partitions, 2 replicas on each broker


def test_no_caps_refuse_nothing():
    check_partition_limits(EXISTING, {p: [1, 2, 3] for p in range(100_000)})


def test_the_cluster_cap_counts_partitions_not_replicas():
    check_partition_limits(EXISTING, {0: [1, 2], 1: [2, 3]}, max_partitions=5)
    with pytest.raises(KafkaError) as caught:
        check_partition_limits(EXISTING, {0: [1], 1: [2], 2: [3]}, max_partitions=5)
    assert caught.value.code == ErrorCode.POLICY_VIOLATION
    assert "6 partitions, over max.partitions=5" in str(caught.value)


def test_the_broker_cap_names_the_brokers_it_would_overfill():
    check_partition_limits(EXISTING, {0: [1, 2]}, max_broker_partitions=3)
    with pytest.raises(KafkaError) as caught:
        check_partition_limits(EXISTING, {0: [1, 2], 1: [1, 3]}, max_broker_partitions=3)
    assert caught.value.code == ErrorCode.POLICY_VIOLATION
    assert "max.broker.partitions=3" in str(caught.value) and "broker 1: 4" in str(caught.value)
    assert "broker 2" not in str(caught.value)


def test_a_broker_already_over_its_cap_does_not_block_partitions_placed_elsewhere():
    check_partition_limits([[1]] * 10, {0: [2]}, max_broker_partitions=3)


def test_replicas_per_broker_counts_every_replica():
    assert replicas_per_broker(EXISTING) == {1: 2, 2: 2, 3: 2}
