"""The workloads' pure parts: pacing, value ranges, error classification, op values, argument parsing, the
plan's processes; and a restarted history file going on where its killed writer stopped."""
from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from confluent_kafka import TopicPartition, KafkaError

from scripts.soak.history import FAIL, INFO, OK, HistoryWriter, read_file
from scripts.soak.workloads import __main__ as dispatch
from scripts.soak.workloads import copier, group, producer, reader
from scripts.soak.workloads.common import (
    VALUE_RANGE, Pacer, commit_completion, decode_value, encode_value, history_path, partition_of, send_completion,
    value_of)
from scripts.soak.workloads.launcher import VALUE_RANGE as PLAN_RANGE, WorkloadPlan, command_line, plan_processes

@dataclass
class Result:
    """A commit's per-partition result as confluent-kafka returns it (TopicPartition's error is read-only)."""
    topic: str
    partition: int
    offset: int
    error: KafkaError | None = None


COMMON = ["--bootstrap", "b:9092", "--history-dir", "/tmp/h", "--process", "x-0"]


class TestPacer:
    def test_the_nth_record_is_due_at_n_over_rate(self):
        pacer = Pacer(100)
        assert pacer.due(0) == 1
        assert pacer.due(0.0099) == 1
        assert pacer.due(0.01) == 2
        assert pacer.due(1.0) == 101
        assert pacer.due(-1) == 0

    def test_a_stall_is_caught_up_not_lost(self):
        assert Pacer(500).due(2.0) == 1001

    def test_wait_until_the_next_record_is_due_capped(self):
        pacer = Pacer(10)
        assert pacer.wait_s(sent=1, elapsed_s=0.0) == pytest.approx(0.05)  # capped
        assert pacer.wait_s(sent=1, elapsed_s=0.08) == pytest.approx(0.02)
        assert pacer.wait_s(sent=1, elapsed_s=0.5) == 0.0


class TestValues:
    def test_consecutive_values_from_the_base(self):
        assert [value_of(5 * VALUE_RANGE, n) for n in range(3)] == [5 * VALUE_RANGE + n for n in range(3)]

    def test_a_value_outside_the_range_is_refused(self):
        with pytest.raises(ValueError):
            value_of(0, VALUE_RANGE)
        with pytest.raises(ValueError):
            value_of(0, -1)

    def test_round_robin(self):
        assert [partition_of(n, 3) for n in range(7)] == [0, 1, 2, 0, 1, 2, 0]

    def test_wire_format(self):
        assert decode_value(encode_value(1_000_000_017)) == 1_000_000_017
        assert decode_value(b"junk") is None and decode_value(None) is None


