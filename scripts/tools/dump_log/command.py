"""kafka-dump-log's I/O: each ``--files`` entry dumped through ``brokers.storage.dump``'s readers (the ones
``zkafka log dump`` prints with) and ``kafka_format``'s lines; the collected findings go to stderr at the end.

A file that cannot be read, a segment name that is no offset, an index ``--index-sanity-check`` rejects or a
record a decoder cannot read stops the run with one line on stderr and exit 1 (Kafka's tool dies with the
exception there); anything else exits 0, as Kafka's does even when it reported mismatches.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, TextIO

from brokers.protocol.errors import KafkaError
from brokers.storage.dump import (batch_header_at, index_entries, log_batches, records_of, time_index_entries)
from brokers.storage.producer_snapshot import CorruptSnapshotError, decode_snapshot
from brokers.storage.producer_state import snapshot_batch
from brokers.storage.transaction_index import ENTRY_SIZE, CorruptTransactionIndexError, decode_entries
from scripts.tools.dump_log import kafka_format as fmt
from scripts.tools.dump_log.decoders import PARSERS, DecodeError
from scripts.tools.dump_log.syntax import DumpOptions, parse


class DumpAbort(Exception):
    """Stops the run: the message is the one stderr line."""


class Dumper:
    def __init__(self, options: DumpOptions, out: TextIO | None = None, err: TextIO | None = None):
        self.options, self.out, self.err = options, out or sys.stdout, err or sys.stderr
        self.report = fmt.Report()
        self.parse_record: Callable = PARSERS[options.parser]

    def write(self, lines: list[str]) -> None:
        if lines:
            self.out.write("\n".join(lines) + "\n")

    def dump(self, name: str) -> None:
        path = Path(name)
        self.write([f"Dumping {name}"])
        suffix = "." + path.name.rsplit(".", 1)[1] if "." in path.name else ""
        handler = {".log": self.dump_log, ".index": self.dump_index, ".timeindex": self.dump_time_index,
                   ".snapshot": self.dump_snapshot, ".txnindex": self.dump_txn_index}.get(suffix)
        if handler is None:
            self.out.flush()
            self.err.write(f"Ignoring unknown file {name}\n")
            return
        try:
            base = int(path.name.split(".")[0])  # Kafka's getName.split("\\.")(0).toLong
        except ValueError:
            raise DumpAbort(f"kafka-dump-log: {name}: a segment file is named after its base offset") from None
        try:
            handler(path, base)
        except OSError as exc:
            raise DumpAbort(f"kafka-dump-log: {exc.filename or name}: {exc.strerror or exc}") from None

    # -- .log ------------------------------------------------------------------------------------
    def dump_log(self, path: Path, base: int) -> None:
        self.write([f"Starting offset: {base}"])
        size, valid_bytes, last = path.stat().st_size, 0, -1
        try:
            for batch in log_batches(path):
                lines = [fmt.batch_line(batch.header, batch.valid, valid_bytes)]
                if self.options.deep_iteration:
                    try:
                        last = self._records(path, batch, valid_bytes, last, lines)
                    except DumpAbort:
                        self.write(lines)  # what Kafka printed before the record it could not decode
                        raise
                self.write(lines)
                valid_bytes += batch.header.size
        except KafkaError:
            pass  # a torn or malformed tail: reported as invalid bytes, as Kafka's batch iterator stops there
        if size > valid_bytes:
            self.write([fmt.trailing_line(size - valid_bytes, path.name)])

    def _records(self, path: Path, batch, position: int, last: int, lines: list[str]) -> int:
        try:
            records = records_of(batch)
        except KafkaError as exc:
            self.err.write(f"Cannot decode the records of the batch at position {position} of {path}: {exc}\n")
            return last
        options, header = self.options, batch.header
        for r in records:
            if last != -1 and r.offset != last + 1:
                fmt.Report.add(self.report.non_consecutive, str(path.absolute()), (last, r.offset))
            last = r.offset
            key = payload = None
            if options.print_data_log and r.control is None:
                try:
                    key, payload = self.parse_record(r.key, r.value)
                except DecodeError as exc:
                    raise DumpAbort(f"kafka-dump-log: {path} offset {r.offset}: {exc}") from None
            lines.append(fmt.record_line(header, r, position, metadata=not options.skip_record_metadata,
                                         key=key, payload=payload))
        return last

    # -- indexes ---------------------------------------------------------------------------------
    def _sanity(self, kind: str, path: Path, base: int, size: int, entries) -> bool:
        """--index-sanity-check: True once handled (passed, printed), DumpAbort when the index is corrupt."""
        if not self.options.index_sanity_only:
            return False
        problem = fmt.index_sanity_error(kind, str(path.absolute()), base, size, entries)
        if problem:
            raise DumpAbort(f"org.apache.kafka.common.errors.CorruptIndexException: {problem}")
        self.write([f"{path} passed sanity check."])
        return True

    def dump_index(self, path: Path, base: int) -> None:
        log_path = path.with_name(f"{path.name.split('.')[0]}.log")
        log_path.stat()  # Kafka opens the log first: a missing one is an error
        entries, size = index_entries(path)
        if not entries:
            self.write([f"{path} is empty."])
            return
        if self._sanity("index", path, base, size, entries):
            return
        lines = []
        for i, (offset, position) in enumerate(entries):
            if offset == base and i > 0:
                break  # the zero-filled rest of a preallocated index
            header = batch_header_at(log_path, position)
            found = header.last_offset if header is not None and header.size <= self.options.max_message_size else -1
            if found != offset:
                fmt.Report.add(self.report.index_mismatches, str(path.absolute()), (offset, found))
            if not self.options.verify_only:
                lines.append(f"offset: {offset} position: {position}")
        self.write(lines)

    def dump_time_index(self, path: Path, base: int) -> None:
        stem = path.name.split(".")[0]
        log_path, index_path = path.with_name(f"{stem}.log"), path.with_name(f"{stem}.index")
        log_path.stat()
        offsets = index_entries(index_path)[0]
        entries, size = time_index_entries(path)
        if self._sanity("timeindex", path, base, size, entries):
            return
        lines, previous, where = [], -1, str(path.absolute())
        for i, (timestamp, offset) in enumerate(entries):
            if offset == base and i > 0:
                break
            position = max((p for o, p in offsets if o <= offset), default=0)
            batch = next((b for b in log_batches(log_path, position) if b.header.last_offset >= offset), None)
            if batch is None or batch.header.last_offset != offset:
                found = -1 if batch is None else batch.header.last_offset
                fmt.Report.add(self.report.not_found, where, (offset, found))
            else:
                newest = max((r.timestamp for r in records_of(batch)), default=-1)
                if newest != timestamp:
                    fmt.Report.add(self.report.time_mismatches, where, (timestamp, newest))
                if previous >= timestamp:
                    fmt.Report.add(self.report.out_of_order, where, (timestamp, previous))
            if not self.options.verify_only:
                lines.append(f"timestamp: {timestamp} offset: {offset}")
            previous = timestamp
        self.write(lines)

    # -- transaction index, producer snapshots --------------------------------------------------------
    def dump_txn_index(self, path: Path, base: int) -> None:
        data = path.read_bytes()
        try:
            entries = decode_entries(data)
        except CorruptTransactionIndexError as exc:
            self.err.write(f"{exc}\n")
            return
        self.write([fmt.txn_index_line(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
                    for e in entries])
        if len(data) % ENTRY_SIZE:
            self.err.write(f"{path}: {len(data) % ENTRY_SIZE} trailing bytes are not a whole aborted transaction\n")

    def dump_snapshot(self, path: Path, base: int) -> None:
        try:
            rows = decode_snapshot(path.read_bytes())
        except CorruptSnapshotError as exc:
            self.err.write(f"{exc}\n")
            return
        self.write([fmt.snapshot_line(r.producer_id, r.epoch, r.coordinator_epoch, r.current_txn_first_offset,
                                      snapshot_batch(r)) for r in rows])


def main(argv: list[str] | None = None) -> int:
    dumper = Dumper(parse(argv))
    try:
        for name in dumper.options.files:
            dumper.dump(name)
    except DumpAbort as exc:
        sys.stdout.flush()
        print(str(exc), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    sys.stdout.flush()
    for line in dumper.report.lines():
        print(line, file=sys.stderr)
    return 0
