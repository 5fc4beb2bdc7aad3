"""What the soak's runner reads from the growing histories (under way, caught up) and the cluster's metadata
(each key led by a live broker after the heal), and its safe and unsafe configurations."""
from __future__ import annotations

from scripts.soak.drain import AvailabilityClock, HistoryTail, Progress
from scripts.soak.history import FAIL, INVOKE, OK, HistoryWriter, Op
from scripts.soak.topics import full_isr, led_keys, plan_keys, plan_topics
from scripts.soak.workloads.launcher import WorkloadPlan

EOS = {"txn-in": "txn-out"}


def ok(process: str, f: str, value, t: int = 0) -> Op:
    return Op(t, process, 0, OK, f, value)


def poll(process: str, reads: dict) -> Op:
    return ok(process, "poll", [["poll", reads]])


def txn(process: str, in_key: str, read: list, out_key: str, sent: list, type_: str = OK) -> Op:
    return Op(0, process, 0, type_, "txn", [["poll", {in_key: read}], *(["send", out_key, s] for s in sent)])


def test_tail_reads_only_complete_new_lines(tmp_path):
    tail = HistoryTail(tmp_path)
    assert tail.read() == []
    writer = HistoryWriter(tmp_path / "history-producer-0.jsonl", "producer-0")
    op = writer.invoke("send", [["send", "soak/0", 5]])
    assert [o.type for o in tail.read()] == [INVOKE]
    line = Op(1, "producer-0", op, OK, "send", [["send", "soak/0", [0, 5]]]).to_json()
    with open(tmp_path / "history-producer-0.jsonl", "a") as f:
        f.write(line[:20])
        f.flush()
        assert tail.read() == []  # half a line waits
        f.write(line[20:] + "\n")
    (o,) = tail.read()
    assert (o.type, o.value) == (OK, [["send", "soak/0", [0, 5]]])
    assert tail.read() == []
    (tmp_path / "not-a-history.log").write_text("junk\n")
    assert tail.read() == []


def test_under_way_needs_an_ok_send_and_an_ok_poll():
    p = Progress()
    p.absorb([Op(0, "producer-0", 0, INVOKE, "send", [["send", "soak/0", 1]]), ok("reader-0", "assign", [["assign", ["soak/0"]]])])
    assert not p.under_way
    p.absorb([ok("producer-0", "send", [["send", "soak/0", [0, 1]]])])
    assert not p.under_way
    p.absorb([poll("reader-0", {})])
    assert p.under_way


def test_readers_catch_up_to_the_high_watermark():
    p = Progress()
    p.absorb([ok("reader-0", "assign", [["assign", ["soak/0", "soak/1"]]]),
              poll("reader-0", {"soak/0": [[0, 10], [1, 11]], "soak/1": [[0, 20]]})])
    assert p.lagging({"soak/0": 2, "soak/1": 3}) == {"reader-0": {"soak/1": (0, 2)}}
    p.absorb([poll("reader-0", {"soak/1": [[1, 21], [2, 22]]})])
    assert p.lagging({"soak/0": 2, "soak/1": 3}) == {}
    assert p.lagging({"soak/0": 2, "soak/1": 3, "soak/2": 0}) == {}  # an empty partition: nothing to read


def test_every_reader_must_catch_up_and_only_ok_polls_count():
    p = Progress()
    p.absorb([ok("reader-0", "assign", [["assign", ["soak/0"]]]), ok("reader-1", "assign", [["assign", ["soak/0"]]]),
              poll("reader-0", {"soak/0": [[0, 1], [1, 2]]}),
              Op(0, "reader-1", 1, FAIL, "poll", [["poll", {"soak/0": [[0, 1], [1, 2]]}]])])
    assert p.lagging({"soak/0": 2}) == {"reader-1": {"soak/0": (-1, 1)}}
    p.absorb([poll("group-0", {"soak/0": [[0, 1], [1, 2]]})])  # a group member is not a reader
    assert "group-0" not in p.lagging({"soak/0": 2})


