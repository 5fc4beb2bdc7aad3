"""Starting, stopping and supervising the soak's workload processes.

``WorkloadProcess``: one ``python -m scripts.soak.workloads <kind> ...`` child, its stdout and stderr appended
to ``<history-dir>/<name>.log``, its ops to ``<history-dir>/history-<name>.jsonl``. ``WorkloadPlan``: what runs;
``plan_processes(plan)`` turns it into (name, kind, flags) without I/O; ``start_workloads`` starts them.
``supervise(processes)`` (call it periodically) restarts a copier that exited on its own with a non-zero code
(fenced, stuck, a transaction's outcome unknown): same name, same history file, ``--after-crash <code>`` so
the new process first writes a ``crash`` op; at most ``max_restarts`` times per process. ``stop_all`` never
takes longer than its timeout plus ``KILL_WAIT_S``: SIGTERM to all at once, one shared deadline, then SIGKILL
to what is left. ``describe()`` names every exit (``common.exit_name``) and, after an exit that was not a clean
stop, quotes the last lines of the process's log.

Value ranges: the i-th producer process of the plan (``producer-0..``, then ``txn-producer-0``) owns
``[i * VALUE_RANGE, (i + 1) * VALUE_RANGE)``, so every value of the run is unique.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from scripts.soak.workloads.common import VALUE_RANGE, clean_stop, exit_name, history_path

PROJECT_ROOT = Path(__file__).resolve().parents[3]
RESTARTED_KINDS = frozenset({"copier"})  # a producer restarted would reuse its values; readers/groups don't crash
MAX_RESTARTS = 20
KILL_WAIT_S = 10.0  # for a SIGKILLed child to be reaped
LOG_TAIL_LINES = 5


def command_line(kind: str, name: str, bootstrap: str, history_dir: Path, args: list[str]) -> list[str]:
    return [sys.executable, "-m", "scripts.soak.workloads", kind, "--bootstrap", bootstrap,
            "--history-dir", str(history_dir), "--process", name, *args]


@dataclass(eq=False)
class WorkloadProcess:
    """A workload child process. ``restarts`` and ``exit_codes`` (every exit seen, in order) tell the report
    what happened to it."""
    name: str
    bootstrap: str
    history_dir: Path
    kind: str = ""
    args: list[str] = field(default_factory=list)
    restarts: int = 0
    exit_codes: list[int] = field(default_factory=list)
    _popen: subprocess.Popen | None = field(default=None, init=False, repr=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)
    _stopping: bool = field(default=False, init=False)
    _reaped: bool = field(default=False, init=False)
    _terminated: bool = field(default=False, init=False)

    @property
    def history_path(self) -> Path:
        return history_path(self.history_dir, self.name)

    @property
    def log_path(self) -> Path:
        return Path(self.history_dir) / f"{self.name}.log"

    @property
    def alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def start(self, kind: str, args: list[str], after_crash: int | None = None) -> "WorkloadProcess":
        self.kind, self.args = kind, list(args)
        extra = ["--after-crash", str(after_crash)] if after_crash is not None else []
        if self._log is None:
            self._log = open(self.log_path, "ab")
        self._popen = subprocess.Popen(command_line(kind, self.name, self.bootstrap, self.history_dir,
                                                    self.args + extra),
                                       stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       cwd=PROJECT_ROOT)
        self._reaped = self._terminated = False
        return self

    def _reap(self) -> int | None:
        """The exit code if the current child has exited (recorded in ``exit_codes`` once), else None."""
        code = self._popen.poll() if self._popen else None
        if code is not None and not self._reaped:
            self.exit_codes.append(code)
            self._reaped = True
        return code

    def terminate(self) -> None:
        """SIGTERM, once per child: a second one could land after the child's Python restored the default
        handlers on its way out, and kill it with -15 although it stopped cleanly."""
        self._stopping = True
        if self._popen is not None and not self._terminated and self._popen.poll() is None:
            self._popen.send_signal(signal.SIGTERM)
            self._terminated = True

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, wait up to ``timeout``, then SIGKILL; the exit code (negative: killed by that signal; None
        if not even SIGKILL ended it within ``KILL_WAIT_S``). Never raises for a child that will not die."""
        self.terminate()
        if self._popen is None:
            return None
        if self._popen.poll() is None:
            try:
                self._popen.wait(max(0.0, timeout))
            except subprocess.TimeoutExpired:
                self.kill()
        code = self._reap()
        self._close_log()
        return code

    def kill(self) -> None:
        self._stopping = True
        if self._popen is not None and self._popen.poll() is None:
            self._popen.kill()
            try:
                self._popen.wait(KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                pass
        self._reap()
        self._close_log()

    def supervise(self, max_restarts: int = MAX_RESTARTS) -> bool:
        """Restart this process if it is a kind that is restarted and it exited abnormally by itself; whether
        it was restarted now."""
        if self._popen is None or self._stopping or self.kind not in RESTARTED_KINDS:
            return False
        code = self._reap()
        if code is None or code == 0 or self.restarts >= max_restarts:
            return False
        self.restarts += 1
        self.start(self.kind, self.args, after_crash=code)
        return True

    def describe(self) -> dict:
        """For the report: name, kind, restarts, every exit by name; ``log_tail`` unless the last exit was a
        clean stop."""
        last = self.exit_codes[-1] if self.exit_codes else None
        out = {"name": self.name, "kind": self.kind, "restarts": self.restarts,
               "exits": [exit_name(c) for c in self.exit_codes]}
        if self.exit_codes and not clean_stop(last):
            out["last_exit"] = exit_name(last)
            out["log_tail"] = self.log_tail()
        return out

    def exit_summary(self) -> str:
        """One line for the terminal: ``name: exit-name`` and, after an unclean exit, its log's last lines."""
        last = self.exit_codes[-1] if self.exit_codes else None
        text = f"{self.name}: {exit_name(last)}"
        return text if clean_stop(last) else text + "".join(f"\n    {line}" for line in self.log_tail())

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> list[str]:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 8192))
                return f.read().decode(errors="replace").splitlines()[-lines:]
        except OSError:
            return []

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


