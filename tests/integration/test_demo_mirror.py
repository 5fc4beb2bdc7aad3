"""``zkafka demo mirror`` end to end, short form: two clusters of its own, kafka-mirror-maker between them, a group
reading at a; a killed (SIGKILL), the group moved to b by ``translate-offsets --execute`` and read to the end there;
the tally ``produced N, consumed N distinct, lost 0`` and the re-read within its window, with exit status 0."""
from __future__ import annotations

import re

from tests.integration.demo_run import DemoRun

RECORDS = 3000


def offsets(text: str, topic: str) -> dict[int, int]:
    return {int(p): int(o) for p, o in re.findall(rf"\b{re.escape(topic)}-(\d+)@(\d+)", text)}


def test_demo_mirror_moves_a_group_to_the_second_cluster_losing_nothing():
    run = DemoRun(["mirror", "--records", str(RECORDS)], 180)
    out, lines, first = run.out, run.lines, run.first

    assert re.search(r"a: produced [\d,]+ \| mirror: copied [\d,]+ to b, \d+ checkpoints? \| orders-app at a: "
                     r"processed [\d,]+, committed [\d,]+", out)
    ready = first(r"every record is at b, with a checkpoint of orders-app for each partition")
    fails = first(r"region a fails: cluster a's brokers 1, 2 and orders-app's process there killed", ready)
    gone = first(r"cluster a is gone", fails)
    committed_at_a = offsets(lines[gone], "orders")
    assert sorted(committed_at_a) == [0, 1, 2]

    tool = first(r"\$ kafka-mirror-maker translate-offsets --config \S+ --source a --target b --group orders-app "
                 r"--execute", gone)
    assert lines[tool + 1].split() == ["GROUP", "TOPIC", "PARTITION", "UPSTREAM-OFFSET", "TRANSLATED-OFFSET"]
    table = [line.split() for line in lines[tool + 2:tool + 5]]
    rows = {int(cells[2]): (int(cells[3]), int(cells[4])) for cells in table if cells[:2] == ["orders-app", "a.orders"]}
    assert sorted(rows) == [0, 1, 2], out
    for p, (upstream, _) in rows.items():
        assert upstream <= committed_at_a[p], "a checkpoint past what the group had committed at a"

    starts = first(r"orders-app starts at b on a\.orders: the group's committed offsets there", tool)
    assert offsets(lines[starts], "a.orders") == {p: translated for p, (_, translated) in rows.items()}
    first(r"orders-app at b: read [\d,]+ records, to the end of a\.orders", starts)

    tally = re.search(rf"produced {RECORDS:,}, consumed {RECORDS:,} distinct \(([\d,]+) at a, ([\d,]+) at b\), "
                      rf"lost 0\n", out)
    assert tally, out
    at_a, at_b = (int(n.replace(",", "")) for n in tally.groups())
    reread = re.search(r"re-read ([\d,]+) at b \(already processed at a\): (\d+) processed but not yet committed "
                       r"when a failed, (\d+) committed after the newest checkpoint, (\d+) from offset translation", out)
    assert reread, out
    total, *causes = (int(n.replace(",", "")) for n in reread.groups())
    assert total == sum(causes) and at_a + at_b - total == RECORDS
    bound = re.search(rf"re-read {total:,} <= ([\d,]+) \(one checkpoint interval of orders-app's reading, "
                      r"1 s x 300/s, \+ offset.lag.max 100 x 3 partitions\): held", out)
    assert bound and int(bound.group(1).replace(",", "")) == 600
