"""The soak checker: a clean history is valid with every count 0, and each anomaly kind, built alone into a
history, is reported (count and example) with nothing else that is not allowed."""
from __future__ import annotations

import pytest

from scripts.soak.checker import KINDS, Availability, CheckConfig, CheckResult, check
from scripts.soak.checker.transactions import strongly_connected
from scripts.soak.history import read_file

from .histories import FAIL, INFO, OK, History

EOS = CheckConfig(eos_pairs={"txn-in": "txn-out"})


def clean_history() -> History:
    """Three producers, an implicit ack, info sends read and never read, a failed send, a copier with an
    abort, two assigned readers and a two-member group."""
    h = History()
    h.send("p0", "soak/0", 1, 0)
    h.send("p0", "soak/0", 2, 1)
    h.send("p1", "soak/0", 1001, 2)
    h.send("p0", "soak/0", 3, 3)
    h.send("p1", "soak/1", 1002, 0)
    h.send("p0", "soak/1", 4, None)  # implicit ack, polled at offset 1
    h.send("p1", "soak/1", 1005, type_=INFO)  # indefinite, landed at offset 2
    h.send("p0", "soak/1", 5, type_=INFO)  # indefinite, never written
    h.send("p0", "soak/1", 6, type_=FAIL)
    h.send("p1", "soak/1", 1006, type_=None)  # never completed
    for offset, value in enumerate((2001, 2002, 2003)):
        h.send("p2", "txn-in/0", value, offset)
    h.assign("c0", ["txn-in/0"])
    h.txn("c0", [("poll", {"txn-in/0": [(0, 2001), (1, 2002)]}), ("send", "txn-out/0", 0, 2001),
                 ("send", "txn-out/0", 1, 2002)])
    h.txn("c0", [("poll", {"txn-in/0": [(2, 2003)]}), ("send", "txn-out/0", 3, 2003)], FAIL)
    h.txn("c0", [("poll", {"txn-in/0": [(2, 2003)]}), ("send", "txn-out/0", 5, 2003)])
    h.assign("r0", ["soak/0", "soak/1", "txn-in/0", "txn-out/0"])
    h.poll("r0", {"soak/0": [(0, 1), (1, 2)], "soak/1": [(0, 1002)]})
    h.poll("r0", {"soak/0": [(2, 1001), (3, 3)], "soak/1": [(1, 4), (2, 1005)]})
    h.poll("r0", {"txn-in/0": [(0, 2001), (1, 2002), (2, 2003)], "txn-out/0": [(0, 2001), (1, 2002)]})
    h.poll("r0", {"txn-out/0": [(5, 2003)]})
    h.assign("r1", ["soak/0"])
    h.poll("r1", {"soak/0": [(0, 1)]})
    h.poll("r1", {"soak/0": [(1, 2), (2, 1001), (3, 3)]})
    h.subscribe("g0", ["soak"])
    h.rebalance("g0", ["soak/0", "soak/1"])
    h.poll("g0", {"soak/0": [(0, 1), (1, 2)]})
    h.commit("g0", {"soak/0": 2})
    h.subscribe("g1", ["soak"])
    h.rebalance("g0", ["soak/0"], ["soak/1"])
    h.rebalance("g1", ["soak/1"])
    h.poll("g0", {"soak/0": [(2, 1001), (3, 3)]})
    h.commit("g0", {"soak/0": 4})
    h.poll("g1", {"soak/1": [(0, 1002), (1, 4), (2, 1005)]})
    h.commit("g1", {"soak/1": 3})
    return h


def assert_only(result: CheckResult, kind: str, count: int = 1, also: dict[str, int] | None = None) -> None:
    """``kind`` reported ``count`` times with an example; every other kind not allowed is 0 (``also`` lists
    the kinds the anomaly implies)."""
    expected = {kind: count, **(also or {})}
    assert result.anomalies[kind].count == count, result.to_json()["anomalies"][kind]
    assert result.anomalies[kind].examples
    others = {k: a.count for k, a in result.anomalies.items() if a.count and not a.allowed and k not in expected}
    assert others == {}
    for k, n in (also or {}).items():
        assert result.anomalies[k].count == n