@dataclass(frozen=True)
class WorkloadPlan:
    """What the soak runs. ``rate`` is the records/s of ``topic`` over all its producers (each gets an equal
    share); ``txn_rate`` the records/s that ``txn-producer-0`` writes to ``txn_input``. Readers read ``topic``
    and, with copiers, ``txn_input`` and ``txn_output``, read_committed; group members subscribe to ``topic``
    in ``group``; copier p copies ``txn_input``/p to ``txn_output``/p."""
    topic: str = "soak"
    partitions: int = 6
    producers: int = 2
    rate: int = 500
    readers: int = 1
    group_members: int = 2
    copiers: bool = True
    txn_input: str = "txn-in"
    txn_output: str = "txn-out"
    txn_partitions: int = 2
    acks: str = "all"
    idempotence: bool = True
    txn_rate: int = 100
    group: str = "soak-group"
    abort_probability: float = 0.1
    max_txn_records: int = 500


def producer_flags(topic: str, partitions: int, rate: float, value_base: int, acks: str,
                   idempotence: bool) -> list[str]:
    return ["--topic", topic, "--partitions", str(partitions), "--rate", f"{rate:g}", "--value-base", str(value_base),
            "--acks", acks, "--idempotence", "true" if idempotence else "false"]


def plan_processes(plan: WorkloadPlan) -> list[tuple[str, str, list[str]]]:
    """(name, kind, flags) of every process of the plan, consumers first."""
    topics = [plan.topic] + ([plan.txn_input, plan.txn_output] if plan.copiers else [])
    out = [(f"reader-{i}", "reader", ["--topics", ",".join(topics), "--isolation", "read_committed"])
           for i in range(plan.readers)]
    out += [(f"group-{i}", "group", ["--topics", plan.topic, "--group", plan.group]) for i in range(plan.group_members)]
    if plan.copiers:
        out += [(f"copier-{p}", "copier", ["--input-topic", plan.txn_input, "--output-topic", plan.txn_output,
                                           "--partition", str(p), "--group", f"soak-copier-{p}",
                                           "--transactional-id", f"soak-copier-{p}",
                                           "--abort-probability", f"{plan.abort_probability:g}",
                                           "--max-txn-records", str(plan.max_txn_records)])
                for p in range(plan.txn_partitions)]
    share = plan.rate / plan.producers if plan.producers else 0
    out += [(f"producer-{i}", "producer", producer_flags(plan.topic, plan.partitions, share, i * VALUE_RANGE,
                                                         plan.acks, plan.idempotence))
            for i in range(plan.producers)]
    if plan.copiers:
        out.append(("txn-producer-0", "producer", producer_flags(
            plan.txn_input, plan.txn_partitions, plan.txn_rate, plan.producers * VALUE_RANGE, plan.acks,
            plan.idempotence)))
    return out


def start_workloads(plan: WorkloadPlan, bootstrap: str, history_dir: Path) -> list[WorkloadProcess]:
    Path(history_dir).mkdir(parents=True, exist_ok=True)
    return [WorkloadProcess(name, bootstrap, Path(history_dir)).start(kind, flags)
            for name, kind, flags in plan_processes(plan)]


def supervise(processes: list[WorkloadProcess], max_restarts: int = MAX_RESTARTS) -> list[str]:
    """Restart the crashed copiers; the names restarted now."""
    return [p.name for p in processes if p.supervise(max_restarts)]


def stop_all(processes: list[WorkloadProcess], timeout: float = 60.0) -> dict[str, int | None]:
    """SIGTERM to every process at once, then wait for them until one shared deadline, SIGKILL what is left:
    name -> exit code (``common.clean_stop`` says which are clean stops). Returns within ``timeout`` plus
    ``KILL_WAIT_S`` per process that ignores SIGKILL."""
    for p in processes:
        p.terminate()
    deadline = time.monotonic() + timeout
    return {p.name: p.stop(deadline - time.monotonic()) for p in processes}
