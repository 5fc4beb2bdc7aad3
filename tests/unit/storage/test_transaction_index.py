"""The .txnindex: Kafka's 34-byte aborted-transaction entries, created lazily per segment."""
import threading

import pytest

from brokers.storage import transaction_index
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


def test_a_lazy_load_racing_an_append_keeps_the_appended_entry(tmp_path, monkeypatch):
    """The cleaner's thread collects while the event loop appends: the cleaner's load, read before the
    append, must not replace the entries the append added (nor cut the file under it)."""
    path = tmp_path / "00000000000000000000.txnindex"
    TransactionIndex(path).append(AbortedTxn(1, 0, 1, 2))
    index = TransactionIndex(path)  # a segment opened after a restart: nothing loaded yet
    decoded, resume = threading.Event(), threading.Event()
    real_decode = transaction_index.decode_entries

    def slow_first_decode(data):
        entries = real_decode(data)
        if not decoded.is_set():
            decoded.set()
            assert resume.wait(10)
        return entries

    monkeypatch.setattr(transaction_index, "decode_entries", slow_first_decode)
    collected = []
    cleaner = threading.Thread(target=lambda: collected.append(index.collect(0, 100)))
    cleaner.start()
    assert decoded.wait(10)  # the cleaner has read the file and is about to publish what it read
    appender = threading.Thread(target=lambda: index.append(AbortedTxn(2, 3, 4, 5)))
    appender.start()
    appender.join(0.5)  # done at once without a lock; waiting for the cleaner with one
    resume.set()
    cleaner.join(10)
    appender.join(10)
    assert not cleaner.is_alive() and not appender.is_alive()
    assert collected == [[AbortedTxn(1, 0, 1, 2)]]
    assert index.entries() == [AbortedTxn(1, 0, 1, 2), AbortedTxn(2, 3, 4, 5)]
    assert TransactionIndex(path).entries() == [AbortedTxn(1, 0, 1, 2), AbortedTxn(2, 3, 4, 5)]