def test_a_clean_history_is_valid_with_every_count_0():
    result = check(clean_history().ops, EOS)
    assert result.valid
    assert {k: a.count for k, a in result.anomalies.items() if a.count} == {}
    assert set(result.anomalies) == set(KINDS)
    stats = result.stats
    assert stats["sends"]["ok"] == 8 and stats["sends"]["implicit_acks"] == 1
    assert stats["sends"]["info"] == 3 and stats["sends"]["fail"] == 1  # the never completed send is info
    assert stats["txns"] == {"committed": 2, "aborted": 1, "indefinite": 0}
    assert stats["highest_offset_read"]["txn-out/0"] == 5
    assert stats["groups"] == {"soak": ["g0", "g1"]}
    assert result.to_json()["valid"] is True


def test_lost_write_is_an_acked_send_never_read_below_a_read_offset():
    h = History()
    h.send("p0", "soak/0", 1, 0)
    h.send("p0", "soak/0", 2, 1)
    h.poll("r0", {"soak/0": [(1, 2)]})
    result = check(h.ops)
    assert_only(result, "lost-write", also={"unseen": 1})
    assert result.anomalies["lost-write"].examples[0] == {"key": "soak/0", "offset": 0, "value": 1, "process": "p0",
                                                          "op": 0, "highest_read": 1}
    assert not result.valid


def test_unseen_is_an_acked_send_never_read():
    h = History()
    h.send("p0", "soak/0", 1, 0)
    h.send("p0", "soak/0", 2, 1)
    h.send("p0", "soak/1", 3, None)  # an implicit ack: by value only
    h.poll("r0", {"soak/0": [(0, 1)]})
    result = check(h.ops)
    assert_only(result, "unseen", 2)
    assert {e["value"] for e in result.anomalies["unseen"].examples} == {2, 3}


def test_a_duplicate_in_flight_across_its_producers_epoch_bump_is_told_apart():
    """librdkafka re-sends what waits for a retry under a bumped epoch (#4953): a duplicate whose send spans its
    own producer's bump is duplicate-after-bump (allowed); one outside any bump, or spanning another producer's,
    stays a duplicate."""
    h = History()
    in_flight = h.invoke("p0", "send", [["send", "soak/0", 1]])
    h.event("p0", "epoch-bump", [["epoch-bump", "skipped sequence numbers"]])
    h.complete("p0", in_flight, OK, "send", [["send", "soak/0", [7, 1]]])
    h.send("p0", "soak/1", 2, 3)  # after the bump: not in flight across it
    others = h.invoke("p1", "send", [["send", "soak/2", 1001]])
    h.event("p0", "epoch-bump", [["epoch-bump", "unknown producer id"]])
    h.complete("p1", others, OK, "send", [["send", "soak/2", [4, 1001]]])
    h.poll("r0", {"soak/0": [(2, 1), (7, 1)], "soak/1": [(1, 2), (3, 2)], "soak/2": [(0, 1001), (4, 1001)]})
    result = check(h.ops)
    assert result.anomalies["duplicate-after-bump"].count == 1 and result.anomalies["duplicate-after-bump"].allowed
    assert result.anomalies["duplicate-after-bump"].examples == [{"value": 1, "at": [["soak/0", 2], ["soak/0", 7]]}]
    assert_only(result, "duplicate", 2, also={"duplicate-after-bump": 1})
    assert result.stats["epoch_bumps"] == 2


def test_inconsistent_offsets_is_one_offset_with_two_values():
    h = History()
    h.send("p0", "soak/0", 1, 0)
    h.send("p1", "soak/0", 1001, 0)
    h.poll("r0", {"soak/0": [(0, 1)]})
    h.poll("r1", {"soak/0": [(0, 1001)]})
    result = check(h.ops)
    assert_only(result, "inconsistent-offsets")
    assert result.anomalies["inconsistent-offsets"].examples[0] == {"key": "soak/0", "offset": 0,
                                                                    "values": [1, 1001]}


def test_duplicate_is_one_value_at_two_offsets_and_allowed_without_idempotence():
    h = History()
    h.send("p0", "soak/0", 1, 0)
    h.poll("r0", {"soak/0": [(0, 1), (1, 1)]})
    result = check(h.ops)
    assert_only(result, "duplicate")
    assert result.anomalies["duplicate"].examples[0] == {"value": 1, "at": [["soak/0", 0], ["soak/0", 1]]}
    loose = check(h.ops, CheckConfig(idempotent=False))
    assert loose.valid and loose.anomalies["duplicate"].count == 1 and loose.anomalies["duplicate"].allowed


