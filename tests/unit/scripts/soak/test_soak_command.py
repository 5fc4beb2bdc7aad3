"""``zkafka soak``'s flags: defaults, every bad flag named (argparse's exit 2), the harness's failure as exit 3."""
from __future__ import annotations

from pathlib import Path

import pytest

from scripts.cli import main
from scripts.soak import command, runner
from scripts.soak.checker.model import client_fault_windows
from scripts.soak.nemesis.schedule import KINDS
from scripts.soak.runner import SoakHarnessError, SoakOptions, SoakOutcome


@pytest.fixture
def captured(monkeypatch):
    """run_soak replaced: the options it was called with."""
    calls: list[SoakOptions] = []

    def fake(options: SoakOptions) -> SoakOutcome:
        calls.append(options)
        return SoakOutcome(result=None, report=Path("r.html"), out_dir=Path("."), fault_counts={}, valid=True)
    monkeypatch.setattr(runner, "run_soak", fake)
    return calls


def test_defaults(captured):
    assert main(["soak"]) == 0
    (o,) = captured
    assert (o.minutes, o.seed, o.brokers, o.out_dir, o.kinds, o.unsafe) == (3.0, None, 3, None, None, False)
    assert (o.mean_interval_s, o.drain_min_s) == (12.0, 60.0) and o.drain_max_s >= 180
    assert (o.plan.rate, o.plan.partitions, o.plan.acks, o.plan.idempotence, o.plan.copiers) == (500, 6, "all", True,
                                                                                                 True)
    assert o.command == "zkafka soak"


def test_every_flag(captured, tmp_path):
    argv = ["soak", "--minutes", "0.5", "--seed", "42", "--brokers", "5", "--faults", "kill-leader, pause-broker",
            "--mean-interval-s", "8", "--drain-seconds", "20", "--out", str(tmp_path), "--unsafe", "--rate", "900",
            "--partitions", "4"]
    assert main(argv) == 0
    (o,) = captured
    assert (o.minutes, o.seed, o.brokers, o.kinds, o.mean_interval_s, o.drain_min_s, o.out_dir, o.unsafe) == (
        0.5, 42, 5, ["kill-leader", "pause-broker"], 8.0, 20.0, tmp_path, True)
    assert o.drain_max_s >= 60 and (o.plan.rate, o.plan.partitions) == (900, 4)
    assert o.command.startswith("zkafka soak --minutes 0.5 --seed 42")


@pytest.mark.parametrize("argv, problem", [
    (["--brokers", "2"], "--brokers must be 3 to 5"),
    (["--brokers", "6"], "--brokers must be 3 to 5"),
    (["--minutes", "0"], "--minutes must be positive"),
    (["--mean-interval-s", "-1"], "--mean-interval-s must be positive"),
    (["--drain-seconds", "-5"], "--drain-seconds must not be negative"),
    (["--rate", "0"], "--rate and --partitions must be positive"),
    (["--partitions", "0"], "--rate and --partitions must be positive"),
    (["--faults", "kill-leader,nuke-datacenter"], "unknown fault kind(s) nuke-datacenter"),
    (["--faults", ","], "unknown fault kind(s) (none given)"),
    (["--seed", "x"], "argument --seed: invalid int value"),
    (["--minutes"], "argument --minutes: expected one argument"),
    (["--wat"], "unrecognized arguments: --wat"),
])
def test_a_bad_flag_is_named_and_exits_2(captured, capsys, argv, problem):
    with pytest.raises(SystemExit) as exc:
        main(["soak", *argv])
    assert exc.value.code == 2
    assert problem in capsys.readouterr().err
    assert not captured


def test_every_known_kind_is_accepted():
    assert command.fault_kinds(",".join(KINDS), KINDS) == list(KINDS)
    assert command.fault_kinds(None, KINDS) is None


def test_anomalies_exit_1(monkeypatch):
    monkeypatch.setattr(runner, "run_soak", lambda o: SoakOutcome(None, Path("r"), Path("."), {}, valid=False))
    assert main(["soak", "--seed", "1"]) == 1


def test_a_harness_failure_says_how_to_fix_it_and_exits_3(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(runner, "docker_problem", lambda: "DockerException: no engine")
    assert main(["soak", "--seed", "7", "--out", str(tmp_path / "run")]) == 3
    out = capsys.readouterr().out
    assert out.startswith("soak seed: 7\n")
    assert "Docker is not ready (DockerException: no engine)" in out
    assert "compose/ensure-docker.sh" in out and "zkafka images build --offline" in out


@pytest.mark.parametrize("failure", [SoakHarnessError("the cluster did not start: boom"), RuntimeError("docker gone")])
def test_harness_error_is_exit_3(monkeypatch, failure):
    def broken(options):
        raise failure
    monkeypatch.setattr(runner, "run_soak", broken)
    assert main(["soak"]) == 3


def test_safe_and_unsafe_configurations():
    safe = runner.broker_properties(unsafe=False)
    assert (safe["min.insync.replicas"], safe["unclean.leader.election.enable"], safe["default.replication.factor"],
            safe["auto.create.topics.enable"]) == ("2", "false", "3", "false")
    assert safe["offsets.topic.replication.factor"] == safe["transaction.state.log.replication.factor"] == "3"
    unsafe = runner.broker_properties(unsafe=True)
    assert (unsafe["min.insync.replicas"], unsafe["unclean.leader.election.enable"]) == ("1", "true")
    plan = runner.WorkloadPlan(rate=900)
    assert runner.effective_plan(plan, unsafe=False) == plan
    lossy = runner.effective_plan(plan, unsafe=True)
    assert (lossy.acks, lossy.idempotence, lossy.copiers, lossy.rate) == ("1", False, False, 900)
    assert runner.check_config(plan, unsafe=False).idempotent
    assert runner.check_config(plan, unsafe=False).eos_pairs == {"txn-in": "txn-out"}
    assert not runner.check_config(lossy, unsafe=True).idempotent
    assert runner.check_config(lossy, unsafe=True).eos_pairs == {}


def test_a_reused_run_directory_keeps_nothing_of_the_last_run(tmp_path):
    """The workloads and the nemesis append: a second run into one directory must start from empty files."""
    (tmp_path / "histories").mkdir()
    (tmp_path / "histories" / "history-producer-0.jsonl").write_text("{}\n")
    for name in runner.RUN_FILES:
        (tmp_path / name).write_text("old")
    (tmp_path / "notes.txt").write_text("mine")
    runner.fresh_run_dir(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["histories", "notes.txt"]
    assert list((tmp_path / "histories").iterdir()) == []
    runner.fresh_run_dir(tmp_path / "new" / "run")
    assert (tmp_path / "new" / "run" / "histories").is_dir()


def test_client_fault_windows_pair_each_client_cut_with_its_heal():
    events = [{"time": 10, "event": "start", "kind": "partition-clients", "id": 1},
              {"time": 12, "event": "start", "kind": "kill-broker", "id": 2},
              {"time": 20, "event": "heal", "kind": "partition-clients", "id": 1},
              {"time": 30, "event": "start", "kind": "partition-clients", "id": 3}]
    assert client_fault_windows(events, end_ns=99) == ((10, 20), (30, 99))
