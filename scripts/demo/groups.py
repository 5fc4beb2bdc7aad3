"""``zkafka demo groups``: one consumer group at work, live, with unmodified confluent-kafka clients.

Without ``--bootstrap-server`` a 3-broker cluster (real ZooKeeper) is started in a temp dir and
stopped at the end (also on Ctrl-C or an error; its logs are kept, and named, when the demo fails).

What happens, for a duration D (default 40 s):

* a 6-partition RF-3 topic; a producer (acks=all) sends a steady stream of records whose values
  are unique sequence numbers (``--rate`` per second), round-robin over the partitions;
* three members of one group start one by one (at 0, 0.15 D and 0.3 D), each in its own process
  (``python -m scripts.demo.groups --member NAME ...``) so that it can really be killed. A member
  commits after processing (``enable.auto.commit=false``; asynchronous commit of its positions at
  most every 200 ms, and a synchronous one before it gives partitions up) and reports on stdout, one
  JSON object per line, the values it consumed and every rebalance callback (member id, generation,
  partitions);
* at 0.5 D member-2 leaves cleanly (``consumer.close()``: LeaveGroup, an immediate rebalance), at
  0.65 D member-3 is killed with SIGKILL (no LeaveGroup: the coordinator notices when its session,
  6 s, expires);
* at D the producer stops; the remaining member drains the topic; then the demo checks that every
  acknowledged value was consumed at least once (at-least-once delivery), prints how many values
  were consumed more than once (the price of at-least-once after a kill) and exits 1 if any was lost.

Printed live: each rebalance callback, with member, partitions assigned/revoked, member id and
generation id (confluent-kafka has no accessor for the generation: it is read from librdkafka's
serialized ``consumer_group_metadata()``, see ``parse_group_metadata``), and once a second the
records/s each member consumed.
"""
from __future__ import annotations

import argparse
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from scripts.demo.group_member import (  # the member process and the tests use these too
    COMMIT_INTERVAL_S, HEARTBEAT_INTERVAL_MS, SESSION_TIMEOUT_MS, GroupMetadata, consumer_config, parse_group_metadata,
    run_member)
from scripts.demo.groups_report import (
    MEMBERS, DeliveryCheck, Step, check_delivery, describe_event, parse_event, partition_list, ranges, throughput_line,
    timeline)
from scripts.demo.runner import run_on_scratch_cluster, stopped_by_sigterm

ROOT = Path(__file__).resolve().parents[1]
PARTITIONS = 6
REPLICATION_FACTOR = 3
DEFAULT_DURATION_S = 40.0
DEFAULT_RATE = 500
MIN_DURATION_S = 10.0
DRAIN_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 30.0
CLUSTER_PROPERTIES = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "6"}

__all__ = ["GroupDemo", "GroupMetadata", "DeliveryCheck", "MEMBERS", "SESSION_TIMEOUT_MS", "Step", "check_delivery",
           "consumer_config", "describe_event", "parse_event", "parse_group_metadata", "partition_list", "ranges",
           "run_demo", "run_member", "throughput_line", "timeline"]