def test_g1a_is_a_read_of_a_failed_send():
    h = History()
    h.send("p0", "soak/0", 1, type_=FAIL)
    h.poll("r0", {"soak/0": [(0, 1)]})
    result = check(h.ops)
    assert_only(result, "G1a")
    assert result.anomalies["G1a"].examples[0]["writer_type"] == FAIL


def test_g1a_is_a_read_of_an_aborted_transactions_copy_even_when_a_committed_copy_follows():
    h = History()
    h.txn("c0", [("send", "txn-out/0", 0, 7)], FAIL)
    h.txn("c0", [("send", "txn-out/0", 2, 7)])
    h.poll("r0", {"txn-out/0": [(0, 7), (2, 7)]})
    result = check(h.ops)
    assert_only(result, "G1a")
    assert result.anomalies["G1a"].examples[0]["offset"] == 0


def test_nonmonotonic_send_is_a_later_send_at_a_lower_offset():
    h = History()
    h.send("p0", "soak/0", 1, 5)
    h.send("p0", "soak/0", 2, 3)
    h.poll("r0", {"soak/0": [(3, 2), (5, 1)]})
    assert_only(check(h.ops), "nonmonotonic-send")


def test_int_nonmonotonic_send_is_within_one_transaction():
    h = History()
    h.txn("c0", [("send", "txn-out/0", 4, 1), ("send", "txn-out/0", 2, 2)])
    h.poll("r0", {"txn-out/0": [(2, 2), (4, 1)]})
    assert_only(check(h.ops), "int-nonmonotonic-send")


def test_nonmonotonic_poll_is_an_assigned_reader_going_back_between_polls():
    h = History()
    h.send("p0", "soak/0", 1, 0)
    h.send("p0", "soak/0", 2, 1)
    h.assign("r0", ["soak/0"])
    h.poll("r0", {"soak/0": [(0, 1), (1, 2)]})
    h.poll("r0", {"soak/0": [(1, 2)]})
    assert_only(check(h.ops), "nonmonotonic-poll")


def test_int_nonmonotonic_poll_is_within_one_poll():
    h = History()
    h.send("p0", "soak/0", 1, 0)
    h.send("p0", "soak/0", 2, 1)
    h.poll("r0", {"soak/0": [(1, 2), (0, 1)]})
    assert_only(check(h.ops), "int-nonmonotonic-poll")


def _three_sends(h: History) -> None:
    for offset, value in enumerate((1, 2, 3)):
        h.send("p0", "soak/0", value, offset)
    h.poll("r1", {"soak/0": [(0, 1), (1, 2), (2, 3)]})


def test_poll_skip_is_a_visible_value_jumped_over_between_polls():
    h = History()
    _three_sends(h)
    h.poll("r0", {"soak/0": [(0, 1)]})
    h.poll("r0", {"soak/0": [(2, 3)]})
    result = check(h.ops)
    assert_only(result, "poll-skip")
    assert result.anomalies["poll-skip"].examples[0]["skipped"] == [[1, 2]]


def test_int_poll_skip_is_within_one_poll():
    h = History()
    _three_sends(h)
    h.poll("r0", {"soak/0": [(0, 1), (2, 3)]})
    assert_only(check(h.ops), "int-poll-skip")


def test_a_skip_across_an_assign_or_by_a_group_member_is_no_poll_skip():
    h = History()
    _three_sends(h)
    h.poll("r0", {"soak/0": [(0, 1)]})
    h.assign("r0", ["soak/0"])
    h.poll("r0", {"soak/0": [(2, 3)]})
    h.subscribe("g0", ["other"])
    h.poll("g0", {"soak/0": [(0, 1), (2, 3)]})
    result = check(h.ops)
    assert result.anomalies["poll-skip"].count == 0 and result.anomalies["int-poll-skip"].count == 0


def test_offsets_of_aborted_records_and_markers_are_no_skip():
    h = History()
    h.txn("c0", [("send", "txn-out/0", 0, 1)])
    h.txn("c0", [("send", "txn-out/0", 2, 2)], FAIL)
    h.txn("c0", [("send", "txn-out/0", 4, 3)])
    h.poll("r0", {"txn-out/0": [(0, 1), (4, 3)]})
    assert check(h.ops).valid


