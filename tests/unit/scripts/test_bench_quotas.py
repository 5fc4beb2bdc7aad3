"""``zkafka bench quotas``' pure parts: the quota configurations and their order, how the broker's
``/api/v1/quotas`` answer is read, the (b)/(a) ratios and goals, the report and its section of BENCHMARKS.md."""
from __future__ import annotations

import json

import pytest

from scripts.bench import quotas as bench
from scripts.bench.suite.scenarios import BY_ID, Summary
from scripts.cli import main

P1, C1 = BY_ID["P1"], BY_ID["C1"]


def test_no_quota_is_an_empty_config_and_not_hit_sets_all_three_sensors_far_above_any_load():
    assert bench.quota_config("none", P1) == {}
    not_hit = {"producer_byte_rate": "10000000000", "consumer_byte_rate": "10000000000",
               "request_percentage": "1000000"}
    assert bench.quota_config("not-hit", P1) == bench.quota_config("not-hit", C1) == not_hit


def test_the_hit_quota_is_the_scenarios_own_byte_rate():
    assert bench.quota_config("hit", P1, 2_500_000) == {"producer_byte_rate": "2500000"}
    assert bench.quota_config("hit", C1, 2_500_000) == {"consumer_byte_rate": "2500000"}
    with pytest.raises(ValueError, match="unknown quota configuration"):
        bench.quota_config("some", P1)


def test_the_hit_rate_is_the_payload_over_hit_seconds_unless_given():
    assert P1.payload_bytes == 100_000_000
    assert bench.hit_rate(P1, 40) == 2_500_000
    assert bench.hit_rate(P1, 40, override=20e6) == 20_000_000


def test_scenarios_are_p1_and_c1_scaled_as_the_suite_scales_them():
    assert [s.id for s in bench.scenarios()] == ["P1", "C1"]
    assert [s.records for s in bench.scenarios(0.05)] == [50_000, 50_000]
    assert [s.records for s in bench.scenarios(0.0001)] == [1000, 1000]  # the suite's floor


def test_the_schedule_alternates_none_and_not_hit_and_runs_hit_last_in_each_repetition():
    assert bench.schedule(3, 40) == [(0, "none"), (0, "not-hit"), (0, "hit"), (1, "not-hit"), (1, "none"),
                                     (1, "hit"), (2, "none"), (2, "not-hit"), (2, "hit")]
    assert bench.schedule(2, 0) == [(0, "none"), (0, "not-hit"), (1, "not-hit"), (1, "none")]
    assert bench.configurations(0) == ("none", "not-hit")


def _answer(quotas: dict | None, sensors=()) -> dict:
    entities = [] if quotas is None else [{"user": None, "client_id": "<default>", "entity": "client-id default",
                                           "quotas": quotas}]
    return {"broker_id": 1, "entities": entities, "sensors": list(sensors)}


def test_a_configuration_is_applied_when_the_broker_shows_exactly_its_quotas():
    config = bench.quota_config("not-hit", P1)
    shown = {"consumer_byte_rate": 1e10, "producer_byte_rate": 1e10, "request_percentage": 1e6}
    assert bench.applied(_answer(shown), config)
    assert not bench.applied(_answer({"producer_byte_rate": 1e10}), config)  # a change half read
    assert not bench.applied(_answer(None), config)
    assert bench.applied(_answer(None), {})
    assert not bench.applied(_answer(shown), {})  # "none" needs the quotas gone
    assert bench.applied(_answer({"producer_byte_rate": 2500000.0}), {"producer_byte_rate": "2500000"})


def _sensor(quota_type: str, client_id: str, ms: int, responses: int) -> dict:
    return {"broker": 1, "quota_type": quota_type, "user": "", "client_id": client_id,
            "throttle_time_ms_total": ms, "throttled_responses": responses}


def test_throttle_time_is_what_the_sensors_added_during_the_run():
    before = bench.throttle_totals(_answer({}, [_sensor("Produce", "rdkafka", 500, 2)]))
    after = bench.throttle_totals(_answer({}, [_sensor("Produce", "rdkafka", 1700, 5),
                                               _sensor("Produce", "other", 300, 1)]))  # a sensor new this run
    assert bench.throttled_between(before, after) == (1500, 4)
    assert bench.throttled_between({}, {}) == (0, 0)


def _s(median: float, low: float | None = None, high: float | None = None) -> Summary:
    """One run's value, or the median and range of three."""
    if low is None:
        return Summary(median, median, median, 1)
    return Summary(median, low, high, 3)


SUMMARIES = {
    "none": {"P1": {"records_per_s": _s(600_000, 570_000, 650_000), "cpu_s_per_gb": _s(4.0, 3.9, 4.2),
                    "mb_per_s": _s(60.0), "throttle_ms": _s(0), "broker_cpu_s": _s(0.4)},
             "C1": {"records_per_s": _s(800_000, 780_000, 820_000), "cpu_s_per_gb": _s(0.5)}},
    "not-hit": {"P1": {"records_per_s": _s(580_000), "cpu_s_per_gb": _s(4.1)},
                "C1": {"records_per_s": _s(700_000), "cpu_s_per_gb": _s(0.6)}},
    "hit": {"P1": {"records_per_s": _s(30_000), "mb_per_s": _s(3.0), "throttle_ms": _s(25_000),
                   "throttled_responses": _s(30)}},
}


