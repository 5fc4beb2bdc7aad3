"""A consumer group survives its coordinator's death without a rebalance (Kafka's consumer_test: "no
unexpected rebalances on a broker failure"): the coordinator stores the group's metadata record in
``/consumers/<group>/metadata`` after each completed rebalance, and the broker elected next for the group's
``__consumer_offsets`` partition loads it, so the members carry on with the same member ids and generation.
Also: a deposed coordinator's record write is fenced by the znode version once its successor loaded the record
(real ZooKeeper)."""
from __future__ import annotations

import asyncio
import json
import signal
import threading

import pytest
import requests
from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.zk.client import KafkaZkClient
from brokers.zk.gateway import ZkGateway
from consumer_group.coordinator.group_record import GroupMetadataFenced
from consumer_group.coordinator.offset_store import ZkOffsetStore
from consumer_group.coordinator.placement import partition_for
from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for
from tests.integration.znodes import committed_offset, connected_zk

PARTITIONS = 6
OFFSETS_PARTITIONS = 6
SESSION_MS = 15000  # longer than the coordinator's outage: librdkafka drops its assignment after a session
TOPIC, GROUP = "failover", "g-failover"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("failover") / "cluster", 3, tick_time=500, session_timeout_ms=4000,
                         properties={"group.initial.rebalance.delay.ms": "0", "replica.fetch.backoff.ms": "200",
                                     "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                                     "offsets.topic.replication.factor": "3"}) as c:
        yield c


class Member:
    """A confluent-kafka group member consuming on its own thread, committing synchronously after each batch;
    it records every assignment callback, the commits' outcomes and its member id."""

    def __init__(self, cluster: Cluster, name: str):
        self.name = name
        self.rebalances: list[tuple[str, set[int]]] = []  # ("assign" | "revoke", partitions)
        self.values: list[int] = []
        self.commits_ok = 0
        self.commit_errors: list[str] = []
        self.member_id = ""
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP, "client.id": name,
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500,
                                  "fetch.wait.max.ms": 50})
        self.consumer.subscribe([TOPIC], on_assign=lambda c, ps: self._event("assign", ps),
                                on_revoke=lambda c, ps: self._event("revoke", ps))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _event(self, kind: str, partitions) -> None:
        self.rebalances.append((kind, {p.partition for p in partitions}))
        self.member_id = self.consumer.memberid() or ""

    @property
    def assigned(self) -> set[int]:
        owned: set[int] = set()
        for kind, partitions in self.rebalances:
            owned = owned | partitions if kind == "assign" else owned - partitions
        return owned

    def _run(self) -> None:
        while not self._stop.is_set():
            good = [m for m in self.consumer.consume(500, timeout=0.2) if m.error() is None]
            if good:
                self.values += [int(m.value()) for m in good]
                try:
                    self.consumer.commit(asynchronous=False)
                    self.commits_ok += 1
                except KafkaException as exc:
                    self.commit_errors.append(str(exc))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.consumer.close()


