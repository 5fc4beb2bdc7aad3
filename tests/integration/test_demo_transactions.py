"""``zkafka demo transactions`` end to end, short form: its own 3-broker cluster, a transactional copier killed
(SIGKILL) mid-transaction, its replacement with the same transactional.id, and the tally
``input N, output N, duplicates 0`` with exit status 0."""
from __future__ import annotations

import re

from tests.integration.demo_run import DemoRun

RECORDS = 6000


def test_demo_transactions_copies_exactly_once_through_a_killed_copier():
    run = DemoRun(["transactions", "--records", str(RECORDS), "--rate", "4000"], 240)
    out, first = run.out, run.first

    inside = first(r"copier-1 is inside transaction \d+: its records are in the log, uncommitted \(([1-9]\d*) offsets")
    killed = first(r"copier-1 killed \(SIGKILL", inside)
    fenced = first(r"copier-2: init_transactions done", first(r"copier-2 starts", killed))
    first(r"copier-2: input copied to its end", fenced)
    assert re.search(r"input [\d,]+ \| output \(read_committed\) [\d,]+ \| open transactions hold \d+ offsets", out)
    aborted = int(re.search(r"the log holds ([\d,]+) aborted records", out).group(1).replace(",", ""))
    assert aborted > 0, "copier-1's transaction left no aborted records"
    assert f"input {RECORDS:,}, output {RECORDS:,}, duplicates 0, lost 0" in out