def test_a_copier_output_is_caught_up_at_the_last_committed_send_not_the_high_watermark():
    """txn-out ends with control records: its high watermark is past the last record a reader can return."""
    p = Progress(EOS)
    p.absorb([ok("reader-0", "assign", [["assign", ["txn-out/0"]]]),
              txn("copier-0", "txn-in/0", [[0, 7], [1, 8]], "txn-out/0", [[0, 7], [1, 8]]),
              txn("copier-0", "txn-in/0", [[2, 9]], "txn-out/0", [[3, 9]], type_=FAIL),  # aborted
              poll("reader-0", {"txn-out/0": [[0, 7], [1, 8]]})])
    assert p.committed_sends == {"txn-out/0": 1}
    assert p.lagging({"txn-in/0": 2, "txn-out/0": 6}) == {}
    assert p.lagging({"txn-in/0": 3, "txn-out/0": 6}) == {"copiers": {"txn-in/0": (1, 2)}}
    p.absorb([txn("copier-0", "txn-in/0", [[2, 9]], "txn-out/0", [[5, 9]])])
    assert p.lagging({"txn-in/0": 3, "txn-out/0": 7}) == {"reader-0": {"txn-out/0": (1, 5)}}
    p.absorb([poll("reader-0", {"txn-out/0": [[5, 9]]})])
    assert p.lagging({"txn-in/0": 3, "txn-out/0": 7}) == {}


def test_a_copier_that_committed_nothing_yet_lags_on_every_input_partition():
    p = Progress(EOS)
    assert p.lagging({"txn-in/0": 4, "txn-in/1": 0, "soak/0": 9}) == {"copiers": {"txn-in/0": (-1, 3)}}


def health(leaders: dict[str, int], isr: list[int] | None = None) -> dict:
    return {"metadata": {"partitions": {k: {"leader": v, "isr": isr or [1, 2, 3]} for k, v in leaders.items()}}}


def test_led_keys_needs_a_live_leader_in_every_live_brokers_metadata():
    keys = ["soak/0", "soak/1", "txn-in/0"]
    views = {1: health({"soak-0": 1, "soak-1": 3, "txn-in-0": 2}), 2: health({"soak-0": 1, "soak-1": 2,
                                                                                "txn-in-0": -1}), 3: None}
    assert led_keys(views, keys) == {"soak/0"}  # soak-1: broker 3 is down; txn-in-0: broker 2 sees none
    assert led_keys({1: None, 2: None}, keys) == set()
    assert led_keys({1: health({"soak-0": 1})}, keys) == {"soak/0"}


def test_full_isr():
    keys = ["soak/0", "soak/1"]
    full = health({"soak-0": 1, "soak-1": 2})
    assert full_isr({1: full, 2: full, 3: full}, keys, [1, 2, 3])
    assert not full_isr({1: full, 2: full, 3: None}, keys, [1, 2, 3])
    assert not full_isr({1: full, 2: health({"soak-0": 1, "soak-1": 2}, isr=[1, 2])}, keys, [1, 2, 3])
    assert not full_isr({1: health({"soak-0": 1})}, keys, [1, 2, 3])


def test_availability_clock_counts_from_the_heal():
    clock = AvailabilityClock(healed_at_ns=10**9, keys=["a/0", "a/1"])
    clock.observe(2 * 10**9, {"a/0"})
    assert not clock.all_led
    clock.observe(4 * 10**9, {"a/0", "a/1"})
    clock.observe(5 * 10**9, {"a/0", "a/1"})
    assert clock.all_led and clock.leaderless_after_heal() == {"a/0": 1.0, "a/1": 3.0}


def test_a_key_that_loses_its_leader_again_counts_until_it_is_led_for_good():
    """A broker back from the heal without metadata makes its keys leaderless in its view again."""
    clock = AvailabilityClock(healed_at_ns=0, keys=["a/0"])
    clock.observe(1 * 10**9, {"a/0"})
    clock.observe(2 * 10**9, set())
    assert not clock.all_led
    clock.observe(7 * 10**9, {"a/0"})
    clock.observe(9 * 10**9, {"a/0"})
    assert clock.all_led and clock.leaderless_after_heal() == {"a/0": 7.0}


def test_a_key_not_led_at_the_end_counts_the_whole_observation():
    clock = AvailabilityClock(healed_at_ns=0, keys=["a/0", "a/1"])
    clock.observe(10 * 10**9, {"a/1"})
    clock.observe(90 * 10**9, {"a/0"})
    assert clock.leaderless_after_heal() == {"a/0": 90.0, "a/1": 90.0}


def test_plan_topics_and_keys():
    assert plan_topics(WorkloadPlan()) == {"soak": 6, "txn-in": 2, "txn-out": 2}
    assert plan_topics(WorkloadPlan(copiers=False, partitions=3)) == {"soak": 3}
    assert plan_keys(WorkloadPlan(copiers=False, partitions=2)) == ["soak/0", "soak/1"]