def test_int_send_skip_is_another_write_between_a_transactions_writes_and_allowed():
    h = History()
    h.txn("c0", [("send", "txn-out/0", 0, 1), ("send", "txn-out/0", 2, 3)])
    h.send("p0", "txn-out/0", 2, 1)
    h.poll("r0", {"txn-out/0": [(0, 1), (1, 2), (2, 3)]})
    result = check(h.ops)
    assert_only(result, "int-send-skip")
    assert result.valid and result.anomalies["int-send-skip"].allowed


def test_g0_is_a_write_cycle_and_allowed():
    h = History()
    h.txn("c0", [("send", "a/0", 0, 1), ("send", "b/0", 1, 2)])
    h.txn("c1", [("send", "b/0", 0, 3), ("send", "a/0", 1, 4)])
    h.poll("r0", {"a/0": [(0, 1), (1, 4)], "b/0": [(0, 3), (1, 2)]})
    result = check(h.ops)
    assert_only(result, "G0")
    assert result.valid and result.anomalies["G0"].examples[0] == {"transactions": [["c0", 0], ["c1", 0]],
                                                                   "size": 2}


def test_g1c_is_a_cycle_of_reads_between_committed_transactions():
    h = History()
    h.txn("c0", [("send", "a/0", 0, 1), ("poll", {"b/0": [(0, 2)]})])
    h.txn("c1", [("send", "b/0", 0, 2), ("poll", {"a/0": [(0, 1)]})])
    result = check(h.ops)
    assert_only(result, "G1c")
    assert result.anomalies["G1c"].examples[0]["size"] == 2


def test_precommitted_read_is_a_transaction_reading_its_own_write():
    h = History()
    h.txn("c0", [("send", "a/0", 0, 1), ("poll", {"a/0": [(0, 1)]})])
    assert_only(check(h.ops), "precommitted-read")


def _group_of_one(h: History) -> None:
    _three_sends(h)
    h.subscribe("g0", ["soak"])
    h.rebalance("g0", ["soak/0"])


def test_group_gap_is_a_visible_offset_the_group_never_consumed():
    h = History()
    _group_of_one(h)
    h.poll("g0", {"soak/0": [(0, 1)]})
    h.poll("g0", {"soak/0": [(2, 3)]})
    result = check(h.ops)
    assert_only(result, "group-gap")
    assert result.anomalies["group-gap"].examples[0] == {"group": ["soak"], "key": "soak/0", "offset": 1,
                                                         "value": 2}


def test_commit_backwards_is_a_groups_committed_offset_going_down():
    h = History()
    _group_of_one(h)
    h.subscribe("g1", ["soak"])
    h.poll("g0", {"soak/0": [(0, 1), (1, 2), (2, 3)]})
    h.commit("g0", {"soak/0": 3})
    h.commit("g1", {"soak/0": 1})
    assert_only(check(h.ops), "commit-backwards")


def rebalanced_at_100_s() -> History:
    """A one-member group that reads, is rebalanced at 100 s with no cause in the history, and commits at 200 s."""
    h = History()
    _group_of_one(h)
    h.poll("g0", {"soak/0": [(0, 1), (1, 2), (2, 3)]})
    h.at(100)
    h.rebalance("g0", ["soak/0"], ["soak/0"])
    h.at(200)
    h.commit("g0", {"soak/0": 3})
    return h


def test_unexpected_rebalance_is_one_far_from_any_membership_change():
    h = rebalanced_at_100_s()
    result = check(h.ops)
    assert_only(result, "unexpected-rebalance")
    h.crash("g0")  # a member leaving (its crash) makes the rebalance around it expected
    h.at(215)
    h.rebalance("g0", ["soak/0"])
    assert check(h.ops).anomalies["unexpected-rebalance"].count == 1


def _copied(h: History, copies: list[tuple[int, int]]) -> None:
    h.send("p0", "txn-in/0", 1, 0)
    h.send("p0", "txn-in/0", 2, 1)
    h.txn("c0", [("poll", {"txn-in/0": [(0, 1), (1, 2)]})] + [("send", "txn-out/0", o, v) for o, v in copies])
    h.poll("r0", {"txn-in/0": [(0, 1), (1, 2)], "txn-out/0": copies})


def test_eos_missing_is_an_input_value_never_read_in_the_output():
    h = History()
    _copied(h, [(0, 1)])
    result = check(h.ops, EOS)
    assert_only(result, "eos-missing")
    assert result.anomalies["eos-missing"].examples[0]["value"] == 2


