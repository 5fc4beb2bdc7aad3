"""``zkafka bench formats`` at a tiny size: every case runs and reports a row."""
from __future__ import annotations

import pytest

from scripts.bench.formats import run_formats_bench
from scripts.cli import main


def test_every_case_reports_a_row():
    lines: list[str] = []
    run_formats_bench(1, 4096, 50, 65536, 1, out=lines.append)
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| operation")]
    names = [row.split(" | ")[0][2:] for row in rows]
    assert len(names) == 12 and sum("down-convert" in n for n in names) == 4
    assert sum("max_timestamp -1" in n for n in names) == 2
    for row in rows:
        cells = [float(cell) for cell in row.strip("| ").split(" | ")[1:]]
        assert all(cell > 0 for cell in cells), row
    assert lines[0].startswith("machine: ")


def test_flags_are_checked(capsys):
    with pytest.raises(SystemExit) as raised:
        main(["bench", "formats", "--rounds", "0"])
    assert raised.value.code == 2
    assert "--rounds must be positive" in capsys.readouterr().err
