"""``kafka-transactions``: Kafka's tables (tab-separated padded columns), its flag checks and messages, the
hanging-transaction decision, and each command's requests and output against a fake cluster answering
with the real response classes (the wire itself is covered by tests/integration/test_transactions_tool.py)."""
from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from scripts.tools.kafka_transactions import command, tables
from scripts.tools.kafka_transactions.admin import TransactionsAdmin, TransactionsAdminError
from scripts.tools.kafka_transactions.syntax import build_parser, problem
from scripts.tools.kafka_transactions.tables import (AbortSpec, OpenTransaction, ProducerState,
                                                     TransactionDescription, TransactionListing)

BOOT = ["--bootstrap-server", "localhost:9092"]
NOW = 10_000_000


def producer(pid=7, epoch=2, seq=4, ts=NOW - 1000, coord=3, start=100) -> ProducerState:
    return ProducerState(pid, epoch, seq, ts, coord, start)


# -- tables -------------------------------------------------------------------------------------------

def test_pretty_table_pads_every_column_to_its_widest_cell_and_ends_each_with_a_tab():
    assert tables.pretty_table(("A", "Bee"), [("long", "x"), ("s", "yyyy")]) == [
        "A   \tBee \t", "long\tx   \t", "s   \tyyyy\t"]


def test_list_table_rows_by_broker_id():
    lines = tables.list_table({2: [TransactionListing("t2", 9, "Ongoing")],
                               1: [TransactionListing("t1", 8, "CompleteCommit"), TransactionListing("t0", 1, "Empty")]})
    assert lines == ["TransactionalId\tCoordinator\tProducerId\tTransactionState\t",
                     "t1             \t1          \t8         \tCompleteCommit  \t",
                     "t0             \t1          \t1         \tEmpty           \t",
                     "t2             \t2          \t9         \tOngoing         \t"]


def test_describe_table_duration_from_the_start_time_and_none_without_one():
    d = TransactionDescription(1, "tx", 5, 0, "Ongoing", 60000, NOW - 250, (("a", 0), ("b", 1)))
    header, row = tables.describe_table(d, NOW)
    assert header.split("\t")[:-1] == list(tables.DESCRIBE_HEADERS)
    assert [c.strip() for c in row.split("\t")[:-1]] == ["1", "tx", "5", "0", "Ongoing", "60000", str(NOW - 250),
                                                         "250", "a-0,b-1"]
    empty = TransactionDescription(1, "tx", 5, 0, "Empty", 60000, None, ())
    assert [c.strip() for c in tables.describe_table(empty, NOW)[1].split("\t")[:-1]][6:] == ["None", "None", ""]


def test_producers_table_none_outside_a_transaction():
    lines = tables.producers_table([producer(start=100), producer(pid=8, coord=-1, start=-1)])
    assert lines[0] == ("ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\t"
                        "CurrentTransactionStartOffset\t")
    assert [c.strip() for c in lines[1].split("\t")[:-1]] == ["7", "2", "3", "4", str(NOW - 1000), "100"]
    assert [c.strip() for c in lines[2].split("\t")[:-1]] == ["8", "2", "-1", "4", str(NOW - 1000), "None"]


def test_hanging_table_duration_in_whole_minutes():
    lines = tables.hanging_table([OpenTransaction(("t", 3), producer(ts=NOW - 125_000))], NOW)
    assert lines[0].split("\t")[:-1] == list(tables.HANGING_HEADERS)
    assert [c.strip() for c in lines[1].split("\t")[:-1]] == ["t", "3", "7", "2", "3", "100", str(NOW - 125_000), "2"]


# -- decisions ------------------------------------------------------------------------------------------

def test_candidates_are_open_transactions_older_than_the_timeout():
    old, recent, closed = producer(pid=1, ts=NOW - 61_000), producer(pid=2, ts=NOW - 59_000), producer(
        pid=3, ts=NOW - 600_000, start=-1)
    found = tables.candidate_open_transactions({("t", 0): [old, recent, closed]}, NOW, 60_000)
    assert found == [OpenTransaction(("t", 0), old)]