def test_eos_extra_is_an_output_value_never_written_to_the_input():
    h = History()
    _copied(h, [(0, 1), (1, 2), (2, 9)])
    assert_only(check(h.ops, EOS), "eos-extra")


def test_eos_duplicate_is_a_value_at_two_output_offsets():
    h = History()
    _copied(h, [(0, 1), (1, 2), (2, 2)])
    assert_only(check(h.ops, EOS), "eos-duplicate", also={"duplicate": 1})


def test_unavailable_is_a_key_leaderless_past_the_bound_after_heal():
    availability = Availability(10, {"soak/0": 75.0, "soak/1": 3.0}, {"p0": True})
    result = check(clean_history().ops, EOS, availability)
    assert_only(result, "unavailable")
    assert result.anomalies["unavailable"].examples == [{"key": "soak/0", "seconds": 75.0, "bound_s": 60.0}]


def test_workload_unfinished_is_a_process_that_did_not_stop_cleanly():
    result = check(clean_history().ops, EOS, Availability(None, {}, {"p0": False, "r0": True}))
    assert_only(result, "workload-unfinished")
    assert result.anomalies["workload-unfinished"].examples == [{"process": "p0"}]


def test_a_restarted_process_reusing_op_numbers_leaves_its_pending_ops_indefinite():
    h = History()
    h.invoke("p0", "send", [["send", "soak/0", 1]])  # op 0, killed in flight
    h.crash("p0")  # op 1
    h.renumber("p0")
    h.send("p0", "soak/0", 2, 0)
    h.poll("r0", {"soak/0": [(0, 2)]})
    result = check(h.ops)
    assert result.valid and result.stats["sends"] == {**result.stats["sends"], "ok": 1, "info": 1}


def test_every_kind_has_a_test_here():
    tested = {"lost-write", "unseen", "inconsistent-offsets", "duplicate", "duplicate-after-bump", "G1a", "nonmonotonic-send",
              "int-nonmonotonic-send", "nonmonotonic-poll", "int-nonmonotonic-poll", "poll-skip", "int-poll-skip",
              "int-send-skip", "G0", "G1c", "precommitted-read", "group-gap", "commit-backwards",
              "unexpected-rebalance", "eos-missing", "eos-extra", "eos-duplicate", "unavailable",
              "workload-unfinished"}
    assert tested == set(KINDS)


@pytest.mark.parametrize("torn", ['{"time": 5, "proc', ""])
def test_a_torn_last_line_is_dropped(tmp_path, torn):
    h = History()
    h.send("p0", "soak/0", 1, 0)
    path = tmp_path / "history-p0.jsonl"
    path.write_text("".join(op.to_json() + "\n" for op in h.ops) + torn)
    assert list(read_file(path)) == h.ops


def test_strongly_connected_components_of_a_long_cycle_need_no_recursion():
    n = 50_000
    edges = {i: {(i + 1) % n} for i in range(n)}
    edges[n] = {0}  # a tail into the cycle: its own component
    components = sorted(strongly_connected(edges), key=len)
    assert [len(c) for c in components] == [1, n]


def test_a_rebalance_around_a_members_leave_is_expected():
    h = History()
    _group_of_one(h)
    h.subscribe("g1", ["soak"])
    h.rebalance("g1", [])
    h.poll("g0", {"soak/0": [(0, 1), (1, 2), (2, 3)]})
    h.at(100)
    h.commit("g1", {})  # g1's last op: it leaves
    h.at(110)
    h.rebalance("g0", ["soak/0"], ["soak/0"])
    h.at(200)
    h.commit("g0", {"soak/0": 3})
    assert check(h.ops).valid


def test_after_a_transaction_of_unknown_outcome_the_copier_may_start_anywhere():
    h = History()
    for offset, value in enumerate((1, 2, 3, 4)):
        h.send("p0", "txn-in/0", value, offset)
    h.txn("c0", [("poll", {"txn-in/0": [(0, 1), (1, 2)]}), ("send", "txn-out/0", None, 1),
                 ("send", "txn-out/0", None, 2)], INFO)
    h.txn("c0", [("poll", {"txn-in/0": [(0, 1), (1, 2), (2, 3), (3, 4)]})])  # the commit had not happened
    h.poll("r0", {"txn-in/0": [(0, 1), (1, 2), (2, 3), (3, 4)]})
    result = check(h.ops)
    assert result.valid and result.stats["txns"]["indefinite"] == 1


