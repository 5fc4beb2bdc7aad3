"""``zkafka bench scale``'s pure parts: flags, metadata checks, slopes, percentiles, the report and the plot."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from scripts.bench.scale import (STEPS, all_led, disagreement, full_and_agreeing, in_every_isr, leaders_moved, led_by,
                                 p50_p99_ms, parse_sizes, parse_steps, per_replica, slope_ms, status_kib, topic_layout)
from scripts.bench.scale_report import cell, format_report, latency_table, plot_svg, times_table
from scripts.cli import main


def state(leader, isr, replicas=(1, 2, 3)):
    return {"leader": leader, "leader_epoch": 0, "isr": list(isr), "replicas": list(replicas), "offline_replicas": []}


def test_sizes_keep_their_order_and_refuse_nonsense():
    assert parse_sizes("1000, 5000,10_000") == [1000, 5000, 10000]
    for bad, named in (("1000,x", "'x'"), ("0", "positive"), ("-5", "positive"), ("100,100", "twice"), ("", "''")):
        with pytest.raises(ValueError, match=named):
            parse_sizes(bad)


def test_steps_come_back_in_run_order_with_their_prerequisites():
    assert parse_steps("failover,latency") == ("create", "latency", "failover")
    assert parse_steps("restart") == ("create", "controlled_shutdown", "restart")
    assert parse_steps(",".join(STEPS)) == STEPS
    with pytest.raises(ValueError, match="unknown step.*nope"):
        parse_steps("create,nope")
    with pytest.raises(ValueError, match="no step"):
        parse_steps(" , ")


def test_topic_layout_covers_the_partitions_exactly():
    layout = topic_layout(1050, 100)
    assert len(layout) == 11 and layout[0] == ("scale-00000", 100) and layout[-1] == ("scale-00010", 50)
    assert sum(n for _, n in layout) == 1050 and len({t for t, _ in layout}) == 11
    assert topic_layout(5, 100) == [("scale-00000", 5)]
    with pytest.raises(ValueError):
        topic_layout(0, 100)


def test_all_led_needs_every_partition_with_a_live_leader():
    view = {"scale-00000-0": state(1, [1, 2, 3]), "scale-00000-1": state(2, [2, 3]), "__consumer_offsets-0": state(-1, [])}
    assert all_led(view, 2, [1, 2, 3])
    assert not all_led(view, 3, [1, 2, 3])  # one not known yet
    assert not all_led(view, 2, [2, 3])  # broker 1 is dead
    assert not all_led(None, 2, [1, 2, 3])  # no answer
    assert led_by(view, 2) == {"scale-00000-1"}
    assert leaders_moved(view, {"scale-00000-1"}, [2, 3]) and not leaders_moved(view, {"scale-00000-0"}, [2, 3])
    assert not leaders_moved(view, {"scale-00000-9"}, [1, 2, 3])


def test_in_every_isr_looks_only_at_the_brokers_replicas():
    view = {"scale-00000-0": state(1, [1, 2, 3]), "scale-00000-1": state(2, [2, 3], replicas=(2, 3))}
    assert in_every_isr(view, 1, 2)
    view["scale-00000-2"] = state(2, [2, 3])
    assert not in_every_isr(view, 1, 3)


def test_full_and_agreeing_compares_leader_and_isr_across_brokers():
    full = {"scale-00000-0": state(1, [1, 2, 3]), "scale-00000-1": state(2, [3, 2, 1])}
    assert full_and_agreeing({1: full, 2: dict(full), 3: dict(full)}, 2)
    other = {**full, "scale-00000-1": state(3, [1, 2, 3])}
    assert not full_and_agreeing({1: full, 2: other}, 2)  # a different leader
    short = {**full, "scale-00000-1": state(2, [2, 3])}
    assert not full_and_agreeing({1: short, 2: short}, 2)  # agreeing, but an ISR is short
    assert "1 without leader or full ISR" in disagreement({1: short}, 2)
    assert not full_and_agreeing({1: full, 2: None}, 2)
    assert "no metadata from broker(s) [2]" == disagreement({1: full, 2: None}, 2)
    assert not full_and_agreeing({1: full}, 3)


def test_slope_percentiles_and_proc_fields():
    assert slope_ms(2.0, 1000) == 2.0 and slope_ms(17, 100_000) == pytest.approx(0.17)
    with pytest.raises(ValueError):
        slope_ms(1.0, 0)
    summary = p50_p99_ms([i / 1000 for i in range(1, 101)])
    assert summary == {"count": 100, "p50_ms": pytest.approx(50.0), "p99_ms": pytest.approx(99.0)}
    assert status_kib("Name:\tpython\nVmRSS:\t  81234 kB\n", "VmRSS") == 81234
    assert status_kib("Name:\tpython\n", "VmRSS") == 0
    assert per_replica(3000, 1000, 1000) == 2.0 and per_replica(1, 0, 0) == 0.0


def result(*sizes):
    m = {"cpu": "cpu", "cores": 2, "memory_gib": 8, "kernel": "k", "python": "3.11", "confluent_kafka": "2",
         "librdkafka": "2"}
    return {"machine": m, "brokers": 3, "replication_factor": 3, "session_timeout_ms": 6000, "topic_partitions": 100,
            "idle_seconds": 10, "steps": list(STEPS), "sizes": list(sizes)}


SIZE_1000 = {"partitions": 1000, "notes": [], "steps": {
    "create": {"seconds": 10.0, "answered_s": 0.5, "mode": "one CreateTopics request with 10 topics", "topics": 10},
    "failover": {"seconds": 2.0, "total_s": 8.0, "new_controller_s": 6.5, "old": 1},
    "uncontrolled": {"seconds": 1.0, "total_s": 7.0, "broker": 2, "led": 500}}}
SIZE_5000 = {"partitions": 5000, "notes": ["failover: x"], "steps": {
    "create": {"seconds": 50.0, "answered_s": 1.0, "mode": "m", "topics": 50},
    "failover": {"seconds": None, "status": "failover: timeout (> 310 s)"}}}


def test_table_has_seconds_and_slopes_per_size_and_kafkas_column():
    table = times_table(result(SIZE_1000, SIZE_5000))
    assert table[0].startswith("| step | 1,000 partitions | 5,000 partitions | Kafka's slope")
    create = next(line for line in table if line.startswith("| topic creation"))
    assert "10.00 s (10.00)" in create and "50.00 s (10.00)" in create
    failover = next(line for line in table if line.startswith("| controller failover"))
    assert "2.00 s (2.00)" in failover and "timeout (> 310 s)" in failover and "0.17" in failover
    # an unclean failure's slope is per partition the broker led
    assert cell(SIZE_1000, "uncontrolled") == "1.00 s (2.00)"
    assert cell(SIZE_5000, "uncontrolled") == "-"
    assert table[-1] == "| creation rate (partitions/s) | 100 | 100 | |"


def test_latency_table_shows_l1_beside_the_idle_partitions_when_measured():
    lat = {"metadata": {"p50_ms": 8.4, "p99_ms": 85.0}, "produce_fetch": {"p50_ms": 0.73, "p99_ms": 9.71}}
    l1 = {"end_to_end": {"p50_ms": 1.5, "p99_ms": 4.25}, "ack": {}, "failed": 0, "achieved_per_s": 9999.0}
    rows = latency_table(result({"partitions": 10000, "latency": lat, "l1": l1}, {"partitions": 1000, "latency": lat}))
    assert "L1 beside them" in rows[0]
    assert rows[2] == "| 10,000 | 8.4 / 85.0 | 0.73 / 9.71 | 1.50 / 4.25 |"
    assert rows[3] == "| 1,000 | 8.4 / 85.0 | 0.73 / 9.71 | - |"


def test_report_and_plot_render():
    lines = format_report(result(SIZE_1000, SIZE_5000))
    assert any("one CreateTopics request with 10 topics" in line for line in lines)
    assert any("5,000: failover: x" in line for line in lines)
    svg = ET.fromstring(plot_svg(result(SIZE_1000, SIZE_5000)))
    lines = [e for e in svg.iter("{http://www.w3.org/2000/svg}polyline")]
    assert len(lines) == 4  # create, failover, failover_new_controller, uncontrolled
    assert ET.fromstring(plot_svg(result()))  # nothing measured still renders


@pytest.mark.parametrize("argv, named", [
    (["bench", "scale", "--partitions", "1000,abc"], "--partitions"),
    (["bench", "scale", "--steps", "create,warp"], "--steps"),
    (["bench", "scale", "--brokers", "1"], "--brokers"),
    (["bench", "scale", "--replication-factor", "4"], "--replication-factor"),
    (["bench", "scale", "--session-timeout-ms", "10"], "--session-timeout-ms"),
])
def test_bad_flags_name_the_problem(capsys, argv, named):
    with pytest.raises(SystemExit) as excinfo:
        main(argv)
    assert excinfo.value.code == 2
    assert named in capsys.readouterr().err
