"""``zkafka bench security``'s pure parts: the ACL mix, the decision cases and their rates, the grants, the
ACL znodes written before the brokers start, the summary, the report and the flags."""
from __future__ import annotations

import argparse
import os
from collections import Counter

import pytest

from brokers.security import acls as acl
from brokers.security.authorizer import pattern_znode
from brokers.zk.paths import AclZNode
from scripts import cli
from scripts.bench.security import ENVIRONMENT, _environment, format_report, grants, rotated, summarize
from scripts.bench.security_acls import CASES, acl_mix, count_entries, decision, format_decisions, rate, run_decisions
from scripts.bench.security_options import MODES, options_from_args


def kinds(acls):
    """How many entries of each kind (resource type, pattern type, permission) the mix holds."""
    return Counter((p.resource_type, p.pattern_type, e.permission) for p, es in acls.items() for e in es)


@pytest.mark.parametrize("n", [0, 1, 39, 40, 100, 1000, 10_000])
def test_the_mix_holds_exactly_n_entries_and_is_deterministic(n):
    acls = acl_mix(n)
    assert count_entries(acls) == n
    assert acls == acl_mix(n)
    assert all(entries for entries in acls.values())  # no empty pattern: the store never keeps one


def test_the_mix_is_70_15_5_5_5_with_one_wildcard():
    acls = acl_mix(10_000)
    assert kinds(acls) == {(acl.TOPIC, acl.LITERAL, acl.ALLOW): 7000,  # 6999 literal topics + the wildcard
                           (acl.TOPIC, acl.PREFIXED, acl.ALLOW): 1500, (acl.TOPIC, acl.LITERAL, acl.DENY): 500,
                           (acl.TOPIC, acl.PREFIXED, acl.DENY): 500, (acl.GROUP, acl.LITERAL, acl.ALLOW): 500}
    assert acls[acl.ResourcePattern(acl.TOPIC, "*")] == {acl.AclEntry("User:monitor", "*", acl.DESCRIBE, acl.ALLOW)}
    prefixes = [p for p in acls if p.pattern_type == acl.PREFIXED and p.name.endswith(".")]
    assert len(prefixes) == 100 and all(len(acls[p]) == 15 for p in prefixes)  # ~15 services per team prefix


@pytest.mark.parametrize("n", [40, 100, 10_000])
def test_every_case_gets_its_answer_once_the_mix_has_its_acls(n):
    acls = acl_mix(n)
    assert {case: decision(acls, case)() for case in CASES} == {case: spec[4] for case, spec in CASES.items()}


def test_without_acls_only_the_super_user_is_allowed():
    assert {case: decision({}, case)() for case in CASES} == {case: case == "super user" for case in CASES}


def test_decision_rates_and_their_table():
    rows = run_decisions((0, 100), min_seconds=0.005)
    assert [(r["acls"], r["patterns"]) for r in rows] == [(0, 0), (100, 87)]
    assert all(c["per_s"] > 0 for r in rows for c in r["cases"].values()) and all(r["decide_any_per_s"] > 0 for r in rows)
    assert rows[1]["cases"]["miss (no matching acl)"]["answer"] is False
    lines = format_decisions(rows)
    assert len(lines) == 4 and all(line.count("|") == len(CASES) + 3 for line in lines)
    assert lines[2].startswith("| 0 (0) | ") and "(deny)" in lines[2] and lines[3].startswith("| 100 (87) | ")


def test_rate_counts_calls_per_second():
    calls = []
    assert rate(lambda: calls.append(1), min_seconds=0.01, rounds=2) > 1000
    assert len(calls) > 100


def test_grants_cover_the_bench_topics_and_the_consumer_group():
    acls = grants("User:alice")
    assert acl.decide(acl.matching_acls(acls, acl.TOPIC, "bench-2"), "User:alice", "h", acl.WRITE)
    assert acl.decide(acl.matching_acls(acls, acl.TOPIC, "bench-2"), "User:alice", "h", acl.CREATE)
    assert acl.decide(acl.matching_acls(acls, acl.GROUP, "bench-consume"), "User:alice", "h", acl.DESCRIBE)
    assert not acl.decide(acl.matching_acls(acls, acl.TOPIC, "other"), "User:alice", "h", acl.READ)
    assert not acl.decide(acl.matching_acls(acls, acl.TOPIC, "bench-2"), "User:bob", "h", acl.READ)


def test_pattern_znode_is_kafkas_layout():
    entries = acl_mix(40)[acl.ResourcePattern(acl.TOPIC, "team1.", acl.PREFIXED)]
    path, data = pattern_znode(acl.ResourcePattern(acl.TOPIC, "team1.", acl.PREFIXED), entries)
    assert path == "/kafka-acl-extended/prefixed/Topic/team1."
    assert sorted(AclZNode.decode(data), key=lambda a: a["principal"]) == [
        {"principal": "User:svc34", "permissionType": "Allow", "operation": "All", "host": "*"},
        {"principal": "User:svc35", "permissionType": "Allow", "operation": "All", "host": "*"},
        {"principal": "User:svc36", "permissionType": "Allow", "operation": "All", "host": "*"}]


def run(mode, rep, produce, consume):
    def side(rate):
        return {"records_per_s": rate, "broker_cpu_s_per_gb": rate / 1e5}
    return {"mode": mode, "rep": rep, "produce": side(produce), "consume": side(consume)}


