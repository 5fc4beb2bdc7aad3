"""``zkafka demo groups`` end to end: its own 3-broker cluster, three member processes joining one by
one, a clean leave, a SIGKILL, and the at-least-once check ("0 lost") with exit status 0."""
from __future__ import annotations

import re

from tests.integration.demo_run import DemoRun



def test_demo_groups_loses_nothing_through_joins_a_leave_and_a_kill():
    run = DemoRun(["groups", "--duration-s", "20"], 280)
    out, first = run.out, run.first

    # member-1 alone owns everything; member-2 and member-3 join and the group splits the partitions
    first(r"rebalance: member-1 assigned \[0,1,2,3,4,5\] \(generation \d+, member id \S+")
    joined = first(r"member-2 joins the group")
    first(r"rebalance: member-1 revoked ", joined)
    first(r"rebalance: member-2 assigned \[", joined)
    first(r"rebalance: member-3 assigned \[", first(r"member-3 joins the group"))
    # the clean leave: member-2's revoke and close
    leave = first(r"member-2: consumer\.close\(\)")
    first(r"rebalance: member-2 revoked ", leave)
    first(r"member-2 closed cleanly", leave)
    # the kill: after the session timeout member-1 ends up with every partition again
    killed = first(r"member-3: SIGKILL")
    first(r"rebalance: member-1 assigned \[0,1,2,3,4,5\]", killed)
    assert re.search(r"records/s  producer \d+ \| member-1 \d+", out)
    assert "drained: every acknowledged value consumed" in out
    assert re.search(r"produced [\d,]+ records \(acknowledged\), consumed [\d,]+ distinct values in [\d,]+ "
                     r"deliveries: 0 lost, [\d,]+ duplicates", out), out
    assert "exited unexpectedly" not in out
