"""WorkloadProcess and supervise with real child processes that need no cluster: a copier started without its
required flags exits 2 (argparse) at once, like a crash; supervise restarts it with ``--after-crash`` up to
its bound; a stopped process is never restarted; stop() returns the exit code, 0 after SIGTERM."""
from __future__ import annotations

from scripts.containers.conditions import wait_for
from scripts.soak.workloads.launcher import WorkloadProcess, supervise


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
    assert proc.describe() == {"name": "copier-0", "kind": "copier", "restarts": 2, "exits": ["2", "2", "2"]}


def test_a_stopped_process_is_not_restarted_and_stop_returns_its_code(tmp_path):
    proc = WorkloadProcess("reader-0", "127.0.0.1:1", tmp_path).start("reader", ["--topics", "t"])
    wait_for(proc.history_path.exists, 30, "the reader's history file")
    assert proc.stop(30) == 0  # SIGTERM while it waits for metadata: a clean stop
    assert not proc.alive and supervise([proc]) == []
    assert proc.history_path.exists()
