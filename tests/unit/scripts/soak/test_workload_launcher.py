"""WorkloadProcess and supervise with real child processes that need no cluster: a copier started without its
required flags exits 2 (argparse) at once, like a crash; supervise restarts it with ``--after-crash`` up to
its bound; a stopped process is never restarted; stop() returns the exit code, 0 after SIGTERM."""
from __future__ import annotations

import sys
import time

import pytest

from zkafka.testing.conditions import wait_for
from scripts.soak.workloads import launcher
from scripts.soak.workloads.common import EXIT_CLOSE_TIMEOUT, BoundedCall, clean_stop, exit_name
from scripts.soak.workloads.launcher import WorkloadProcess, stop_all, supervise


def test_a_crashed_copier_is_restarted_up_to_the_bound(tmp_path):
    proc = WorkloadProcess("copier-0", "127.0.0.1:1", tmp_path).start("copier", ["--partition", "0"])
    for expected in (1, 2):
        wait_for(lambda: not proc.alive, 30, "the copier's exit")
        assert supervise([proc], max_restarts=2) == ["copier-0"]
        assert proc.restarts == expected
    wait_for(lambda: not proc.alive, 30, "the copier's exit")
    assert supervise([proc], max_restarts=2) == []
    assert proc.exit_codes == [2, 2, 2]
    log = proc.log_path.read_text()
    assert log.count("the following arguments are required") == 3
    described = proc.describe()
    assert {k: described[k] for k in ("name", "kind", "restarts", "exits", "last_exit")} == {
        "name": "copier-0", "kind": "copier", "restarts": 2, "exits": ["exit 2"] * 3, "last_exit": "exit 2"}
    assert described["log_tail"] and "the following arguments are required" in described["log_tail"][-1]
    assert proc.exit_summary().startswith("copier-0: exit 2\n    ")


def test_a_stopped_process_is_not_restarted_and_stop_returns_its_code(tmp_path):
    proc = WorkloadProcess("reader-0", "127.0.0.1:1", tmp_path).start("reader", ["--topics", "t"])
    wait_for(proc.history_path.exists, 30, "the reader's history file")
    assert proc.stop(30) == 0  # SIGTERM while it waits for metadata: a clean stop
    assert not proc.alive and supervise([proc]) == []
    assert proc.history_path.exists()
    assert proc.describe() == {"name": "reader-0", "kind": "reader", "restarts": 0, "exits": ["ok"]}
    assert proc.exit_summary() == "reader-0: ok"


IGNORES_SIGTERM = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
                   "time.sleep(600)")


def test_stop_all_shares_one_deadline_and_kills_what_ignores_sigterm(tmp_path, monkeypatch):
    monkeypatch.setattr(launcher, "command_line", lambda *_: [sys.executable, "-c", IGNORES_SIGTERM])
    procs = [WorkloadProcess(f"group-{i}", "127.0.0.1:1", tmp_path).start("group", []) for i in range(3)]
    wait_for(lambda: all("up" in p.log_path.read_text() for p in procs), 30, "the children up")
    began = time.monotonic()
    codes = stop_all(procs, timeout=2)
    assert time.monotonic() - began < 2 + 5  # one deadline for all, not 2 s each plus waits
    assert codes == {f"group-{i}": -9 for i in range(3)}
    assert procs[0].describe()["last_exit"] == "killed by signal 9"
    assert procs[0].describe()["log_tail"] == ["up"]


def test_clean_stops_and_exit_names():
    assert clean_stop(0) and clean_stop(EXIT_CLOSE_TIMEOUT)
    assert not any(clean_stop(c) for c in (None, -9, -15, 1, 10, 11, 12, 13, 15))
    assert [exit_name(c) for c in (0, 12, 14, 15, -9, 2, None)] == [
        "ok", "stuck", "close-timeout", "no-committed-offset", "killed by signal 9", "exit 2", "not reaped"]


def test_a_bounded_call_that_never_returns_is_left_behind():
    hang = BoundedCall(lambda: time.sleep(30))
    assert not hang.wait(0.2) and not hang.done
    done = BoundedCall(lambda: 42)
    assert done.wait(5) and done.result() == 42
    failed = BoundedCall(lambda: 1 / 0)
    assert failed.wait(5)
    with pytest.raises(ZeroDivisionError):
        failed.result()