def test_hanging_unless_the_coordinator_still_holds_that_partition():
    tp, other = ("t", 0), ("t", 1)
    unknown_pid = OpenTransaction(tp, producer(pid=1))
    not_found = OpenTransaction(tp, producer(pid=2))
    other_partition = OpenTransaction(tp, producer(pid=3))
    live = OpenTransaction(tp, producer(pid=4))
    described = {"gone": None,
                 "moved": TransactionDescription(1, "moved", 3, 0, "Ongoing", 1, 1, (other,)),
                 "live": TransactionDescription(1, "live", 4, 0, "PrepareAbort", 1, 1, (tp,))}
    hanging = tables.hanging_transactions([unknown_pid, not_found, other_partition, live],
                                          {2: "gone", 3: "moved", 4: "live"}, described)
    assert hanging == [unknown_pid, not_found, other_partition]


def test_abort_spec_by_start_offset_and_the_unknown_coordinator_epoch_as_zero():
    tp = ("t", 0)
    assert tables.abort_spec_at(tp, [producer(pid=1, start=5), producer(pid=2, start=9, coord=-1)], 9) == \
        AbortSpec(tp, 2, 2, 0)
    assert tables.abort_spec_at(tp, [producer(start=5)], 6) is None
    assert tables.abort_spec_given(tp, 4, 1, -1) == AbortSpec(tp, 4, 1, 0)
    assert str(AbortSpec(tp, 4, 1, 2)) == ("AbortTransactionSpec(topicPartition=t-0, producerId=4, producerEpoch=1, "
                                           "coordinatorEpoch=2)")


# -- flags ----------------------------------------------------------------------------------------------

def parse(argv):
    return build_parser().parse_args([*BOOT, *argv])


@pytest.mark.parametrize("argv, message", [
    (["abort", "--topic", "t", "--partition", "0"], "must be identified either with --start-offset"),
    (["abort", "--topic", "t", "--partition", "0", "--producer-id", "1", "--coordinator-epoch", "0"],
     "Missing required argument --producer-epoch"),
    (["abort", "--topic", "t", "--partition", "0", "--producer-id", "1", "--producer-epoch", "0"],
     "Missing required argument --coordinator-epoch"),
    (["find-hanging"], "requires either --topic or --broker-id"),
    (["find-hanging", "--broker-id", "1", "--partition", "0"], "The --partition argument requires --topic"),
])
def test_kafkas_checks_after_parsing(argv, message, capsys):
    assert message in problem(parse(argv))
    assert command.main([*BOOT, *argv]) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["abort", "--topic", "t", "--partition", "0", "--start-offset", "5"],
    ["abort", "--topic", "t", "--partition", "0", "--producer-id", "1", "--producer-epoch", "0",
     "--coordinator-epoch", "-1"],
    ["find-hanging", "--broker-id", "1"], ["find-hanging", "--topic", "t", "--partition", "2"],
    ["list"], ["describe", "--transactional-id", "x"],
    ["describe-producers", "--topic", "t", "--partition", "0", "--broker-id", "2"],
])
def test_accepted_flags(argv):
    assert problem(parse(argv)) is None


def test_find_hanging_timeout_defaults_to_15_minutes():
    assert parse(["find-hanging", "--broker-id", "1"]).max_transaction_timeout == 15


@pytest.mark.parametrize("argv, flag", [
    (["describe"], "--transactional-id"), (["describe-producers", "--topic", "t"], "--partition"),
    (["abort", "--partition", "0", "--start-offset", "1"], "--topic"), ([], "COMMAND"),
    (["list", "--command-config", "/nonexistent.properties"], None),
])
def test_bad_flags_exit_2(argv, flag, capsys):
    with pytest.raises(SystemExit) as info:
        command.main([*BOOT, *argv] if flag else [*BOOT, "--command-config", "/nonexistent.properties", "list"])
    assert info.value.code == 2
    assert (flag or "--command-config") in capsys.readouterr().err


# -- commands against a fake cluster ------------------------------------------------------------------------

def response(api_key: ApiKey, **fields):
    return codec.build(codec.response_class(api_key, 0 if api_key != ApiKey.WRITE_TXN_MARKERS else 1),
                       throttle_time=timedelta(0), **fields)


