"""Faults against a cluster in Docker containers: a 3-node ZooKeeper ensemble and 3 brokers from our images.
Each scenario runs an idempotent acks=all producer (min.insync.replicas=2) through the fault and then
asserts that no acknowledged record was lost and that every partition reads back in order."""
from __future__ import annotations

import threading
from collections import Counter
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zkafka.testing.cluster import SESSION_TIMEOUT_MS, ZkafkaCluster
from tests.integration.conditions import wait_for

PROPERTIES = {"min.insync.replicas": "2", "default.replication.factor": "3", "offsets.topic.replication.factor": "3",
              "offsets.topic.num.partitions": "6", "group.initial.rebalance.delay.ms": "0",
              "replica.lag.time.max.ms": "6000", "replica.fetch.backoff.ms": "200"}


class LoadProducer(threading.Thread):
    """Values 0, 1, 2, ... round-robin over the partitions at ``rate``/s; keeps what was acknowledged."""

    def __init__(self, cluster: ZkafkaCluster, topic: str, partitions: int, rate: int = 400):
        super().__init__(daemon=True)
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.acked: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
        self.failed: list[str] = []
        self.producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                                  "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 120000})
        self._stopping = threading.Event()

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.acked.values())

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked[msg.partition()].append((msg.offset(), int(msg.value())))
        else:  # what, where and when: a failure here is read from CI's output alone
            self.failed.append(f"{time.strftime('%H:%M:%S')} partition {msg.partition()} value {int(msg.value())}: "
                               f"{err.name()} ({err.str()})")

    def run(self) -> None:
        i, start = 0, time.monotonic()
        while not self._stopping.is_set():
            if i < (time.monotonic() - start) * self.rate:
                self.producer.produce(self.topic, str(i).encode(), partition=i % self.partitions,
                                      on_delivery=self._delivered)
                i += 1
            self.producer.poll(0.002)

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)
        assert self.producer.flush(120) == 0, "records still undelivered two minutes after the fault"


