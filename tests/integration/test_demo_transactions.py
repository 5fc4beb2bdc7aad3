"""``zkafka demo transactions`` end to end, short form: its own 3-broker cluster, a transactional copier killed
(SIGKILL) mid-transaction, its replacement with the same transactional.id, and the tally
``input N, output N, duplicates 0`` with exit status 0."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDS = 6000


def test_demo_transactions_copies_exactly_once_through_a_killed_copier():
    proc = subprocess.run([sys.executable, "-m", "scripts.cli", "demo", "transactions", "--records", str(RECORDS),
                           "--rate", "4000"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    out = proc.stdout
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{proc.stderr[-5000:]}"
    lines = out.splitlines()

    def first(pattern: str, after: int = 0) -> int:
        for i, line in enumerate(lines[after:], after):
            if re.search(pattern, line):
                return i
        raise AssertionError(f"no line matching {pattern!r} after line {after}:\n{out}")

    inside = first(r"copier-1 is inside transaction \d+: its records are in the log, uncommitted \(([1-9]\d*) offsets")
    killed = first(r"copier-1 killed \(SIGKILL", inside)
    fenced = first(r"copier-2: init_transactions done", first(r"copier-2 starts", killed))
    first(r"copier-2: input copied to its end", fenced)
    assert re.search(r"input [\d,]+ \| output \(read_committed\) [\d,]+ \| open transactions hold \d+ offsets", out)
    aborted = int(re.search(r"the log holds ([\d,]+) aborted records", out).group(1).replace(",", ""))
    assert aborted > 0, "copier-1's transaction left no aborted records"
    assert f"input {RECORDS:,}, output {RECORDS:,}, duplicates 0, lost 0" in out
