"""The .txnindex: Kafka's 34-byte aborted-transaction entries, created lazily per segment."""
import pytest

from brokers.storage.segment import LogSegment
from brokers.storage.transaction_index import ENTRY_SIZE, AbortedTxn, TransactionIndex


def test_entry_bytes_of_a_known_abort(tmp_path):
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    index.append(AbortedTxn(producer_id=4000, first_offset=3, last_offset=7, last_stable_offset=8))
    data = (tmp_path / "00000000000000000000.txnindex").read_bytes()
    assert len(data) == ENTRY_SIZE == 34
    assert data == bytes.fromhex("0000" "0000000000000fa0" "0000000000000003" "0000000000000007" "0000000000000008")


def test_created_lazily(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path)
    assert index.entries() == [] and index.collect(0, 100) == []
    index.flush()
    index.truncate_to(0)
    assert not path.exists()
    index.append(AbortedTxn(1, 0, 1, 2))
    assert path.exists()


def test_last_offset_must_increase(tmp_path):
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    index.append(AbortedTxn(1, 0, 5, 6))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 1, 5, 6))


def test_collect_truncate_and_reopen(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path)
    a, b, c = AbortedTxn(1, 0, 4, 5), AbortedTxn(2, 6, 9, 10), AbortedTxn(3, 11, 20, 21)
    for entry in (a, b, c):
        index.append(entry)
    assert index.collect(0, 100) == [a, b, c]
    assert index.collect(5, 11) == [b]  # a's marker is before the fetch, c starts at the upper bound
    assert index.collect(9, 12) == [b, c]
    index.close()
    reopened = TransactionIndex(path)
    assert reopened.entries() == [a, b, c]
    reopened.truncate_to(9)
    assert reopened.entries() == [a]
    assert len(path.read_bytes()) == ENTRY_SIZE
    reopened.truncate_to(0)
    assert not path.exists()


def test_a_torn_trailing_entry_is_dropped(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path)
    index.append(AbortedTxn(1, 0, 4, 5))
    index.close()
    with open(path, "ab") as f:
        f.write(b"\x00" * 10)
    reopened = TransactionIndex(path)
    assert reopened.entries() == [AbortedTxn(1, 0, 4, 5)]
    reopened.append(AbortedTxn(2, 5, 6, 7))
    assert len(path.read_bytes()) == 2 * ENTRY_SIZE


def test_goes_with_its_segment(tmp_path):
    segment = LogSegment(tmp_path, 100)
    segment.txn_index.append(AbortedTxn(1, 100, 105, 106))
    assert (tmp_path / "00000000000000000100.txnindex").exists()
    segment.change_suffix(".deleted")
    assert (tmp_path / "00000000000000000100.txnindex.deleted").exists()
    assert not (tmp_path / "00000000000000000100.txnindex").exists()
    segment.delete()
    assert not list(tmp_path.iterdir())