def test_an_indefinite_send_someone_read_is_visible_so_jumping_over_it_is_a_skip():
    h = History()
    h.send("p0", "soak/0", 1, 0)
    h.send("p0", "soak/0", 2, type_=INFO)  # landed at offset 1: r1 read it
    h.send("p0", "soak/0", 3, 2)
    h.poll("r1", {"soak/0": [(0, 1), (1, 2), (2, 3)]})
    h.poll("r0", {"soak/0": [(0, 1), (2, 3)]})
    assert_only(check(h.ops), "int-poll-skip")


def test_an_indefinite_send_to_the_input_that_was_copied_is_no_eos_extra():
    h = History()
    h.send("p0", "txn-in/0", 1, 0)
    h.send("p0", "txn-in/0", 2, type_=INFO)
    h.txn("c0", [("poll", {"txn-in/0": [(0, 1), (1, 2)]}), ("send", "txn-out/0", 0, 1), ("send", "txn-out/0", 1, 2)])
    h.poll("r0", {"txn-in/0": [(0, 1), (1, 2)], "txn-out/0": [(0, 1), (1, 2)]})
    result = check(h.ops, EOS)
    assert result.valid and result.anomalies["eos-extra"].count == 0


def test_a_crash_of_an_assigned_reader_starts_its_tracking_afresh():
    h = History()
    _three_sends(h)
    h.poll("r0", {"soak/0": [(0, 1), (1, 2), (2, 3)]})
    h.crash("r0")
    h.poll("r0", {"soak/0": [(0, 1)]})
    assert check(h.ops).valid


def test_aborted_reads_and_read_cycles_are_allowed_under_read_uncommitted():
    h = History()
    h.txn("c0", [("send", "txn-out/0", 0, 1)], FAIL)
    h.poll("r0", {"txn-out/0": [(0, 1)]})
    h.txn("c1", [("send", "a/0", 0, 5), ("poll", {"b/0": [(0, 6)]})])
    h.txn("c2", [("send", "b/0", 0, 6), ("poll", {"a/0": [(0, 5)]})])
    strict, loose = check(h.ops), check(h.ops, CheckConfig(read_committed=False))
    assert not strict.valid and strict.anomalies["G1a"].count == 1 and strict.anomalies["G1c"].count == 1
    assert loose.valid and loose.anomalies["G1a"].allowed and loose.anomalies["G1c"].allowed


def test_a_rebalance_during_or_soon_after_a_client_partition_is_expected():
    h = rebalanced_at_100_s()
    s = 1_000_000_000
    cut_earlier = CheckConfig(client_fault_windows=((10 * s, 20 * s),))
    assert_only(check(h.ops, cut_earlier), "unexpected-rebalance")
    assert check(h.ops, CheckConfig(client_fault_windows=((60 * s, 80 * s),))).valid  # healed 20 s before
    assert check(h.ops, CheckConfig(client_fault_windows=((90 * s, 150 * s),))).valid  # during the cut


def test_an_assignment_that_ends_an_expected_revocation_is_not_judged_again():
    """A member's partitions lost during a client partition (expected), and given back 90 s later, once the
    group waited out its old members' sessions: one rebalance, judged where it started (seed 1488100434)."""
    s = 1_000_000_000
    h = History()
    _group_of_one(h)
    h.poll("g0", {"soak/0": [(0, 1)]})
    h.at(80)
    h.rebalance("g0", [], ["soak/0"])
    h.at(170)
    h.rebalance("g0", ["soak/0"])
    h.at(200)
    h.commit("g0", {"soak/0": 1})
    assert check(h.ops, CheckConfig(client_fault_windows=((40 * s, 57 * s),))).valid
    # the revocation itself far from any cause is still the one anomaly
    assert check(h.ops).anomalies["unexpected-rebalance"].count == 1


