"""``zkafka bench group``'s offset-commit bookkeeping: offsets name commits, what counts as an answer."""
from __future__ import annotations

from types import SimpleNamespace

from scripts.bench.group_commits import CommitLog, CommitTarget


def test_each_commit_is_the_next_offset_and_is_time_stamped():
    log = CommitLog(sync=False)
    assert [log.issue(), log.issue(), log.issue()] == [1, 2, 3]
    assert log.last_issued == 3 and sorted(log.issued) == [1, 2, 3]
    assert log.issued[1] <= log.issued[2] <= log.issued[3]


def test_asynchronous_acks_and_errors_come_from_on_commit():
    log = CommitLog(sync=False)
    log.issue(), log.issue(), log.issue()
    log.on_commit(None, [SimpleNamespace(offset=1)])
    log.on_commit("REQUEST_TIMED_OUT", [SimpleNamespace(offset=2)])
    log.on_commit(None, [])
    assert [offset for offset, _ in log.acked] == [1]
    assert log.errors == ["REQUEST_TIMED_OUT"]
    assert log.answered == 2


def test_synchronous_commits_are_not_counted_in_on_commit():
    log = CommitLog(sync=True)
    log.issue()
    log.on_commit(None, [SimpleNamespace(offset=1)])
    log.on_commit("REQUEST_TIMED_OUT", None)
    assert (log.acked, log.errors, log.answered) == ([], [], 0)


def test_a_commit_sets_every_partition_of_the_topic():
    target = CommitTarget({"group.id": "g"}, "t", 3, 60.0)
    assert [(tp.topic, tp.partition, tp.offset) for tp in target.offsets(7)] == [("t", 0, 7), ("t", 1, 7), ("t", 2, 7)]