class TestClassification:
    @pytest.mark.parametrize("name", ["_MSG_TIMED_OUT", "REQUEST_TIMED_OUT", "NOT_LEADER_FOR_PARTITION",
                                      "OUT_OF_ORDER_SEQUENCE_NUMBER", "_FATAL", "UNKNOWN_TOPIC_OR_PART",
                                      "_PURGE_INFLIGHT", "_PURGE_QUEUE"])
    def test_a_delivery_error_is_indefinite(self, name):
        assert send_completion(name, at_produce=False) == INFO

    @pytest.mark.parametrize("name", ["MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "TOPIC_AUTHORIZATION_FAILED"])
    def test_a_definite_delivery_error_fails(self, name):
        assert send_completion(name, at_produce=False) == FAIL

    def test_refused_by_produce_fails(self):
        assert send_completion("UNKNOWN_TOPIC_OR_PART", at_produce=True) == FAIL
        assert send_completion("_FATAL", at_produce=True) == FAIL

    @pytest.mark.parametrize("name,type_", [("ILLEGAL_GENERATION", FAIL), ("UNKNOWN_MEMBER_ID", FAIL),
                                            ("REBALANCE_IN_PROGRESS", FAIL), ("REQUEST_TIMED_OUT", INFO),
                                            ("_TIMED_OUT", INFO), ("COORDINATOR_NOT_AVAILABLE", INFO)])
    def test_commit_errors(self, name, type_):
        assert commit_completion(name) == type_

    def test_commit_outcome_ok_when_every_partition_committed(self):
        assert group.commit_outcome([TopicPartition("t", 0, 5), TopicPartition("t", 1, 7)]) == \
            (OK, {"t/0": 5, "t/1": 7}, None)

    def test_commit_outcome_fails_only_when_every_failure_is_definite(self):
        failed = Result("t", 0, 5, KafkaError(KafkaError.ILLEGAL_GENERATION))
        timed_out = Result("t", 1, 7, KafkaError(KafkaError.REQUEST_TIMED_OUT))
        assert group.commit_outcome([failed])[0::2] == (FAIL, "ILLEGAL_GENERATION")
        assert group.commit_outcome([failed, timed_out])[0] == INFO


class TestOpValues:
    def test_next_offsets_are_one_past_the_highest_read(self):
        assert group.next_offsets({"t/0": [[3, 10], [4, 11]], "t/1": [[9, 12]], "t/2": []}) == {"t/0": 5, "t/1": 10}

    def test_txn_value_invoked_and_completed(self):
        read = [[7, 100], [8, 101]]
        assert copier.txn_value(read, "in/1", "out/1") == \
            [["poll", {"in/1": read}], ["send", "out/1", 100], ["send", "out/1", 101]]
        assert copier.txn_value(read, "in/1", "out/1", {100: 40}) == \
            [["poll", {"in/1": read}], ["send", "out/1", [40, 100]], ["send", "out/1", [None, 101]]]

    def test_only_a_commit_call_leaves_the_outcome_unknown(self):
        assert copier.failure_type(committing=False) == FAIL
        assert copier.failure_type(committing=True) == INFO

    def test_polled_keeps_soak_values_in_order_and_drops_errors(self):
        class Message:
            def __init__(self, partition, offset, value, error=None):
                self._p, self._o, self._v, self._e = partition, offset, value, error

            def error(self): return self._e
            def topic(self): return "t"
            def partition(self): return self._p
            def offset(self): return self._o
            def value(self): return self._v

        messages = [Message(0, 4, b"17"), Message(1, 0, b"18"), Message(0, 5, b"19"),
                    Message(0, 6, None, KafkaError(KafkaError._PARTITION_EOF)), Message(1, 1, b"not-a-value")]
        assert reader.polled(messages, "r") == {"t/0": [[4, 17], [5, 19]], "t/1": [[0, 18]]}


class TestArguments:
    def test_producer_flags(self):
        args = producer.parser().parse_args(COMMON + ["--topic", "soak", "--partitions", "6", "--rate", "250",
                                                      "--value-base", "2000000000", "--acks", "1",
                                                      "--idempotence", "false"])
        conf = producer.producer_config(args)
        assert (conf["acks"], conf["enable.idempotence"], conf["linger.ms"], conf["message.timeout.ms"]) == \
            ("1", False, 5, 120000)
        assert "debug" not in conf
        idempotent = producer.parser().parse_args(COMMON + ["--topic", "soak", "--partitions", "6", "--rate", "250",
                                                            "--value-base", "0"])
        assert producer.producer_config(idempotent)["debug"] == "eos"  # its bumps and sequence errors are logged
        assert (args.rate, args.value_base, args.flush_timeout_s, args.after_crash) == (250.0, 2 * 10**9, 30.0, None)

    def test_reader_and_group_take_topic_lists(self):
        assert reader.parser().parse_args(COMMON + ["--topics", "a,b"]).topics == ["a", "b"]
        args = group.parser().parse_args(COMMON + ["--topics", "a", "--group", "g"])
        assert (args.topics, args.group, args.isolation) == (["a"], "g", "read_committed")

    def test_copier_defaults(self):
        args = copier.parser().parse_args(COMMON + ["--input-topic", "i", "--output-topic", "o", "--partition", "1",
                                                    "--group", "g", "--transactional-id", "t", "--after-crash", "4"])
        assert (args.abort_probability, args.max_txn_records, args.after_crash) == (0.1, 100, 4)

    def test_a_missing_flag_is_an_error(self):
        with pytest.raises(SystemExit):
            producer.parser().parse_args(COMMON + ["--topic", "soak"])

    def test_an_unknown_kind_is_refused(self):
        assert dispatch.main(["consumer"]) == 64 and dispatch.main([]) == 64


class TestPlan:
    def test_processes_of_the_default_plan(self):
        procs = {name: (kind, flags) for name, kind, flags in plan_processes(WorkloadPlan())}
        assert sorted(procs) == ["copier-0", "copier-1", "group-0", "group-1", "producer-0", "producer-1",
                                 "reader-0", "txn-producer-0"]
        assert _flag(procs["reader-0"][1], "--topics") == "soak,txn-in,txn-out"
        assert _flag(procs["group-1"][1], "--group") == "soak-group"
        assert [_flag(procs["copier-1"][1], f) for f in ("--transactional-id", "--group", "--partition")] == \
            ["soak-copier-1", "soak-copier-1", "1"]
        assert [_flag(procs[p][1], "--rate") for p in ("producer-0", "producer-1", "txn-producer-0")] == \
            ["250", "250", "100"]
        assert _flag(procs["txn-producer-0"][1], "--topic") == "txn-in"

    def test_value_ranges_are_disjoint(self):
        bases = [int(_flag(flags, "--value-base")) for _, kind, flags in
                 plan_processes(WorkloadPlan(producers=3)) if kind == "producer"]
        assert bases == [0, PLAN_RANGE, 2 * PLAN_RANGE, 3 * PLAN_RANGE]

    def test_without_copiers(self):
        procs = plan_processes(WorkloadPlan(copiers=False, readers=2, group_members=0, idempotence=False))
        assert [n for n, _, _ in procs] == ["reader-0", "reader-1", "producer-0", "producer-1"]
        assert _flag(procs[0][2], "--topics") == "soak"
        assert _flag(procs[2][2], "--idempotence") == "false"

    def test_command_line(self):
        assert command_line("reader", "reader-0", "b:1", "/h", ["--topics", "t"])[1:] == \
            ["-m", "scripts.soak.workloads", "reader", "--bootstrap", "b:1", "--history-dir", "/h",
             "--process", "reader-0", "--topics", "t"]


def _flag(flags: list[str], name: str) -> str:
    return flags[flags.index(name) + 1]


def test_a_restarted_writer_numbers_on_after_a_torn_line(tmp_path):
    path = history_path(tmp_path, "copier-0")
    first = HistoryWriter(path, "copier-0")
    op = first.invoke("txn", [["poll", None]])
    first.complete(op, OK, "txn", [["poll", {}]])
    first.invoke("txn", [["poll", None]])
    first.close()
    with open(path, "a") as f:
        f.write('{"time": 1, "process": "copier-0", "op": 2, "ty')  # killed mid-line
    second = HistoryWriter(path, "copier-0")
    second.event("crash", [["crash", "-9"]], type_=INFO)
    second.close()
    ops = list(read_file(path))
    assert [(o.op, o.type, o.f) for o in ops] == [(0, "invoke", "txn"), (0, "ok", "txn"), (1, "invoke", "txn"),
                                                  (2, "invoke", "crash"), (2, "info", "crash")]


class TestEosLog:
    """librdkafka's log lines reach the producer's EosLog; the drain that begins an epoch bump is an op."""

    BUMP = ("[thrd:127.0.0.1:9092/1]: Beginning partition drain in state Assigned for PID{Id:3,Epoch:0} epoch bump "
            "for 2 partition(s) with in-flight requests: skipped sequence numbers")

    def test_the_drain_line_of_an_epoch_bump_is_recorded_with_its_reason(self, tmp_path, capsys):
        history = HistoryWriter(tmp_path / "history-p.jsonl", "p")
        eos = producer.EosLog(history, "p")
        eos.log(10, "%s [%s] %s", "DRAIN", "p#producer-1", self.BUMP)
        eos.log(10, "%s [%s] %s", "DRAIN", "p#producer-1", "[thrd:main]: All partitions drained")
        eos.log(10, "%s [%s] %s", "IDEMPSTATE", "p#producer-1", "[thrd:main]: state change Assigned -> DrainBump")
        history.close()
        ops = list(read_file(tmp_path / "history-p.jsonl"))
        assert [(o.type, o.f, o.value) for o in ops] == [
            ("invoke", "epoch-bump", [["epoch-bump", "skipped sequence numbers"]]),
            ("ok", "epoch-bump", [["epoch-bump", "skipped sequence numbers"]])]
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 3 and lines[0].startswith("%7|") and lines[0].endswith("|DRAIN|p#producer-1| " + self.BUMP)

    def test_other_lines_are_no_bump(self):
        assert producer.epoch_bump_reason("DRAIN", self.BUMP.replace("epoch bump", "reset")) is None
        assert producer.epoch_bump_reason("TXN", self.BUMP) is None
        assert producer.epoch_bump_reason("DRAIN", self.BUMP) == "skipped sequence numbers"

    def test_a_real_idempotent_producer_logs_through_it(self, tmp_path, capsys):
        """No broker needed: librdkafka's idempotent producer logs its first state change under debug=eos."""
        from confluent_kafka import Producer
        history = HistoryWriter(tmp_path / "history-p.jsonl", "p")
        args = producer.parser().parse_args(["--bootstrap", "127.0.0.1:9", "--history-dir", str(tmp_path),
                                             "--process", "p", "--topic", "soak", "--partitions", "1",
                                             "--rate", "1", "--value-base", "0"])
        client = Producer({**producer.producer_config(args), "logger": producer.EosLog(history, "p")})
        deadline = time.monotonic() + 10
        while "IDEMPSTATE" not in capsys.readouterr().err and time.monotonic() < deadline:
            client.poll(0.1)
        assert time.monotonic() < deadline, "librdkafka logged no IDEMPSTATE line through the logger"
        history.close()