def create_topic(cluster: ZkafkaCluster, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(60)
    wait_for(lambda: all(in_sync(cluster, topic, p, cluster.broker_ids) for p in range(partitions)), 60,
             f"{topic}: every partition with a full ISR")


def metadata_state(cluster: ZkafkaCluster, topic: str, partition: int, brokers: list[int] | None = None):
    for b in brokers or cluster.broker_ids:
        h = cluster.health(b)
        state = h and h["metadata"]["partitions"].get(f"{topic}-{partition}")
        if state:
            return state
    return None


def in_sync(cluster: ZkafkaCluster, topic: str, partition: int, replicas: list[int]) -> bool:
    """Every live broker's metadata shows exactly ``replicas`` in the ISR."""
    states = [(h or {}).get("metadata", {}).get("partitions", {}).get(f"{topic}-{partition}")
              for h in (cluster.health(b) for b in cluster.broker_ids) if h]
    return bool(states) and all(s and sorted(s["isr"]) == sorted(replicas) and s["leader"] >= 0 for s in states)


def read_all(cluster: ZkafkaCluster, topic: str, partitions: int) -> dict[int, list[tuple[int, int]]]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"verify-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        read: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + 120
        while any(read[p][-1][0] + 1 < ends[p] if read[p] else ends[p] > 0 for p in range(partitions)):
            assert time.monotonic() < deadline, "could not read the topic back to its high watermarks"
            for m in consumer.consume(1000, timeout=0.5):
                if m.error() is None:
                    read[m.partition()].append((m.offset(), int(m.value())))
        return read
    finally:
        consumer.close()


def assert_nothing_acknowledged_lost_and_in_order(load: LoadProducer, read: dict[int, list[tuple[int, int]]]) -> None:
    kinds = Counter(f.split(": ", 1)[1] for f in load.failed)
    partitions = Counter(int(f.split()[2]) for f in load.failed)
    assert not load.failed, (f"{len(load.failed)} deliveries failed: {dict(kinds)}, per partition {dict(partitions)}; "
                             f"first {load.failed[:3]}, last {load.failed[-1:]}")
    for p, acked in load.acked.items():
        stored, values_read = dict(read[p]), {v for _, v in read[p]}
        # librdkafka reports some deliveries without an offset: an idempotent batch it learned was
        # persisted because the broker accepted the next sequence (the retry's answer got lost)
        lost = [(o, v) for o, v in acked if (stored.get(o) != v if o is not None else v not in values_read)]
        assert not lost, f"partition {p}: {len(lost)} acknowledged records lost, first {lost[:3]}"
        values = [v for _, v in read[p]]
        assert values == sorted(values) and len(set(values)) == len(values), f"partition {p} out of order"


def leader_of(cluster: ZkafkaCluster, topic: str, partition: int, brokers: list[int] | None = None) -> int:
    state = metadata_state(cluster, topic, partition, brokers)
    return state["leader"] if state else -1


def test_killed_leader_under_acks_all_load_loses_nothing(make_container_cluster):
    cluster = make_container_cluster(properties=PROPERTIES)
    create_topic(cluster, "acks-all", 3)
    load = LoadProducer(cluster, "acks-all", 3)
    load.start()
    wait_for(lambda: load.count >= 500, 60, "the producer under way")
    victim = leader_of(cluster, "acks-all", 0)
    cluster.kill_broker(victim)
    survivors = [b for b in cluster.broker_ids if b != victim]
    wait_for(lambda: leader_of(cluster, "acks-all", 0, survivors) not in (-1, victim), SESSION_TIMEOUT_MS / 1000 + 30,
             "a new leader for the killed broker's partition")
    resumed_from = load.count
    wait_for(lambda: load.count >= resumed_from + 1000, 60, "the producer to resume")
    load.stop()
    assert_nothing_acknowledged_lost_and_in_order(load, read_all(cluster, "acks-all", 3))


def test_paused_controller_is_replaced_and_rejoins_fenced_as_a_plain_broker(make_container_cluster):
    cluster = make_container_cluster(properties=PROPERTIES)
    (old,) = cluster.controllers()
    old_epoch = cluster.health(old)["controller"]["epoch"]
    old_broker_epoch = cluster.health(old)["broker_epoch"]
    others = [b for b in cluster.broker_ids if b != old]
    cluster.pause_broker(old)  # frozen: no heartbeats, its ZooKeeper session expires
    wait_for(lambda: len(cluster.controllers(others)) == 1, SESSION_TIMEOUT_MS / 1000 + 30, "a new controller")
    (new,) = cluster.controllers(others)
    new_epoch = cluster.health(new)["controller"]["epoch"]
    assert new_epoch > old_epoch
    cluster.unpause_broker(old)
    wait_for(lambda: (h := cluster.health(old)) and h["broker_epoch"] > old_broker_epoch
             and not h["controller"]["is_controller"] and h["controller"]["resignations"] >= 1,
             60, f"broker {old} to notice its lost session, resign and register again")
    cluster.wait_until_ready()
    assert cluster.controllers() == {new}
    assert all(cluster.health(b)["controller_epoch_seen"] == new_epoch for b in cluster.broker_ids)
    create_topic(cluster, "after-pause", 3)  # the cluster works under its new controller


def test_partitioned_broker_leaves_the_isr_and_catches_up_after_healing(make_container_cluster):
    cluster = make_container_cluster(properties=PROPERTIES)
    create_topic(cluster, "partitioned", 3)
    (controller,) = cluster.controllers()
    victim = next(b for b in cluster.broker_ids if b != controller)
    others = [b for b in cluster.broker_ids if b != victim]
    load = LoadProducer(cluster, "partitioned", 3)
    load.start()
    wait_for(lambda: load.count >= 500, 60, "the producer under way")
    cluster.isolate_broker(victim)
    wait_for(lambda: all((s := metadata_state(cluster, "partitioned", p, others)) and victim not in s["isr"]
                         for p in range(3)), SESSION_TIMEOUT_MS / 1000 + 40, f"broker {victim} out of every ISR")
    shrunk_at = load.count
    wait_for(lambda: load.count >= shrunk_at + 1000, 60, "acks=all keeps working with 2 in sync (min.insync 2)")
    cluster.heal_broker(victim)
    wait_for(lambda: all(in_sync(cluster, "partitioned", p, cluster.broker_ids) for p in range(3)), 90,
             f"broker {victim} back in every ISR")
    load.stop()
    wait_for(lambda: all(caught_up(cluster, "partitioned", p) for p in range(3)), 60, "every replica caught up")
    assert_nothing_acknowledged_lost_and_in_order(load, read_all(cluster, "partitioned", 3))


def caught_up(cluster: ZkafkaCluster, topic: str, partition: int) -> bool:
    ends = {(cluster.partition_view(b, topic, partition) or {}).get("log_end_offset") for b in cluster.broker_ids}
    return len(ends) == 1 and None not in ends


def test_zookeeper_leader_killed_brokers_keep_their_sessions(make_container_cluster):
    cluster = make_container_cluster(properties=PROPERTIES)
    create_topic(cluster, "zk-leader", 3)
    epochs = {b: cluster.health(b)["broker_epoch"] for b in cluster.broker_ids}
    (controller,) = cluster.controllers()
    controller_epoch = cluster.health(controller)["controller"]["epoch"]
    load = LoadProducer(cluster, "zk-leader", 3)
    load.start()
    wait_for(lambda: load.count >= 500, 60, "the producer under way")
    zk_leader = cluster.zk_leader()
    cluster.kill_zookeeper(zk_leader)
    rest = [z for z in (1, 2, 3) if z != zk_leader]
    wait_for(lambda: sorted(cluster.zk_mode(z) or "" for z in rest) == ["follower", "leader"], 30,
             "the two remaining ZooKeepers to elect a leader")
    resumed_from = load.count
    wait_for(lambda: load.count >= resumed_from + 1000, 60, "the producer to carry on")
    load.stop()
    assert {b: cluster.health(b)["broker_epoch"] for b in cluster.broker_ids} == epochs, "a broker lost its session"
    controllers = cluster.controllers()
    assert len(controllers) == 1
    assert cluster.health(next(iter(controllers)))["controller"]["epoch"] <= controller_epoch + 1
    assert_nothing_acknowledged_lost_and_in_order(load, read_all(cluster, "zk-leader", 3))


class GroupMember(threading.Thread):
    def __init__(self, cluster: ZkafkaCluster, topic: str, group: str):
        super().__init__(daemon=True)
        self.values: list[int] = []
        self.assignment: set[int] = set()
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000})
        self.consumer.subscribe([topic], on_assign=lambda c, ps: self.assignment.update(p.partition for p in ps),
                                on_revoke=lambda c, ps: self.assignment.difference_update(p.partition for p in ps))
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.is_set():
            messages = [m for m in self.consumer.consume(500, timeout=0.2) if m.error() is None]
            if messages:
                self.values += [int(m.value()) for m in messages]
                try:
                    self.consumer.commit(asynchronous=False)
                except KafkaException:
                    pass  # a rebalance or a coordinator move: the records come again (at least once)

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)
        self.consumer.close()


def test_rolling_restart_with_a_consumer_group_loses_nothing(make_container_cluster):
    cluster = make_container_cluster(properties=PROPERTIES)
    create_topic(cluster, "rolling", 6)
    load = LoadProducer(cluster, "rolling", 6)
    member = GroupMember(cluster, "rolling", "rolling-group")
    load.start()
    member.start()
    wait_for(lambda: member.assignment == set(range(6)) and len(member.values) >= 300, 60, "the member consuming")
    for b in cluster.broker_ids:
        cluster.restart_broker(b)  # SIGTERM: controlled shutdown, then the same container starts again
        cluster.wait_until_ready()
        wait_for(lambda: all(in_sync(cluster, "rolling", p, cluster.broker_ids) for p in range(6)), 90,
                 f"every ISR full again after restarting broker {b}")
    load.stop()
    acked = {v for records in load.acked.values() for _, v in records}
    wait_for(lambda: acked <= set(member.values), 90, "the group to consume every acknowledged record")
    assert member.assignment == set(range(6)), "the group did not settle after the restarts"
    member.stop()
    assert_nothing_acknowledged_lost_and_in_order(load, read_all(cluster, "rolling", 6))