def test_ratios_are_medians_of_not_hit_over_none():
    assert bench.ratio(SUMMARIES, "P1", "cpu_s_per_gb") == pytest.approx(4.1 / 4.0)
    assert bench.ratio(SUMMARIES, "P1", "records_per_s") == pytest.approx(580 / 600)
    assert bench.ratio(SUMMARIES, "P1", "us_per_record") is None  # not measured
    assert bench.ratio({"none": {"C1": {"cpu_s_per_gb": _s(0.0)}}, "not-hit": {"C1": {"cpu_s_per_gb": _s(0.1)}}},
                       "C1", "cpu_s_per_gb") is None  # below /proc's resolution: no ratio
    low, high = bench.spread(SUMMARIES["none"]["P1"]["records_per_s"])
    assert (low, high) == (pytest.approx(-0.05), pytest.approx(650 / 600 - 1))
    assert bench.spread(None) is None


def test_the_cpu_resolution_is_one_proc_tick_over_nones_broker_cpu():
    assert bench.resolution(SUMMARIES, "P1", tick_s=0.01) == pytest.approx(0.025)
    assert bench.resolution(SUMMARIES, "C1") is None  # not measured


def test_goals_are_five_percent_cpu_and_records_per_s_within_nones_range():
    by_name = {g.name: g for g in bench.goals(SUMMARIES)}
    assert by_name["P1 broker CPU-s/GB (b)/(a)"].met is True  # 1.025
    assert by_name["C1 broker CPU-s/GB (b)/(a)"].met is False  # 1.2
    assert by_name["P1 records/s (b)/(a)"].met is True  # 580k >= the slowest (a) run, 570k
    assert by_name["C1 records/s (b)/(a)"].met is False  # 700k < 780k
    assert by_name["C1 records/s (b)/(a)"].target == "≥ (a)'s slowest run (0.975)"
    unmeasured = bench.goals({"none": {}, "not-hit": {}})
    assert [g.met for g in unmeasured] == [None] * 4


def _result() -> dict:
    return {"date": "2026-11-27 18:00 UTC",
            "machine": {"cpu": "AMD EPYC", "cores": 2, "memory_gib": 23.5, "kernel": "6.18", "python": "3.11.7",
                        "confluent_kafka": "2.16.1", "librdkafka": "2.16.0"},
            "options": {"reps": 3, "records_scale": 1.0, "hit_seconds": 40.0, "hit_rate": None,
                        "session_timeout_ms": 6000},
            "scenarios": {"P1": P1.title, "C1": C1.title}, "configurations": ["none", "not-hit", "hit"],
            "hit_rates": {"P1": 2_500_000, "C1": 2_500_000},
            "runs": {"none": {"P1": [{}], "C1": [{"error": "TimeoutError: late"}]}},
            "summaries": SUMMARIES, "goals": bench.goals(SUMMARIES)}


def test_the_report_has_each_configuration_the_ratios_goals_and_the_hit_quota():
    text = bench.render(_result(), "zkafka bench quotas")
    assert "- **Command:** `zkafka bench quotas`" in text
    assert "AMD EPYC, 2 cores, 23.5 GiB" in text
    assert "`request_percentage=1000000`" in text and "P1 `producer_byte_rate=2500000`" in text
    assert "| P1 | (a) no quota | 600,000 [570,000–650,000] | 60.0 | 4.00 [3.90–4.20] | — | 0 | — |" in text
    assert "| P1 | (b) configured, not hit | 580,000 | — | 4.10 |" in text
    assert "| P1 | 0.967 | 1.025 | −5 % … +8 % | 2.5% |" in text  # 10 ms ticks (CLOCK_TICKS 100)
    assert "| C1 | 0.875 | 1.200 | −3 % … +2 % | — |" in text
    assert "| C1 broker CPU-s/GB (b)/(a) | ≤ 1.05 | 1.200 | missed |" in text
    assert "| P1 | 2.50 | 3.00 | 1.20 | 25,000 | 30 |" in text
    assert "| C1 | 2.50 | — | — | — | — |" in text
    assert "- C1 (a) no quota: TimeoutError: late" in text


def test_without_hit_the_report_leaves_c_out():
    result = {**_result(), "configurations": ["none", "not-hit"], "hit_rates": {},
              "options": {**_result()["options"], "hit_seconds": 0.0}}
    text = bench.render(result, "zkafka bench quotas --hit-seconds 0")
    assert "(c)" not in text and "| P1 | (a) no quota |" in text


def test_the_section_is_appended_once_then_replaced_between_its_markers(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\n## Other\n\ntext\n")
    bench.write_section(path, "first")
    bench.write_section(path, "second\n")
    text = path.read_text()
    assert text.count(bench.HEADING) == 1 and "first" not in text
    assert text == (f"# Benchmarks\n\n## Other\n\ntext\n\n{bench.HEADING}\n\n{bench.BEGIN}\nsecond\n{bench.END}\n")
    path.write_text(text + "\n## Later\n\nhand-written\n")
    bench.write_section(path, "third")
    assert path.read_text().endswith(f"{bench.BEGIN}\nthird\n{bench.END}\n\n## Later\n\nhand-written\n")


def test_the_result_is_json_with_summaries_and_goals_as_objects():
    import dataclasses

    text = json.dumps(_result(), default=lambda o: dataclasses.asdict(o))
    assert json.loads(text)["summaries"]["none"]["P1"]["records_per_s"]["median"] == 600_000


@pytest.mark.parametrize("flags", [["--reps", "0"], ["--records-scale", "0"], ["--hit-seconds", "5"],
                                   ["--hit-rate", "0"]])
def test_bad_flags_exit_through_the_parser(flags, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "quotas", *flags])
    assert exc.value.code == 2
    assert "zkafka bench quotas" in capsys.readouterr().err