# -- the demo ------------------------------------------------------------------------------------
class SequenceProducer(threading.Thread):
    """acks=all, values 0, 1, 2, ... at a steady rate, round-robin over the partitions."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int):
        super().__init__(daemon=True, name="demo-producer")
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                  "client.id": "demo-producer"})
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.acked: list[int] = []
        self.failed: list[str] = []
        self.sent = 0
        self.unflushed = 0
        self._halt = threading.Event()

    def _delivered(self, err, message) -> None:
        if err is None:
            self.acked.append(int(message.value()))
        else:
            self.failed.append(str(err))

    def run(self) -> None:
        start = time.monotonic()
        while not self._halt.is_set():
            due = int((time.monotonic() - start) * self.rate)
            while self.sent < due and not self._halt.is_set():
                try:
                    self.producer.produce(self.topic, str(self.sent).encode(), partition=self.sent % self.partitions,
                                          on_delivery=self._delivered)
                except BufferError:
                    break
                self.sent += 1
            self.producer.poll(0.01)
        self.unflushed = self.producer.flush(30)

    def stop(self) -> None:
        self._halt.set()
        self.join(60)


@dataclass
class MemberProcess:
    name: str
    proc: subprocess.Popen
    reader: threading.Thread
    state: str = "running"  # running | closing | closed | killed | exited


def _create_topic(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    brokers = len(admin.list_topics(timeout=30).brokers)
    rf = min(REPLICATION_FACTOR, brokers)
    admin.create_topics([NewTopic(topic, PARTITIONS, rf)], operation_timeout=30)[topic].result(60)
    deadline = time.monotonic() + 30  # every partition has a leader before the producer starts
    while time.monotonic() < deadline:
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
        if len(partitions) == PARTITIONS and all(p.leader >= 0 for p in partitions.values()):
            break
        time.sleep(0.1)
    return rf


class GroupDemo:
    def __init__(self, bootstrap: str, duration_s: float, rate: int, out: Callable[[str], None] = print):
        stamp = time.strftime("%H%M%S")
        self.bootstrap, self.duration_s, self.rate, self._out = bootstrap, duration_s, rate, out
        self.topic, self.group = f"demo-groups-{stamp}-{os.getpid()}", f"demo-group-{stamp}-{os.getpid()}"
        self.events: queue.Queue = queue.Queue()
        self.members: dict[str, MemberProcess] = {}
        self.owned: dict[str, set[int]] = {}
        self.consumed: Counter = Counter()
        self.second_counts: Counter = Counter()
        self.start = time.monotonic()
        self.producer: SequenceProducer | None = None
        self._last_sent = 0
        self._next_tick = self.start + 1.0

    def say(self, text: str) -> None:
        self._out(f"[{time.monotonic() - self.start:6.1f}s] {text}")

    # members
    def start_member(self, name: str) -> None:
        proc = subprocess.Popen([sys.executable, "-m", "scripts.demo.groups", "--member", name,
                                 "--bootstrap-server", self.bootstrap, "--group", self.group, "--topic", self.topic],
                                cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                start_new_session=True)
        reader = threading.Thread(target=self._read, args=(name, proc), daemon=True, name=f"read-{name}")
        self.members[name] = MemberProcess(name, proc, reader)
        self.owned[name] = set()
        reader.start()
        self.say(f"{name} joins the group (pid {proc.pid})")

    def _read(self, name: str, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            event = parse_event(line)
            if event is not None:
                self.events.put(event)
        self.events.put({"event": "eof", "member": name})

    def close_member(self, name: str) -> None:
        member = self.members[name]
        member.state = "closing"
        self.say(f"{name}: consumer.close() (a clean leave: LeaveGroup, the group rebalances at once)")
        try:
            member.proc.stdin.write("close\n")
            member.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def kill_member(self, name: str) -> None:
        member = self.members[name]
        member.state = "killed"
        member.proc.send_signal(signal.SIGKILL)
        self.owned[name] = set()
        self.say(f"{name}: SIGKILL (pid {member.proc.pid}; no LeaveGroup: the coordinator notices when its "
                 f"{SESSION_TIMEOUT_MS} ms session expires)")

    def _handle(self, event: dict) -> None:
        kind, name = event["event"], event["member"]
        member = self.members.get(name)
        if kind == "consumed":
            values = [v for v in event.get("values", []) if isinstance(v, int)]
            self.consumed.update(values)
            self.second_counts[name] += len(values)
            return
        if kind == "assigned":
            self.owned.setdefault(name, set()).update(event.get("partitions", []))
        elif kind in ("revoked", "lost"):
            self.owned.setdefault(name, set()).difference_update(event.get("partitions", []))
        elif kind == "closed" and member is not None:
            member.state = "closed"
            self.owned[name] = set()
        elif kind == "eof":
            if member is not None:
                try:
                    member.proc.wait(10)
                except subprocess.TimeoutExpired:  # stdout closed, still running: _stop_everything kills it
                    pass
                if member.state in ("running", "closing"):
                    member.state = "exited"
                    self.say(f"{name} exited unexpectedly (exit code {member.proc.returncode})")
            return
        line = describe_event(event)
        if line:
            self.say(line)
        if kind == "assigned" and self._settled():
            live = [n for n in MEMBERS if self.owned.get(n)]
            self.say("group:     " + ", ".join(f"{n} {partition_list(self.owned[n])}" for n in live))

    def _settled(self) -> bool:
        """Every partition owned by exactly one live member."""
        owners = Counter(p for n, m in self.members.items() if m.state in ("running", "closing")
                         for p in self.owned.get(n, ()))
        return sorted(owners) == list(range(PARTITIONS)) and all(c == 1 for c in owners.values())

    def pump(self, until: float, condition: Callable[[], bool] | None = None) -> bool:
        """Handle member reports until monotonic time ``until`` (or ``condition()``), printing the
        per-member throughput each second. True if the condition came true."""
        while True:
            now = time.monotonic()
            if condition is not None and condition():
                return True
            if now >= until:
                return False
            if now >= self._next_tick:
                self._tick()
            try:
                self._handle(self.events.get(timeout=max(0.0, min(until, self._next_tick) - now)))
            except queue.Empty:
                pass

    def _tick(self) -> None:
        sent = self.producer.sent if self.producer else 0
        states = {n: m.state for n, m in self.members.items()}
        self.say(throughput_line(self.second_counts, self.owned, states, sent - self._last_sent))
        self._last_sent = sent
        self.second_counts.clear()
        self._next_tick += 1.0

    def run(self) -> int:
        rf = _create_topic(self.bootstrap, self.topic)
        self.producer = SequenceProducer(self.bootstrap, self.topic, PARTITIONS, self.rate)
        self.start = time.monotonic()
        self._next_tick = self.start + 1.0
        self.say(f"topic {self.topic}: {PARTITIONS} partitions, replication factor {rf}; group {self.group}; "
                 f"session.timeout.ms={SESSION_TIMEOUT_MS}, heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}")
        self.producer.start()
        self.say(f"producer: acks=all, {self.rate} records/s, values are sequence numbers")
        try:
            for step in timeline(self.duration_s):
                self.pump(self.start + step.at_s)
                if step.action == "start":
                    self.start_member(step.member)
                elif step.action == "close":
                    self.close_member(step.member)
                elif step.action == "kill":
                    self.kill_member(step.member)
                elif step.action == "stop-producer":
                    self.producer.stop()
                    self.say(f"producer stopped: {self.producer.sent:,} sent, {len(self.producer.acked):,} "
                             f"acknowledged, {len(self.producer.failed)} failed, {self.producer.unflushed} unflushed")
            return self._drain_and_check()
        finally:
            self._stop_everything()

    def _drain_and_check(self) -> int:
        acked = set(self.producer.acked)
        missing = acked.difference(self.consumed)
        self.say(f"draining: {len(missing):,} acknowledged values not consumed yet")

        def all_consumed() -> bool:
            missing.difference_update([v for v in missing if v in self.consumed])
            return not missing

        drained = self.pump(time.monotonic() + DRAIN_TIMEOUT_S + SESSION_TIMEOUT_MS / 1000, all_consumed)
        self.say("drained: every acknowledged value consumed" if drained else
                 f"NOT drained within {DRAIN_TIMEOUT_S + SESSION_TIMEOUT_MS / 1000:.0f} s")
        self.pump(time.monotonic() + 2 * COMMIT_INTERVAL_S + 0.3)  # the last asynchronous commit
        for name, member in self.members.items():
            if member.state == "running":
                self.close_member(name)
        self.pump(time.monotonic() + CLOSE_TIMEOUT_S,
                  lambda: all(m.state not in ("running", "closing") for m in self.members.values()))
        for member in self.members.values():
            member.reader.join(5)
        while True:  # whatever the readers queued last
            try:
                self._handle(self.events.get_nowait())
            except queue.Empty:
                break
        result = check_delivery(acked, self.consumed)
        self.say(result.describe())
        if result.lost:
            self.say(f"LOST values: {ranges(result.lost)}")
            return 1
        return 0

    def _stop_everything(self) -> None:
        if self.producer is not None and self.producer.is_alive():
            self.producer.stop()
        for member in self.members.values():
            if member.proc.poll() is None:
                member.proc.kill()
                member.proc.wait(10)


def run_demo(bootstrap: str | None, duration_s: float = DEFAULT_DURATION_S, rate: int = DEFAULT_RATE,
             out: Callable[[str], None] = print) -> int:
    return run_on_scratch_cluster("zkafka-demo-groups-", 3, CLUSTER_PROPERTIES, bootstrap, out,
                                  lambda scratch: GroupDemo(scratch.bootstrap, duration_s, rate, out).run())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bootstrap-server", default=None)
    parser.add_argument("--duration-s", type=float, default=DEFAULT_DURATION_S)
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE)
    parser.add_argument("--member", default=None, help=argparse.SUPPRESS)  # internal: run one group member
    parser.add_argument("--group", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--topic", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.member:
        return run_member(args.bootstrap_server, args.group, args.topic, args.member)
    return demo_command(args.bootstrap_server, args.duration_s, args.rate)


def demo_command(bootstrap: str | None, duration_s: float, rate: int) -> int:
    """The CLI entry: SIGTERM stops the demo like Ctrl-C (members, producer and cluster cleaned up)."""
    if duration_s < MIN_DURATION_S or rate < 1:
        raise ValueError(f"--duration-s must be at least {MIN_DURATION_S:g} and --rate positive")
    return stopped_by_sigterm(lambda: run_demo(bootstrap, duration_s, rate, out=lambda line: print(line, flush=True)))


if __name__ == "__main__":
    sys.exit(main())