def test_the_checker_cli_reads_a_runs_client_fault_windows_from_its_nemesis_log(tmp_path, capsys):
    """``python -m scripts.soak.checker <run dir>`` gives the run's own verdict: the client partitions in its
    ``nemesis.jsonl`` make a rebalance during them expected, as the runner's check did."""
    import json

    from scripts.soak.checker.__main__ import main as checker_main

    s = 1_000_000_000
    h = rebalanced_at_100_s()
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_text("".join(op.to_json() + "\n" for op in h.ops))
    assert checker_main([str(run)]) == 1  # no nemesis log: the rebalance has no cause
    cut = [{"time": 90 * s, "event": "start", "kind": "partition-clients", "id": 4},
           {"time": 95 * s, "event": "start", "kind": "kill-broker", "id": 5},
           {"time": 150 * s, "event": "heal", "kind": "partition-clients", "id": 4}]
    (tmp_path / "elsewhere.jsonl").write_text("".join(json.dumps(e) + "\n" for e in cut))
    assert checker_main([str(run), "--nemesis", str(tmp_path / "elsewhere.jsonl")]) == 0
    (run / "nemesis.jsonl").write_text((tmp_path / "elsewhere.jsonl").read_text())
    assert checker_main([str(run)]) == 0
    assert "VALID" in capsys.readouterr().out


def test_a_revocation_while_another_member_awaits_its_assignment_is_the_same_rebalance():
    """Eager rebalancing: g1's session timed out during a client partition (expected) and it rejoined 12 s later,
    once a coordinator answered; that join made the coordinator prepare a rebalance, and g0 revoked on its next
    heartbeat, 40 s after the heal. One rebalance, judged where it started (g1's revocation; seed 775329580)."""
    s = 1_000_000_000
    h = History()
    _three_sends(h)
    h.subscribe("g0", ["soak"])
    h.subscribe("g1", ["soak"])
    h.rebalance("g0", ["soak/0"])
    h.rebalance("g1", ["soak/1"])
    h.poll("g0", {"soak/0": [(0, 1), (1, 2), (2, 3)]})
    h.at(86)
    h.rebalance("g1", [], ["soak/1"])  # its own session timeout: 26 s after the heal
    h.at(98)
    h.rebalance("g0", [], ["soak/0"])  # REBALANCE_IN_PROGRESS on its heartbeat once g1's JoinGroup arrived
    h.at(130)
    h.rebalance("g0", ["soak/0"])
    h.rebalance("g1", ["soak/1"])
    h.at(200)
    h.commit("g0", {"soak/0": 3})
    h.commit("g1", {})
    cut = CheckConfig(client_fault_windows=((40 * s, 60 * s),))
    assert check(h.ops, cut).valid
    assert check(h.ops).anomalies["unexpected-rebalance"].count == 1  # without the cut: one rebalance, once


def test_a_revocation_after_the_other_members_rebalance_ended_is_judged():
    """The rebalance a member's revocation began ends with its assignment (or when its process ends): a later
    revocation of another member far from any cause is a rebalance of its own."""
    s = 1_000_000_000
    h = History()
    _three_sends(h)
    h.subscribe("g0", ["soak"])
    h.subscribe("g1", ["soak"])
    h.rebalance("g0", ["soak/0"])
    h.rebalance("g1", ["soak/1"])
    h.poll("g0", {"soak/0": [(0, 1), (1, 2), (2, 3)]})
    h.at(86)
    h.rebalance("g1", [], ["soak/1"])
    h.rebalance("g1", ["soak/1"])
    h.at(150)
    h.rebalance("g0", [], ["soak/0"])
    h.rebalance("g0", ["soak/0"])
    h.at(200)
    h.commit("g0", {"soak/0": 3})
    h.commit("g1", {})
    assert_only(check(h.ops, CheckConfig(client_fault_windows=((40 * s, 60 * s),))), "unexpected-rebalance")
    h2 = History()  # g1 revoked, then its process ended: it takes no part in g0's later rebalance
    _three_sends(h2)
    h2.subscribe("g0", ["soak"])
    h2.subscribe("g1", ["soak"])
    h2.rebalance("g0", ["soak/0"])
    h2.rebalance("g1", ["soak/1"])
    h2.poll("g0", {"soak/0": [(0, 1), (1, 2), (2, 3)]})
    h2.at(86)
    h2.rebalance("g1", [], ["soak/1"])
    h2.commit("g1", {})  # its last op
    h2.at(150)
    h2.rebalance("g0", [], ["soak/0"])
    h2.rebalance("g0", ["soak/0"])
    h2.at(200)
    h2.commit("g0", {"soak/0": 3})
    assert_only(check(h2.ops, CheckConfig(client_fault_windows=((40 * s, 60 * s),))), "unexpected-rebalance")