class FakeCluster:
    """Brokers 1 and 2; topic t: partition 0 led by 1 (replicas 1, 2), partition 1 led by 2 (replicas 2)."""

    def __init__(self):
        self.sent: list[tuple[int, ApiKey, object]] = []
        self.answers: dict[tuple[int, ApiKey], object] = {}
        self.coordinator = (ErrorCode.NONE, 2)

    async def metadata(self, topics):
        parts = [SimpleNamespace(partition_index=0, leader_id=1, replica_nodes=[1, 2]),
                 SimpleNamespace(partition_index=1, leader_id=2, replica_nodes=[2])]
        known = [SimpleNamespace(name="t", error_code=0, partitions=parts)]
        return SimpleNamespace(brokers=[SimpleNamespace(node_id=2), SimpleNamespace(node_id=1)],
                               topics=known if topics is None or topics == ["t"] else [])

    async def broker_ids(self):
        return sorted(b.node_id for b in (await self.metadata([])).brokers)

    async def find_coordinator(self, key, key_type):
        assert key_type == 1
        return self.coordinator

    async def request_broker(self, broker_id, api_key, version, body):
        self.sent.append((broker_id, ApiKey(api_key), body))
        return self.answers[(broker_id, ApiKey(api_key))]


def run(cluster: FakeCluster, argv: list[str], capsys) -> tuple[int, list[str], str]:
    args = parse(argv)
    admin = TransactionsAdmin(cluster, retry_deadline_s=0.5)
    try:
        lines = asyncio.run(command.COMMANDS[args.command](admin, args))
        code = 0
    except command.CommandFailed as exc:
        lines, code = [str(exc)], 1
    return code, lines, capsys.readouterr().err


def listing(*states):
    return response(ApiKey.LIST_TRANSACTIONS, error_code=0, unknown_state_filters=[], transaction_states=[
        {"transactional_id": t, "producer_id": p, "transaction_state": s} for t, p, s in states])


def producers_answer(partition: int, *states: ProducerState, error: ErrorCode = ErrorCode.NONE):
    return response(ApiKey.DESCRIBE_PRODUCERS, topics=[{"name": "t", "partitions": [{
        "partition_index": partition, "error_code": error, "error_message": None, "active_producers": [
            {"producer_id": s.producer_id, "producer_epoch": s.producer_epoch, "last_sequence": s.last_sequence,
             "last_timestamp": s.last_timestamp, "coordinator_epoch": s.coordinator_epoch,
             "current_txn_start_offset": s.current_txn_start_offset} for s in states]}]}])


def description(tid: str, pid: int, state: str = "Ongoing", partitions=(("t", 0),), error=ErrorCode.NONE,
                start_ms: int = 1_700_000_000_000):
    return response(ApiKey.DESCRIBE_TRANSACTIONS, transaction_states=[{
        "error_code": error, "transactional_id": tid, "transaction_state": state,
        "transaction_timeout": timedelta(milliseconds=60000),
        "transaction_start_time": start_ms if start_ms < 0 else datetime.fromtimestamp(start_ms / 1000, timezone.utc),
        "producer_id": pid, "producer_epoch": 1,
        "topics": [{"topic": t, "partitions": [p]} for t, p in partitions]}])


def test_list_asks_every_broker(capsys):
    cluster = FakeCluster()
    cluster.answers[(1, ApiKey.LIST_TRANSACTIONS)] = listing(("a", 4, "Ongoing"))
    cluster.answers[(2, ApiKey.LIST_TRANSACTIONS)] = listing(("b", 5, "CompleteAbort"))
    code, lines, _ = run(cluster, ["list"], capsys)
    assert code == 0 and [line.split() for line in lines[1:]] == [["a", "1", "4", "Ongoing"],
                                                                   ["b", "2", "5", "CompleteAbort"]]
    assert sorted(b for b, _, _ in cluster.sent) == [1, 2]


def test_describe_goes_to_the_transactional_ids_coordinator(capsys):
    cluster = FakeCluster()
    cluster.answers[(2, ApiKey.DESCRIBE_TRANSACTIONS)] = description("tx", 11, partitions=(("t", 1), ("t", 0)))
    code, lines, _ = run(cluster, ["describe", "--transactional-id", "tx"], capsys)
    cells = lines[1].split()
    assert code == 0 and cells[:7] == ["2", "tx", "11", "1", "Ongoing", "60000", "1700000000000"]
    assert cells[-1] == "t-0,t-1"
    assert list(cluster.sent[0][2].transactional_ids) == ["tx"]