def produce(cluster: Cluster, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(60) == 0


def coordinator_of(cluster: Cluster, alive: list[int]) -> int:
    """The leader of the group's __consumer_offsets partition in a live broker's metadata cache (-1: none)."""
    name = f"__consumer_offsets-{partition_for(GROUP, OFFSETS_PARTITIONS)}"
    for broker in alive:
        state = ((cluster.health(broker) or {}).get("metadata", {}).get("partitions", {}).get(name))
        if state and state["leader"] in alive:
            return state["leader"]
    return -1


def described(admin: AdminClient):
    """DescribeGroups through the coordinator: (state, member ids, coordinator id), None when it fails."""
    try:
        group = admin.describe_consumer_groups([GROUP], request_timeout=5)[GROUP].result(10)
    except KafkaException:
        return None
    return group.state, sorted(m.member_id for m in group.members), group.coordinator.id


def coordinator_view(cluster: Cluster, broker: int) -> tuple[str, int, list[str]]:
    """The group as the coordinator holds it in memory (its HTTP admin API): state, generation, member ids."""
    response = requests.get(cluster.http_url(broker, "/api/v1/local/groups"), timeout=10)
    response.raise_for_status()
    group = next(g for g in response.json() if g["group_id"] == GROUP)
    return group["state"], group["generation"], sorted(m["member_id"] for m in group["members"])


def loaded(cluster: Cluster, broker: int) -> bool:
    try:
        coordinator_view(cluster, broker)
        return True
    except (requests.RequestException, StopIteration):
        return False


def stored_record(zk) -> dict:
    return json.loads(zk.get(f"/consumers/{GROUP}/metadata")[0])


def committed(zk) -> dict[int, int]:
    return {p: committed_offset(zk, GROUP, TOPIC, p) or 0 for p in range(PARTITIONS)}


def test_killing_the_coordinator_does_not_rebalance_the_group(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive its futures
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)
    produce(cluster, 0, 1200)
    members = [Member(cluster, "a"), Member(cluster, "b")]
    try:
        with connected_zk(cluster) as zk:
            wait_for(lambda: all(m.assigned for m in members) and sorted(
                p for m in members for p in m.assigned) == list(range(PARTITIONS)), 30, "two members sharing")
            wait_for(lambda: len(set(members[0].values + members[1].values)) == 1200, 30, "the first 1200 records")
            wait_for(lambda: sum(committed(zk).values()) == 1200, 30, "their offsets committed")
            before = described(admin)
            assert before is not None and before[0] is ConsumerGroupState.STABLE
            assert before[1] == sorted(m.member_id for m in members)
            record = stored_record(zk)
            assert sorted(m["memberId"] for m in record["members"]) == before[1]
            in_memory = coordinator_view(cluster, before[2])
            assert in_memory == ("Stable", record["generation"], before[1])
            settled = [list(m.rebalances) for m in members]
            committed_before = committed(zk)

            old = before[2]
            assert old == coordinator_of(cluster, cluster.broker_ids)
            cluster.signal_broker(old, signal.SIGKILL)
            alive = [b for b in cluster.broker_ids if b != old]
            wait_for(lambda: coordinator_of(cluster, alive) != -1, 30, "a new coordinator")
            new = coordinator_of(cluster, alive)
            wait_for(lambda: loaded(cluster, new), 30, "the new coordinator to load the group")
            wait_for(lambda: (described(admin) or (None, None, -1))[2] == new, 30, "the new coordinator to serve")

            after = described(admin)
            assert after[:2] == before[:2], "the new coordinator does not know the group as it was"
            assert coordinator_view(cluster, new) == in_memory  # same state, generation and member ids
            commits_at_failover = [m.commits_ok for m in members]
            produce(cluster, 1200, 1200)
            wait_for(lambda: len(set(members[0].values + members[1].values)) == 2400, 45, "the next 1200 records")
            wait_for(lambda: sum(committed(zk).values()) == 2400, 30, "their offsets committed")
            assert all(m.commits_ok > n for m, n in zip(members, commits_at_failover)), "commits stopped succeeding"
            assert [m.rebalances for m in members] == settled, "the members went through a rebalance"
            assert stored_record(zk)["generation"] == record["generation"]
            assert described(admin)[:2] == before[:2] and coordinator_view(cluster, new) == in_memory
            final = committed(zk)
            assert all(final[p] >= committed_before[p] for p in range(PARTITIONS)), (committed_before, final)
    finally:
        for m in members:
            m.close()


def test_a_deposed_coordinators_record_write_is_fenced(cluster):
    async def main() -> None:
        gateways = [ZkGateway(cluster.zookeeper_connect, session_timeout_ms=4000) for _ in range(2)]
        for gateway in gateways:
            await gateway.start()
        try:
            old, new = (ZkOffsetStore(KafkaZkClient(g)) for g in gateways)
            record = {"protocolType": "consumer", "generation": 1, "protocol": None, "leader": None,
                      "currentStateTimestamp": 1, "members": []}
            await old.store_group("g-fenced", record)
            assert (await new.load_group_metadata(["g-fenced"]))["g-fenced"]["generation"] == 1  # claims it
            with pytest.raises(GroupMetadataFenced):  # though the successor has not changed the record
                await old.store_group("g-fenced", {**record, "generation": 2})
            with pytest.raises(GroupMetadataFenced):  # and stays fenced
                await old.store_group("g-fenced", {**record, "generation": 2})
            await new.store_group("g-fenced", {**record, "generation": 3})
            assert (await old.load_group_metadata(["g-fenced"]))["g-fenced"]["generation"] == 3  # elected again
            with pytest.raises(GroupMetadataFenced):
                await new.store_group("g-fenced", {**record, "generation": 4})
            await old.store_group("g-fenced", {**record, "generation": 5})
            assert (await new.load_group_metadata(["g-fenced"]))["g-fenced"]["generation"] == 5
            await new.delete_group("g-fenced")
        finally:
            for gateway in gateways:
                await gateway.close()

    asyncio.run(main())
