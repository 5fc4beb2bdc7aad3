"""kafka-dump-log: Kafka 2.8.2's DumpLogSegments flags and output over segments written here (exact lines), its
stderr findings (index mismatches, non-consecutive offsets, a torn tail), and the --offsets-decoder /
--transaction-log-decoder parsers over records in Kafka's own formats."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from brokers.model import TopicPartition
from brokers.protocol.control_record import build_marker_batch
from brokers.protocol.record import Record, build_batch
from brokers.storage.dump import increment_sequence
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig
from scripts.tools.dump_log import command, decoders, syntax
from transactions.coordinator.log_records import encode_key, encode_value
from transactions.coordinator.metadata import TxnTransitMetadata
from transactions.coordinator.state import TransactionState

SEGMENT = "00000000000000000000"


def at(batch: bytearray, base_offset: int, epoch: int = 3) -> bytearray:
    struct.pack_into(">q", batch, 0, base_offset)
    struct.pack_into(">i", batch, 12, epoch)
    return batch


@pytest.fixture
def partition(tmp_path) -> Path:
    log = Log(tmp_path / "t-0", LogConfig.from_properties({"index.interval.bytes": "1"}))
    log.append_as_follower(at(build_batch([Record(0, 0, b"k", b"hello", (("h1", b"x"), ("h2", None))),
                                           Record(1, 5, None, b"world")], base_timestamp=1000), 0))
    log.append_as_follower(at(build_batch([Record(0, 0, b"k2", None)], base_timestamp=2000, producer_id=5,
                                          producer_epoch=1, base_sequence=7, transactional=True), 2))
    log.append_as_follower(at(build_marker_batch(5, 1, True, 9, 3000), 3))
    log.close()
    return tmp_path / "t-0"


def dump(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    code = command.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def test_the_log_with_print_data_log(partition, capsys):
    log = partition / f"{SEGMENT}.log"
    code, out, err = dump(capsys, "--files", str(log), "--print-data-log")
    assert (code, err) == (0, [])
    crc = [line.split(" crc: ")[1].split()[0] for line in out if line.startswith("baseOffset")]
    assert out == [
        f"Dumping {log}", "Starting offset: 0",
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 3 isTransactional: false isControl: false position: 0 CreateTime: 1005 size: 95 "
        f"magic: 2 compresscodec: NONE crc: {crc[0]} isvalid: true",
        "| offset: 0 isValid: true crc: null keySize: 1 valueSize: 5 CreateTime: 1000 baseOffset: 0 lastOffset: 1 "
        "baseSequence: -1 lastSequence: -1 producerEpoch: -1 partitionLeaderEpoch: 3 batchSize: 95 magic: 2 "
        "compressType: NONE position: 0 sequence: -1 headerKeys: [h1,h2] key: k payload: hello",
        "| offset: 1 isValid: true crc: null keySize: -1 valueSize: 5 CreateTime: 1005 baseOffset: 0 lastOffset: 1 "
        "baseSequence: -1 lastSequence: -1 producerEpoch: -1 partitionLeaderEpoch: 3 batchSize: 95 magic: 2 "
        "compressType: NONE position: 0 sequence: -1 headerKeys: [] payload: world",
        "baseOffset: 2 lastOffset: 2 count: 1 baseSequence: 7 lastSequence: 7 producerId: 5 producerEpoch: 1 "
        "partitionLeaderEpoch: 3 isTransactional: true isControl: false position: 95 CreateTime: 2000 size: 70 "
        f"magic: 2 compresscodec: NONE crc: {crc[1]} isvalid: true",
        "| offset: 2 isValid: true crc: null keySize: 2 valueSize: -1 CreateTime: 2000 baseOffset: 2 lastOffset: 2 "
        "baseSequence: 7 lastSequence: 7 producerEpoch: 1 partitionLeaderEpoch: 3 batchSize: 70 magic: 2 "
        "compressType: NONE position: 95 sequence: 7 headerKeys: [] key: k2",
        "baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: 5 producerEpoch: 1 "
        "partitionLeaderEpoch: 3 isTransactional: true isControl: true position: 165 CreateTime: 3000 size: 78 "
        f"magic: 2 compresscodec: NONE crc: {crc[2]} isvalid: true",
        "| offset: 3 isValid: true crc: null keySize: 4 valueSize: 6 CreateTime: 3000 baseOffset: 3 lastOffset: 3 "
        "baseSequence: -1 lastSequence: -1 producerEpoch: 1 partitionLeaderEpoch: 3 batchSize: 78 magic: 2 "
        "compressType: NONE position: 165 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 9",
    ]


def test_shallow_by_default_and_records_without_metadata(partition, capsys):
    log = str(partition / f"{SEGMENT}.log")
    assert not any(line.startswith("|") for line in dump(capsys, "--files", log)[1])
    deep = dump(capsys, "--files", log, "--deep-iteration")[1]
    assert [line.endswith("headerKeys: []") for line in deep if line.startswith("| offset: 1 ")] == [True]
    skipped = [line for line in dump(capsys, "--files", log, "--print-data-log", "--skip-record-metadata")[1]
               if not line.startswith(("baseOffset", "Dumping", "Starting"))]
    assert skipped == ["| key: k payload: hello", " payload: world", "| key: k2", ""]


def test_a_torn_tail_is_counted(partition, capsys):
    log = partition / f"{SEGMENT}.log"
    with open(log, "ab") as f:
        f.write(b"\x00" * 30)
    out = dump(capsys, "--files", str(log))[1]
    assert out[-1] == f"Found 30 invalid bytes at the end of {SEGMENT}.log"


def test_indexes_checked_against_the_log(partition, capsys):
    index, time_index = partition / f"{SEGMENT}.index", partition / f"{SEGMENT}.timeindex"
    code, out, err = dump(capsys, "--files", f"{index},{time_index}")
    assert (code, err) == (0, [])
    assert out == [f"Dumping {index}", "offset: 2 position: 95", "offset: 3 position: 165",
                   f"Dumping {time_index}", "timestamp: 2000 offset: 2", "timestamp: 3000 offset: 3"]
    index.write_bytes(struct.pack(">ii", 1, 95) + struct.pack(">ii", 3, 165))  # offset 1 is not where a batch ends
    code, out, err = dump(capsys, "--files", str(index), "--verify-index-only")
    assert out == [f"Dumping {index}"]
    assert err == [f"Mismatches in :{index.absolute()}", "  Index offset: 1, log offset: 2"]


def test_index_sanity_check(partition, capsys):
    index = partition / f"{SEGMENT}.index"
    assert dump(capsys, "--files", str(index), "--index-sanity-check")[1] == [
        f"Dumping {index}", f"{index} passed sanity check."]
    index.write_bytes(index.read_bytes() + b"\x00\x00")
    code, out, err = dump(capsys, "--files", str(index), "--index-sanity-check")
    assert code == 1 and err == [f"org.apache.kafka.common.errors.CorruptIndexException: Index file {index.absolute()} "
                                 "is corrupt, found 18 bytes which is neither positive nor a multiple of 8."]
    empty = partition / "00000000000000000100.index"
    empty.write_bytes(b"")
    (partition / "00000000000000000100.log").write_bytes(b"")
    assert dump(capsys, "--files", str(empty))[1] == [f"Dumping {empty}", f"{empty} is empty."]


def test_time_index_findings(partition, capsys):
    time_index = partition / f"{SEGMENT}.timeindex"
    time_index.write_bytes(struct.pack(">qi", 2500, 2) + struct.pack(">qi", 2400, 3) + struct.pack(">qi", 9999, 9))
    code, out, err = dump(capsys, "--files", str(time_index))
    where = time_index.absolute()
    assert err == [f"Found timestamp mismatch in :{where}", "  Index timestamp: 2500, log timestamp: 2000",
                   "  Index timestamp: 2400, log timestamp: 3000",
                   f"Found out of order timestamp in :{where}", "  Index timestamp: 2400, Previously indexed timestamp: 2500",
                   "The following indexed offsets are not found in the log.", "Indexed offset: 9, found log offset: -1"]


def test_non_consecutive_offsets_are_reported(tmp_path, capsys):
    log = Log(tmp_path / "c-0", LogConfig())
    log.append_as_follower(at(build_batch([Record(0, 0, b"a", b"1"), Record(4, 0, b"b", b"2")], base_timestamp=1), 0))
    log.close()
    path = tmp_path / "c-0" / f"{SEGMENT}.log"
    err = dump(capsys, "--files", str(path), "--deep-iteration")[2]
    assert err == [f"Non-consecutive offsets in {path.absolute()}", "  0 is followed by 4"]


def test_other_files(partition, capsys, tmp_path):
    txn = partition / f"{SEGMENT}.txnindex"
    txn.write_bytes(struct.pack(">hqqqq", 0, 8, 3, 4, 3))
    snapshots = sorted(partition.glob("*.snapshot"))
    code, out, err = dump(capsys, "--files", ",".join(map(str, [txn, *snapshots, partition / "leader-epoch-checkpoint"])))
    assert out[:2] == [f"Dumping {txn}", "version: 0 producerId: 8 firstOffset: 3 lastOffset: 4 lastStableOffset: 3"]
    assert out[3] == ("producerId: 5 producerEpoch: 1 coordinatorEpoch: 9 currentTxnFirstOffset: None "
                      "firstSequence: 7 lastSequence: 7 lastOffset: 2 offsetDelta: 0 timestamp: 2000")
    assert err == [f"Ignoring unknown file {partition / 'leader-epoch-checkpoint'}"] and code == 0


def test_unreadable_files_are_one_line(capsys, tmp_path):
    assert dump(capsys, "--files", str(tmp_path / "7.log"))[2] == [f"kafka-dump-log: {tmp_path / '7.log'}: No such file or directory"]
    (tmp_path / "x.log").write_bytes(b"")
    code, out, err = dump(capsys, "--files", str(tmp_path / "x.log"))
    assert code == 1 and err == [f"kafka-dump-log: {tmp_path / 'x.log'}: a segment file is named after its base offset"]


# -- flags -----------------------------------------------------------------------------------------
def test_flags():
    assert syntax.parse(["--files", "a.log,b.index"]) == syntax.DumpOptions(("a.log", "b.index"))
    options = syntax.parse(["--files", "a.log", "--offsets-decoder"])
    assert (options.print_data_log, options.deep_iteration, options.parser) == (True, True, "offsets")
    assert syntax.parse(["--files", "a", "--transaction-log-decoder"]).parser == "transaction"
    assert syntax.parse(["--files", "a", "--value-decoder-class"]).print_data_log
    assert syntax.parse(["--files", "a", "--print"]).print_data_log  # joptsimple's abbreviations work too
    assert syntax.parse(["--files", "a", "--max-message-size", "100"]).max_message_size == 100


@pytest.mark.parametrize("argv, message", [
    ([], 'kafka-dump-log: Missing required argument "[files]"'),
    (["--files", "a", "--bogus"], "kafka-dump-log: unrecognized arguments: --bogus"),
    (["--files", "a", "--max-message-size", "x"], "invalid int value: 'x'"),
    (["--files", "a", "--max-message-size", "0"], "--max-message-size must be positive"),
    (["--files", "a", "--key-decoder-class", "my.Decoder"], "only kafka.serializer.StringDecoder is supported"),
    (["--files", ","], "--files names no file"),
])
def test_bad_flags_are_one_line_and_exit_1(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        syntax.parse(argv)
    err = capsys.readouterr().err.splitlines()
    assert exited.value.code == 1 and len(err) == 1 and message in err[0]


# -- decoders --------------------------------------------------------------------------------------
def s16(text: str | None) -> bytes:
    return struct.pack(">h", -1) if text is None else struct.pack(">h", len(text.encode())) + text.encode()


def b32(data: bytes | None) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def assignment(partitions: dict[str, list[int]], user_data: bytes | None = None) -> bytes:
    out = struct.pack(">hi", 1, len(partitions))
    for topic, ids in partitions.items():
        out += s16(topic) + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", p) for p in ids)
    return out + b32(user_data)


def member(version: int, member_id: str, assigned: bytes) -> bytes:
    out = s16(member_id) + (s16(None) if version >= 3 else b"") + s16("client") + s16("/10.0.0.1")
    out += (struct.pack(">i", 300000) if version >= 1 else b"") + struct.pack(">i", 10000)
    return out + b32(b"subscription") + b32(assigned)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_offsets_decoder_group_metadata(version):
    key = struct.pack(">h", 2) + s16("g")
    value = struct.pack(">h", version) + s16("consumer") + struct.pack(">i", 4) + s16("range") + s16("m1")
    value += struct.pack(">q", 99) if version >= 2 else b""
    value += struct.pack(">i", 2) + member(version, "m1", assignment({"t": [0, 1]})) + member(
        version, "m2", assignment({"u": [2]}, b"\x00\x0a\xff"))
    assert decoders.offsets_record(key, value) == (
        "group_metadata::group=g",
        '{"protocolType":"consumer","protocol":"range","generationId":4,"assignment":"{m1=[t-0, t-1],m2=[u-2]:AFF}"}')


def test_offsets_decoder_other_protocols_and_empty_groups():
    key = struct.pack(">h", 2) + s16("connect")
    value = struct.pack(">h", 0) + s16("connect") + struct.pack(">i", 1) + s16(None) + s16(None)
    value += struct.pack(">i", 1) + member(0, "w", b"\x01\x02")
    assert decoders.offsets_record(key, value)[1] == (
        '{"protocolType":"connect","protocol":null,"generationId":1,"assignment":"{w=102}"}')
    assert decoders.offsets_record(key, None) == ("group_metadata::group=connect", "<DELETE>")


@pytest.mark.parametrize("version, body, expected", [
    (0, struct.pack(">q", 5) + s16("") + struct.pack(">q", 1), "offset=5"),
    (1, struct.pack(">q", 6) + s16("meta") + struct.pack(">qq", 1, 2), "offset=6,metadata=meta"),
    (3, struct.pack(">qi", 7, 4) + s16("") + struct.pack(">q", 1), "offset=7"),
])
def test_offsets_decoder_offset_commits(version, body, expected):
    key = struct.pack(">h", 1) + s16("g") + s16("t") + struct.pack(">i", 3)
    assert decoders.offsets_record(key, struct.pack(">h", version) + body) == (
        "offset_commit::group=g,partition=t-3", expected)
    assert decoders.offsets_record(key, None)[1] == "<DELETE>"


@pytest.mark.parametrize("key, value, message", [
    (None, b"", "message had a missing key"),
    (struct.pack(">h", 9) + s16("g"), None, "Unknown group metadata message version: 9"),
    (struct.pack(">h", 1) + s16("g") + s16("t") + struct.pack(">i", 0), struct.pack(">h", 4), "Unknown offset message version: 4"),
    (struct.pack(">h", 1) + s16("g"), None, "shorter than its schema"),
])
def test_offsets_decoder_errors(key, value, message):
    with pytest.raises(decoders.DecodeError, match=message):
        decoders.offsets_record(key, value)


def test_transaction_log_decoder():
    meta = TxnTransitMetadata(producer_id=7, last_producer_id=-1, producer_epoch=2, last_producer_epoch=-1,
                              txn_timeout_ms=60000, txn_state=TransactionState.ONGOING,
                              topic_partitions=frozenset({TopicPartition("b", 1), TopicPartition("a", 0)}),
                              txn_start_timestamp=10, txn_last_update_timestamp=20)
    assert decoders.transaction_record(encode_key("tx"), encode_value(meta)) == (
        "transaction_metadata::transactionalId=tx",
        "producerId:7,producerEpoch:2,state=Ongoing,partitions=[a-0,b-1],txnLastUpdateTimestamp=20,txnTimeoutMs=60000")
    assert decoders.transaction_record(encode_key("tx"), None)[1] == "<DELETE>"
    with pytest.raises(decoders.DecodeError, match="unknown TransactionLogKey version"):
        decoders.transaction_record(struct.pack(">h", 3) + s16("x"), None)


def test_string_decoder_and_hex():
    assert decoders.string_record(b"\xff", None) == ("\ufffd", None)
    assert decoders.hex_text(b"") == "" and decoders.hex_text(b"\x00\x01\xab") == "1AB"


def test_sequences_wrap_as_kafkas():
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(2**31 - 2, 3) == 1