def test_describe_a_missing_id_is_kafkas_error_line(capsys):
    cluster = FakeCluster()
    cluster.answers[(2, ApiKey.DESCRIBE_TRANSACTIONS)] = description(
        "tx", -1, "", partitions=(), error=ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    code, lines, _ = run(cluster, ["describe", "--transactional-id", "tx"], capsys)
    assert code == 1 and lines == ["Failed to describe transaction state of transactional-id `tx`: The "
                                   "transactionalId could not be found. Enable debug logging for additional detail."]


def test_describe_producers_from_the_leader_or_the_named_replica(capsys):
    cluster = FakeCluster()
    cluster.answers[(1, ApiKey.DESCRIBE_PRODUCERS)] = producers_answer(0, producer())
    cluster.answers[(2, ApiKey.DESCRIBE_PRODUCERS)] = producers_answer(0, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    code, lines, _ = run(cluster, ["describe-producers", "--topic", "t", "--partition", "0"], capsys)
    assert code == 0 and lines[1].split() == ["7", "2", "3", "4", str(NOW - 1000), "100"]
    code, lines, _ = run(cluster, ["describe-producers", "--topic", "t", "--partition", "0", "--broker-id", "2"],
                         capsys)
    assert code == 1 and lines[0].startswith("Failed to describe producers for partition t-0 on broker 2: ")


def test_abort_by_start_offset_writes_an_abort_marker_on_the_leader(capsys):
    cluster = FakeCluster()
    cluster.answers[(1, ApiKey.DESCRIBE_PRODUCERS)] = producers_answer(0, producer(pid=9, epoch=3, coord=-1, start=40))
    cluster.answers[(1, ApiKey.WRITE_TXN_MARKERS)] = response(ApiKey.WRITE_TXN_MARKERS, markers=[{
        "producer_id": 9, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 0}]}]}])
    code, lines, _ = run(cluster, ["abort", "--topic", "t", "--partition", "0", "--start-offset", "40"], capsys)
    assert code == 0 and lines == []
    broker, api, body = cluster.sent[-1]
    marker = body.markers[0]
    assert (broker, api) == (1, ApiKey.WRITE_TXN_MARKERS)
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result, marker.coordinator_epoch) == (
        9, 3, False, 0)
    assert [(t.name, list(t.partition_indexes)) for t in marker.topics] == [("t", [0])]


def test_abort_refused_and_abort_of_nothing(capsys):
    cluster = FakeCluster()
    cluster.answers[(1, ApiKey.DESCRIBE_PRODUCERS)] = producers_answer(0, producer(start=40))
    code, lines, _ = run(cluster, ["abort", "--topic", "t", "--partition", "0", "--start-offset", "41"], capsys)
    assert code == 1 and lines == ["Could not find any open transactions starting at offset 41 on partition t-0"]
    cluster.answers[(1, ApiKey.WRITE_TXN_MARKERS)] = response(ApiKey.WRITE_TXN_MARKERS, markers=[{
        "producer_id": 5, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 31}]}]}])
    code, lines, _ = run(cluster, ["abort", "--topic", "t", "--partition", "0", "--producer-id", "5",
                                   "--producer-epoch", "1", "--coordinator-epoch", "4"], capsys)
    assert code == 1 and lines == ["Failed to abort transaction AbortTransactionSpec(topicPartition=t-0, producerId=5, "
                                   "producerEpoch=1, coordinatorEpoch=4): Cluster authorization failed.. Enable debug "
                                   "logging for additional detail."]


def test_find_hanging_on_a_broker_lists_what_no_coordinator_holds(capsys, monkeypatch):
    monkeypatch.setattr(command, "_now_ms", lambda: NOW)
    cluster = FakeCluster()
    stale = 16 * 60_000
    # broker 2 holds replicas of t-0 and t-1
    cluster.answers[(2, ApiKey.DESCRIBE_PRODUCERS)] = response(ApiKey.DESCRIBE_PRODUCERS, topics=[{
        "name": "t", "partitions": [
            {"partition_index": 0, "error_code": 0, "error_message": None, "active_producers": [
                {"producer_id": 1, "producer_epoch": 0, "last_sequence": 0, "last_timestamp": NOW - stale,
                 "coordinator_epoch": -1, "current_txn_start_offset": 10},
                {"producer_id": 2, "producer_epoch": 0, "last_sequence": 0, "last_timestamp": NOW - stale,
                 "coordinator_epoch": 0, "current_txn_start_offset": 12}]},
            {"partition_index": 1, "error_code": 0, "error_message": None, "active_producers": [
                {"producer_id": 3, "producer_epoch": 0, "last_sequence": 0, "last_timestamp": NOW - 1000,
                 "coordinator_epoch": 0, "current_txn_start_offset": 0}]}]}])
    cluster.answers[(1, ApiKey.LIST_TRANSACTIONS)] = listing(("live", 2, "Ongoing"))
    cluster.answers[(2, ApiKey.LIST_TRANSACTIONS)] = listing()
    cluster.answers[(2, ApiKey.DESCRIBE_TRANSACTIONS)] = description("live", 2, partitions=(("t", 0),))
    code, lines, _ = run(cluster, ["find-hanging", "--broker-id", "2"], capsys)
    assert code == 0 and [line.split() for line in lines[1:]] == [
        ["t", "0", "1", "0", "-1", "10", str(NOW - stale), "16"]]
    described = [body for b, api, body in cluster.sent if api == ApiKey.DESCRIBE_PRODUCERS]
    assert [(t.name, sorted(t.partition_indexes)) for t in described[0].topics] == [("t", [0, 1])]
    listed = [body for b, api, body in cluster.sent if api == ApiKey.LIST_TRANSACTIONS]
    assert all(sorted(body.producer_id_filters) == [1, 2] for body in listed)


