"""The ``zkafka`` command line: --version, log dump (readable, read-only, honest about corruption)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig
from scripts.cli import main
from tests.unit.storage.conftest import batch


@pytest.fixture
def partition_dir(tmp_path) -> Path:
    log = Log(tmp_path / "events-0", LogConfig(segment_bytes=400, index_interval_bytes=50))
    for i in range(12):
        keys = [b"user-%d" % i, None]
        log.append_as_leader(batch([b"hello-%d" % i, b"\xff\x00binary"], keys=keys, ts=5000 + i, codec=i % 5),
                             leader_epoch=3)
    log.close()
    return tmp_path / "events-0"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version_from_the_installed_entry_point():
    exe = Path(sys.executable).with_name("zkafka")
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("zkafka 0.")


def test_dump_directory_prints_batches_indexes_and_epochs(capsys, partition_dir):
    before = sorted((p.name, p.stat().st_size) for p in partition_dir.iterdir())
    code, out, _ = run(capsys, "log", "dump", str(partition_dir))
    assert code == 0
    assert "Dumping " + str(partition_dir / "00000000000000000000.log") in out
    assert "baseOffset: 0 lastOffset: 1 count: 2" in out
    assert "partitionLeaderEpoch: 3" in out and "compresscodec: gzip" in out and "compresscodec: zstd" in out
    assert "isvalid: true" in out and "isvalid: false" not in out
    assert "CreateTime: 5001" in out
    assert "offset: " in out and "position: " in out and "MISMATCH" not in out
    assert "timestamp: " in out
    assert "Dumping " + str(partition_dir / "leader-epoch-checkpoint") in out and "3 0" in out
    assert sorted((p.name, p.stat().st_size) for p in partition_dir.iterdir()) == before  # read-only


def test_dump_records(capsys, partition_dir):
    code, out, _ = run(capsys, "log", "dump", str(partition_dir / "00000000000000000000.log"), "--print-data-log")
    assert code == 0
    assert "| offset: 0 CreateTime: 5000 keySize: 6 valueSize: 7 sequence: -1 headerKeys: [] key: user-0 payload: hello-0" in out
    assert "key: null payload: \\xff\\x00binary" in out


def test_dump_reports_bad_crc_and_torn_tail(capsys, partition_dir, tmp_path):
    copy = tmp_path / "copy-0"
    shutil.copytree(partition_dir, copy)
    log_file = copy / "00000000000000000000.log"
    data = bytearray(log_file.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's records
    log_file.write_bytes(bytes(data) + b"\x00\x00\x00")
    code, out, _ = run(capsys, "log", "dump", str(log_file))
    assert code == 0
    assert "isvalid: false" in out
    assert "CORRUPT:" in out


def test_dump_flags_index_entries_that_do_not_match(capsys, partition_dir):
    index = partition_dir / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    assert len(data) >= 8
    data[0:4] = (999).to_bytes(4, "big")
    index.write_bytes(bytes(data))
    _, out, _ = run(capsys, "log", "dump", str(index))
    assert "MISMATCH" in out and "mismatches: 1" in out


def test_dump_missing_path_is_a_clear_error(capsys, tmp_path):
    code, _, err = run(capsys, "log", "dump", str(tmp_path / "nope"))
    assert code == 2 and "no such file or directory" in err


def test_bad_flags_name_the_problem(capsys):
    with pytest.raises(SystemExit) as excinfo:
        main(["bench", "storage", "--batch-sizes", "16k"])
    assert excinfo.value.code == 2
    assert "--batch-sizes" in capsys.readouterr().err


@pytest.mark.parametrize("argv, named", [
    (["bench", "cluster", "--brokers", "1"], "--brokers"),
    (["cluster", "up", "--brokers", "0"], "--brokers"),
    (["cluster", "up", "--property", "novalue"], "--property"),
])
def test_cluster_flags_name_the_problem(capsys, argv, named):
    with pytest.raises(SystemExit) as excinfo:
        main(argv)
    assert excinfo.value.code == 2
    assert named in capsys.readouterr().err
