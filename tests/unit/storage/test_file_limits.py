"""The open-file budget told at start-up (``brokers/storage/file_limits.py``)."""
from __future__ import annotations

import json
import subprocess
import sys

from brokers.storage.file_limits import RESERVED_FILES, FileBudget


def test_the_budget_names_the_limit_and_the_room_left():
    budget = FileBudget(soft_limit=20000, hard_limit=20000, raised_from=None, segments_open=6000)
    assert budget.segment_capacity == 20000 - RESERVED_FILES and not budget.tight
    text = budget.describe()
    assert "open file limit 20000 (hard 20000)" in text and "6000 log segments open" in text
    assert f"room for about {20000 - RESERVED_FILES}" in text and "vm.max_map_count" in text


def test_the_budget_is_tight_from_most_of_it_used_and_never_negative():
    assert FileBudget(20000, 20000, None, 15200).tight
    assert FileBudget(500, 500, None, 0).segment_capacity == 0
    assert "raised from 1024" in FileBudget(20000, 20000, 1024, 0).describe()


def test_start_up_raises_the_soft_limit_to_the_hard_one():
    """In a child process whose soft limit was lowered first (the test process keeps its own)."""
    code = (
        "import json, resource\n"
        "from brokers.storage.file_limits import raise_soft_limit\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "target = hard if hard != resource.RLIM_INFINITY else int(open('/proc/sys/fs/nr_open').read())\n"
        "print(json.dumps([raise_soft_limit(), list(resource.getrlimit(resource.RLIMIT_NOFILE)), target, hard]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    (soft, _, before), now, target, hard = json.loads(out)
    assert before == 256 and soft == target and now == [target, hard]
