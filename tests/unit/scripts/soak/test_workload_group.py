"""The group member's commit bookkeeping without a cluster: an asynchronous commit completes from its
``on_commit`` answer, ``info`` once past ``COMMIT_WAIT_S`` without one (a late answer completes nothing more),
answers are matched to the pending commit of the same offsets, no second commit is sent while one awaits its
answer, and a revoked partition's uncommitted offsets are dropped."""
from __future__ import annotations

import time
from types import SimpleNamespace

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from scripts.soak.history import FAIL, INFO, INVOKE, OK, HistoryWriter, read_file
from scripts.soak.workloads import group


class FakeConsumer:
    def __init__(self, refuse: KafkaError | None = None) -> None:
        self.commits: list[dict[str, int]] = []
        self.refuse = refuse

    def commit(self, offsets, asynchronous):
        assert asynchronous
        if self.refuse is not None:
            raise KafkaException(self.refuse)
        self.commits.append({f"{tp.topic}/{tp.partition}": tp.offset for tp in offsets})


def member(tmp_path, consumer=None) -> group.GroupMember:
    args = SimpleNamespace(bootstrap="127.0.0.1:1", process="group-0", group="g", isolation="read_committed",
                           topics=["t"])
    m = group.GroupMember(args, HistoryWriter(tmp_path / "h.jsonl", "group-0"))
    m.consumer = consumer or FakeConsumer()
    return m


def completions(m) -> list:
    m.history.close()
    return [(o.op, o.type, o.value, o.error) for o in read_file(m.history.path) if o.type != INVOKE]


def answer(offsets: dict[str, int]) -> list[TopicPartition]:
    return [TopicPartition(*k.split("/")[:1], int(k.split("/")[1]), o) for k, o in offsets.items()]


def test_a_commit_completes_from_its_answer(tmp_path):
    m = member(tmp_path)
    m.commit({"t/0": 5})
    assert m._awaited()
    m._commit_answered(None, answer({"t/0": 5}))
    assert not m._awaited()
    assert completions(m) == [(0, OK, [["commit", {"t/0": 5}]], None)]


def test_an_unanswered_commit_is_info_at_its_deadline_and_a_late_answer_changes_nothing(tmp_path):
    m = member(tmp_path)
    m.commit({"t/0": 5})
    m._expire(time.monotonic())
    assert m._awaited()
    m._expire(time.monotonic() + group.COMMIT_WAIT_S)
    assert not m._awaited()
    m._commit_answered(None, answer({"t/0": 5}))
    assert completions(m) == [(0, INFO, [["commit", {"t/0": 5}]], "no answer")]


def test_answers_go_to_the_pending_commit_of_their_offsets(tmp_path):
    m = member(tmp_path)
    m.commit({"t/0": 5})
    m._expire(time.monotonic() + group.COMMIT_WAIT_S)
    m.commit({"t/0": 9})
    m._commit_answered(None, answer({"t/0": 9}))
    m._commit_answered(KafkaError(KafkaError.REQUEST_TIMED_OUT), answer({"t/0": 5}))
    assert completions(m) == [(0, INFO, [["commit", {"t/0": 5}]], "no answer"),
                              (1, OK, [["commit", {"t/0": 9}]], None)]
    assert m.pending == []


def test_an_answer_with_an_error(tmp_path):
    m = member(tmp_path)
    m.commit({"t/0": 5})
    m._commit_answered(KafkaError(KafkaError.ILLEGAL_GENERATION), answer({"t/0": 5}))
    m.commit({"t/1": 3})
    m._commit_answered(KafkaError(KafkaError.REQUEST_TIMED_OUT), answer({"t/1": 3}))
    assert completions(m) == [(0, FAIL, [["commit", {"t/0": 5}]], "ILLEGAL_GENERATION"),
                              (1, INFO, [["commit", {"t/1": 3}]], "REQUEST_TIMED_OUT")]


def test_a_commit_the_client_refuses_completes_at_once(tmp_path):
    m = member(tmp_path, FakeConsumer(refuse=KafkaError(KafkaError._NO_OFFSET)))
    m.commit({"t/0": 5})
    assert not m._awaited()
    assert completions(m) == [(0, FAIL, [["commit", {"t/0": 5}]], "_NO_OFFSET")]


def test_no_second_commit_while_one_awaits_its_answer_and_revoked_offsets_are_dropped(tmp_path, monkeypatch):
    m = member(tmp_path)
    steps = iter([
        (None, {"t/0": [[4, 40]]}),
        (lambda: m._commit_answered(None, answer({"t/0": 5})), {"t/1": [[2, 20]]}),
        (None, {"t/0": [[5, 50]], "t/1": [[3, 30]]}),
        (lambda: (m._revoked(None, [TopicPartition("t", 1)]), m._commit_answered(None, answer({"t/1": 3}))), {}),
        (lambda: m._commit_answered(None, answer({"t/0": 6})), {}),  # after SIGTERM: the last answer awaited
    ])

    def poll_op(*_):
        served, read = next(steps)
        if served:
            served()
        return read

    class Stop:
        polls = 0

        def __bool__(self):
            self.polls += 1
            return self.polls > 4

    monkeypatch.setattr(group, "poll_op", poll_op)
    m.consumer.subscribe = lambda *a, **k: None
    assert m.run(Stop()) == group.EXIT_OK
    assert m.consumer.commits == [{"t/0": 5}, {"t/1": 3}, {"t/0": 6}]
    assert [c[1] for c in completions(m) if c[2][0][0] == "commit"] == [OK, OK, OK]
    assert next(steps, None) is None
