"""The demos' shared runner: exit codes, the interrupt path and SIGTERM as Ctrl-C."""
from __future__ import annotations

import os
import signal

import pytest

from scripts.demo.runner import run_on_scratch_cluster, stopped_by_sigterm


def run(demo) -> tuple[int, list[str]]:
    lines: list[str] = []
    code = run_on_scratch_cluster("zkafka-test-runner-", 1, {}, "127.0.0.1:1", lines.append, demo)
    return code, lines


def test_the_demos_code_is_the_exit_code_and_it_sees_the_given_cluster():
    seen = []
    assert run(lambda scratch: seen.append(scratch.bootstrap) or 3) == (3, [])
    assert seen == ["127.0.0.1:1"]


def test_an_interrupted_demo_exits_130_and_says_so():
    def interrupted(scratch):
        raise KeyboardInterrupt

    assert run(interrupted) == (130, ["interrupted: stopping"])


def test_sigterm_stops_a_run_like_ctrl_c_and_the_previous_handler_comes_back():
    previous = signal.getsignal(signal.SIGTERM)

    def terminated() -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        return 0

    with pytest.raises(KeyboardInterrupt):
        stopped_by_sigterm(terminated)
    assert signal.getsignal(signal.SIGTERM) is previous
    assert stopped_by_sigterm(lambda: 5) == 5
