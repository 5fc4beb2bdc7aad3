"""``zkafka demo spark`` end to end, as a user runs it: its own 1-broker cluster, the streaming query
(zkafka source -> from_msgpack -> windowed counts -> zkafka sink) and kafka-console-consumer reading the counts
back. Exit 0 and at least one window count printed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from scripts.demo.spark import parse_count_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_demo_spark_prints_window_counts_and_exits_0():
    proc = subprocess.run([sys.executable, "-m", "scripts.cli", "demo", "spark", "--duration-s", "30"], cwd=ROOT,
                          capture_output=True, text=True, timeout=150)
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-4000:]
    counts = [parse_count_line(line.split("page-counts: ", 1)[1]) for line in out.splitlines()
              if "page-counts: " in line]
    counts = [c for c in counts if c is not None]
    assert counts, out[-4000:]
    assert all(c["key"] == c["page"] and c["page"].startswith("/p") and c["count"] >= 1 for c in counts)
    assert "micro-batches done" in out