def test_each_mode_goes_first_once_per_cycle():
    orders = [rotated(MODES, rep) for rep in range(len(MODES) + 1)]
    assert [o[0] for o in orders] == [*MODES, MODES[0]]
    assert all(sorted(o) == sorted(MODES) for o in orders)


def test_summary_takes_medians_and_ratios_to_plaintext():
    runs = [run("plaintext", 0, 100, 200), run("ssl", 0, 50, 100), run("plaintext", 1, 300, 400),
            run("ssl", 1, 70, 120), run("plaintext", 2, 200, 300), run("ssl", 2, 60, 80)]
    rows = summarize(runs, ("plaintext", "ssl"))
    assert [(r["kind"], r["mode"], r["n"], r["median"], r["min"], r["max"]) for r in rows] == [
        ("produce", "plaintext", 3, 200, 100, 300), ("produce", "ssl", 3, 60, 50, 70),
        ("consume", "plaintext", 3, 300, 200, 400), ("consume", "ssl", 3, 100, 80, 120)]
    assert [r["vs_plaintext"] for r in rows] == [1.0, 0.3, 1.0, pytest.approx(1 / 3)]
    assert summarize(runs, ("ssl", "plaintext"))[0]["vs_plaintext"] == 0.3  # plaintext need not come first
    assert summarize(runs[1::2], ("ssl",))[0]["vs_plaintext"] is None  # no plaintext to compare with


def test_environment_is_set_inside_the_block_and_restored(monkeypatch):
    monkeypatch.setenv("ZKAFKA_BENCH_KEPT", "before")
    monkeypatch.delenv("ZKAFKA_BENCH_NEW", raising=False)
    with _environment({"ZKAFKA_BENCH_KEPT": "inside", "ZKAFKA_BENCH_NEW": "0"}):
        assert os.environ["ZKAFKA_BENCH_KEPT"] == "inside" and os.environ["ZKAFKA_BENCH_NEW"] == "0"
    assert os.environ["ZKAFKA_BENCH_KEPT"] == "before" and "ZKAFKA_BENCH_NEW" not in os.environ
    assert ENVIRONMENT == {"plaintext-pread": {"ZKAFKA_SENDFILE_MIN_BYTES": "0"}}  # the listener's switch


def test_report_has_every_table():
    result = {"machine": {"cpu": "CPU", "cores": 2, "memory_gib": 4.0, "kernel": "6.1", "python": "3.11",
                          "confluent_kafka": "2.16", "librdkafka": "2.16"},
              "options": {"records": 1000, "record_bytes": 100, "reps": 3, "acls": 10, "logins": 5},
              "decisions": run_decisions((0,), min_seconds=0.005),
              "throughput": summarize([run("plaintext", 0, 1e6, 2e6), run("ssl", 0, 5e5, 1e6)], ("plaintext", "ssl")),
              "logins": [{"connection": "SSL", "logins": 5, "per_s": 500.0, "p50_ms": 1.5, "p99_ms": 2.25,
                          "broker_cpu_ms": 0.4, "client_cpu_ms": 1.2}],
              "credential_read": {"reads": 5, "p50_ms": 0.38, "p99_ms": 0.5, "cpu_ms": 0.2}, "pbkdf2_ms": 2.07}
    lines = format_report(result)
    assert "| produce | ssl | 500,000 [500,000-500,000] | 50.0 | 5.00 | 0.50 |" in lines
    assert "| consume | plaintext | 2,000,000 [2,000,000-2,000,000] | 200.0 | 20.00 | 1.00 |" in lines
    assert "| SSL | 500 | 1.50 | 2.25 | 0.40 | 1.20 |" in lines
    assert lines[-1].startswith("SCRAM's ZooKeeper read of /config/users/alice alone: p50 0.38 ms") and "0.20 CPU-ms per read" in lines[-1] and "2.07 ms" in lines[-1]


def args(**overrides):
    values = {"records": 10, "record_size": 100, "reps": 1, "logins": 1, "acls": 0, "modes": ",".join(MODES),
              "decision_sizes": "0,100", "decision_seconds": 0.1, "dir": None}
    return argparse.Namespace(**{**values, **overrides})


def test_options_from_flags():
    options = options_from_args(args(modes="ssl, plaintext", decision_sizes="5,0"))
    assert options.modes == ("ssl", "plaintext") and options.decision_sizes == (5, 0) and options.records == 10


@pytest.mark.parametrize("overrides, flag", [
    ({"records": 0}, "--records"), ({"record_size": -1}, "--record-size"), ({"reps": 0}, "--reps"),
    ({"logins": 0}, "--logins"), ({"acls": -1}, "--acls"), ({"decision_seconds": 0}, "--decision-seconds"),
    ({"decision_sizes": "1,x"}, "--decision-sizes"), ({"decision_sizes": "-1"}, "--decision-sizes"),
    ({"modes": "plaintext,tls"}, "--modes"), ({"modes": ","}, "--modes")])
def test_a_bad_flag_is_named(overrides, flag):
    with pytest.raises(ValueError, match=flag):
        options_from_args(args(**overrides))


def test_the_cli_exits_2_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench", "security", "--modes", "kerberos"])
    assert exit_info.value.code == 2
    assert "--modes: unknown mode(s) kerberos" in capsys.readouterr().err