def test_find_hanging_with_nothing_open_prints_the_header(capsys):
    cluster = FakeCluster()
    cluster.answers[(1, ApiKey.DESCRIBE_PRODUCERS)] = producers_answer(0)
    code, lines, _ = run(cluster, ["find-hanging", "--topic", "t", "--partition", "0"], capsys)
    assert code == 0 and lines == tables.pretty_table(tables.HANGING_HEADERS, [])


def test_describe_retries_while_the_coordinator_loads(capsys):
    cluster = FakeCluster()
    cluster.coordinator = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1)
    with pytest.raises(TransactionsAdminError, match="COORDINATOR_LOAD_IN_PROGRESS"):
        asyncio.run(TransactionsAdmin(cluster, retry_deadline_s=0.3).describe_transaction("tx"))


class Answers:
    """Each call answers the next of ``answers`` (the last one again once they run out)."""

    def __init__(self, *answers):
        self.answers = list(answers)

    def next(self):
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_list_asks_a_loading_coordinator_again_and_fails_on_one_shutting_down(capsys):
    loading = response(ApiKey.LIST_TRANSACTIONS, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                       unknown_state_filters=[], transaction_states=[])
    cluster = FakeCluster()
    answers = Answers(loading, listing(("a", 4, "Ongoing")))
    cluster.answers[(2, ApiKey.LIST_TRANSACTIONS)] = listing()

    async def request_broker(broker_id, api_key, version, body):
        cluster.sent.append((broker_id, ApiKey(api_key), body))
        return answers.next() if broker_id == 1 else cluster.answers[(broker_id, ApiKey(api_key))]
    cluster.request_broker = request_broker
    code, lines, _ = run(cluster, ["list"], capsys)
    assert code == 0 and [line.split() for line in lines[1:]] == [["a", "1", "4", "Ongoing"]]
    assert [b for b, _, _ in cluster.sent].count(1) == 2

    cluster.answers[(2, ApiKey.LIST_TRANSACTIONS)] = response(
        ApiKey.LIST_TRANSACTIONS, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, unknown_state_filters=[],
        transaction_states=[])
    answers = Answers(listing())
    code, lines, _ = run(cluster, ["list"], capsys)
    assert code == 1 and lines == ["Failed to list transactions: ListTransactions request sent to broker 2 failed "
                                   "because the coordinator is shutting down. Enable debug logging for additional "
                                   "detail."]


def test_an_unreachable_cluster_is_kafkas_error_line(capsys):
    assert command.main(["--bootstrap-server", "127.0.0.1:1", "list"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Failed to list transactions: no broker answered") and "Traceback" not in err
    assert err.rstrip().endswith("Enable debug logging for additional detail.")


def test_describe_an_id_without_a_transaction_shows_none_through_the_wire(capsys):
    """Kafka's -1 start time survives the codec (kio alone refuses negative timestamps)."""
    answer = description("idle", 3, "Empty", partitions=(), start_ms=-1)
    frame = codec.encode_response(ApiKey.DESCRIBE_TRANSACTIONS, 0, 1, answer)
    _, decoded = codec.decode_response(ApiKey.DESCRIBE_TRANSACTIONS, 0, frame[4:])
    cluster = FakeCluster()
    cluster.answers[(2, ApiKey.DESCRIBE_TRANSACTIONS)] = decoded
    code, lines, _ = run(cluster, ["describe", "--transactional-id", "idle"], capsys)
    assert code == 0 and lines[1].split("\t")[4:8] == ["Empty           ", "60000               ",
                                                       "None                         ", "None                 "]
