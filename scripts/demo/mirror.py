"""``zkafka demo mirror``: a consumer group fails over from one cluster to another with MirrorMaker 2's
translated offsets (issue 29), live.

Two clusters are started in a temp dir (each its own ZooKeeper): ``a`` with 2 brokers, ``b`` with 1, and
``kafka-mirror-maker`` (``scripts/tools/kafka_mirror_maker``) as a process of its own, mirroring topic
``orders`` of a to ``a.orders`` at b, with checkpoints of the groups' offsets every ``--checkpoint-interval-s``
and ``sync.group.offsets`` on. Then:

* a producer sends ``--records`` numbered records to ``orders`` at a (``--rate`` per second, acks=all);
* ``orders-app`` (``scripts/demo/mirror_app.py``, its own process) reads them in group ``orders-app`` at a,
  ``--read-rate`` per second, committing after processing each batch;
* once every record is at b and orders-app is about half-way, region a fails: a's brokers and orders-app's
  process there are killed (SIGKILL), a's ZooKeeper is stopped;
* ``kafka-mirror-maker translate-offsets ... --execute`` commits the group's translated offsets at b (its table
  is shown; the mirror's ``sync.group.offsets`` has usually committed the same ones already);
* orders-app starts again at b, on ``a.orders``, from the group's committed offsets there, and reads to the end.

The tally (``mirror_report``): produced N, consumed N distinct across both clusters, lost 0, and the records
read again at b with their causes, against MM2's bound (``reread_window``). Exit 0 when nothing was lost, the
bound held and the group started at b from the translated offsets; 1 otherwise; 130 on Ctrl-C or SIGTERM.
The mirror and cluster b are stopped in every case; the temp dir (logs, ``mm2.properties``) is kept and named
when the demo fails.
"""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.demo.mirror_clients import MemberProcess, PacedProducer, group_offsets
from scripts.demo.mirror_report import (
    mirror_properties, offsets_text, parse_translate_table, progress_line, reread_window, tally)
from scripts.demo.runner import stopped_by_sigterm
from scripts.local.cluster import Cluster, ClusterSpec
from scripts.tools.kafka_mirror_maker import clients, translate
from scripts.tools.kafka_mirror_maker.config import load
from scripts.tools.kafka_mirror_maker.launcher import MirrorProcess

TOPIC, REMOTE_TOPIC, GROUP = "orders", "a.orders", "orders-app"
PARTITIONS = 3
A_BROKERS, B_BROKERS = 2, 1
OFFSET_LAG_MAX = 100
DEFAULT_RECORDS, DEFAULT_RATE, DEFAULT_READ_RATE, DEFAULT_INTERVAL_S = 10_000, 1000, 300, 1.0
MIN_RECORDS = 1000
PHASE_TIMEOUT_S = 120.0  # beyond the time a phase takes at the rates asked for
MIRROR_STOP_S = 5.0  # with its source gone it would sit in cluster a's 30 s client timeouts
COMMON = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "4",
          "transaction.state.log.num.partitions": "2", "replica.fetch.backoff.ms": "200"}
B_PROPERTIES = {**COMMON, "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"}


class DemoFailed(RuntimeError):
    pass


class MirrorDemo:
    def __init__(self, directory: Path, records: int, rate: int, read_rate: int, interval_s: float,
                 exactly_once: bool, out: Callable[[str], None]):
        self.dir, self.records, self.rate, self.read_rate = directory, records, rate, read_rate
        self.interval_s, self.exactly_once, self._out = interval_s, exactly_once, out
        self.a = Cluster(directory / "a", ClusterSpec.on_free_ports(A_BROKERS, properties=dict(COMMON)))
        self.b = Cluster(directory / "b", ClusterSpec.on_free_ports(B_BROKERS, properties=dict(B_PROPERTIES)))
        self.config = directory / "mm2.properties"
        self.mirror = MirrorProcess(self.config, directory / "mirror.log")
        self.members: list[MemberProcess] = []
        self.progress_group = ""
        self.start = time.monotonic()

    def say(self, text: str) -> None:
        self._out(f"[{time.monotonic() - self.start:6.1f}s] {text}")

    # -- the story -------------------------------------------------------------------------------------------
    def run(self) -> int:
        self._start_clusters()
        self._start_mirror()
        producer = PacedProducer(self.a.bootstrap_servers, TOPIC, PARTITIONS, self.records, self.rate).start()
        self.say(f"producer: {self.records:,} numbered records to {TOPIC} at a, {self.rate:,}/s (acks=all)")
        at_a = self._member("a", self.a.bootstrap_servers, TOPIC, self.read_rate)
        self.say(f"orders-app (group {GROUP}) reads {TOPIC} at a, {self.read_rate:,} records/s, committing after "
                 f"each batch it processed")
        self._until_failover_point(producer, at_a, AdminClient({"bootstrap.servers": self.b.bootstrap_servers}))
        self._fail_region_a(at_a)
        translated = self._move_group()
        at_b = self._member("b", self.b.bootstrap_servers, REMOTE_TOPIC, 0, exit_at_end=True)
        start_at_b = self._read_to_end(at_b)
        window = reread_window(self.read_rate, self.interval_s, OFFSET_LAG_MAX, PARTITIONS)
        result = tally(producer.acked_values(), at_a.records, at_a.committed, translated, start_at_b, at_b.records,
                       window)
        for line in result.lines(self.read_rate, self.interval_s, OFFSET_LAG_MAX, PARTITIONS):
            self.say(line)
        return 0 if result.ok else 1

    def _start_clusters(self) -> None:
        self._out(f"starting cluster a (ZooKeeper + {A_BROKERS} brokers) and cluster b (ZooKeeper + {B_BROKERS} "
                  f"broker) in {self.dir}")
        self.a.up(120)
        self.b.up(120)
        self.start = time.monotonic()
        self.say(f"cluster a: {self.a.bootstrap_servers} | cluster b: {self.b.bootstrap_servers}")
        admin = AdminClient({"bootstrap.servers": self.a.bootstrap_servers})
        for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, A_BROKERS)], operation_timeout=30).values():
            future.result(60)
        self.say(f"topic {TOPIC} at a: {PARTITIONS} partitions (RF {A_BROKERS})")

    def _start_mirror(self) -> None:
        self.config.write_text(mirror_properties(self.a.bootstrap_servers, self.b.bootstrap_servers, TOPIC,
                                                 self.interval_s, OFFSET_LAG_MAX, self.exactly_once))
        self.progress_group = clients.progress_group(load(self.config).flows[0])  # the flow's progress at b
        self.mirror.start(120)
        mode = "exactly once" if self.exactly_once else "at least once"
        self.say(f"kafka-mirror-maker {self.config} (pid {self.mirror.proc.pid}, "
                 f"http://127.0.0.1:{self.mirror.http_port}/): {TOPIC} at a -> {REMOTE_TOPIC} at b, {mode}; "
                 f"checkpoints of group offsets every {self.interval_s:g} s, sync.group.offsets on")

    def _member(self, where: str, bootstrap: str, topic: str, rate: int, exit_at_end: bool = False) -> MemberProcess:
        member = MemberProcess(f"orders-app at {where}", bootstrap, topic, GROUP, PARTITIONS, rate, exit_at_end,
                               self.dir / f"orders-app-{where}.log")
        self.members.append(member)
        return member

    def _until_failover_point(self, producer: PacedProducer, at_a: MemberProcess, b_admin: AdminClient) -> None:
        """A line a second until everything produced is at b (the mirror's committed progress), orders-app is
        half-way and b holds a checkpoint of the group for every partition it committed at a."""
        expected_s = max(self.records / self.rate, self.records / 2 / self.read_rate)
        deadline, next_line = time.monotonic() + expected_s + PHASE_TIMEOUT_S, time.monotonic() + 1.0
        while time.monotonic() < deadline:
            at_a.check_alive()
            if producer.error is not None:
                raise DemoFailed(f"producer: {producer.error}")
            flow = self.mirror.flow()
            progress = sum(o for (t, _), o in group_offsets(b_admin, self.progress_group).items() if t == REMOTE_TOPIC)
            done = producer.done.is_set() and progress >= producer.acked_count() \
                and at_a.processed_count() >= self.records // 2 and self._checkpointed(set(at_a.committed))
            if done or time.monotonic() >= next_line:
                next_line += 1.0
                self.say(progress_line(producer.acked_count(), flow["record_count"], flow["checkpoints"],
                                       at_a.processed_count(), sum(at_a.committed.values())))
            if done:
                self.say(f"every record is at b, with a checkpoint of orders-app for each partition; orders-app is "
                         f"half-way: its offsets at a {offsets_text(at_a.committed, TOPIC)}")
                return
            time.sleep(0.1)
        raise DemoFailed(f"the mirror or orders-app did not get there in {expected_s + PHASE_TIMEOUT_S:.0f} s")

    def _checkpointed(self, partitions: set[int]) -> bool:
        """b holds a checkpoint of the group for each of ``partitions`` (what translate-offsets will read)."""
        try:
            newest = translate.newest(translate.read_checkpoints(load(self.config), "a", "b"), GROUP)
        except translate.TranslateError:  # no checkpoint topic yet
            return False
        return bool(partitions) and partitions <= {p for (topic, p) in newest if topic == REMOTE_TOPIC}

    def _fail_region_a(self, at_a: MemberProcess) -> None:
        for broker in self.a.broker_ids:
            self.a.signal_broker(broker, signal.SIGKILL)
        at_a.kill()
        self.say(f"region a fails: cluster a's brokers {', '.join(map(str, self.a.broker_ids))} and orders-app's "
                 f"process there killed (SIGKILL)")
        self.a.down()
        self.say(f"cluster a is gone (ZooKeeper stopped too); orders-app had processed {at_a.processed_count():,} "
                 f"records there, committed {offsets_text(at_a.committed, TOPIC)}")

    def _move_group(self) -> dict[int, tuple[int, int]]:
        """``translate-offsets --execute``: the group's offsets at b from the newest checkpoints there."""
        admin = AdminClient({"bootstrap.servers": self.b.bootstrap_servers})
        before = {p: o for (t, p), o in group_offsets(admin, GROUP).items() if t == REMOTE_TOPIC}
        synced = " (committed by the mirror's sync.group.offsets for a group with no member at b)" if before else ""
        self.say(f"{GROUP}'s offsets at b now: {offsets_text(before, REMOTE_TOPIC)}{synced}")
        argv = ["translate-offsets", "--config", str(self.config), "--source", "a", "--target", "b",
                "--group", GROUP, "--execute"]
        self.say(f"$ kafka-mirror-maker {' '.join(argv)}")
        tool = subprocess.run([sys.executable, "-m", "scripts.tools.kafka_mirror_maker", *argv],
                              capture_output=True, text=True, timeout=120)
        for line in (tool.stdout if tool.returncode == 0 else tool.stdout + tool.stderr).splitlines():
            self._out(f"          {line}")
        if tool.returncode != 0:
            raise DemoFailed(f"translate-offsets exited {tool.returncode}")
        return parse_translate_table(tool.stdout.splitlines(), REMOTE_TOPIC)

    def _read_to_end(self, at_b: MemberProcess) -> dict[int, int]:
        """orders-app at b to the end of a.orders; the group's committed offsets when it started there."""
        assigned = at_b.wait_assigned(60)
        self.say(f"orders-app starts at b on {REMOTE_TOPIC}: the group's committed offsets there "
                 f"{offsets_text(assigned, REMOTE_TOPIC)}")
        deadline, next_line = time.monotonic() + PHASE_TIMEOUT_S, time.monotonic() + 1.0
        while not at_b.ended():
            at_b.check_alive()
            if time.monotonic() >= deadline:
                raise DemoFailed(f"orders-app at b did not reach the end of {REMOTE_TOPIC} in {PHASE_TIMEOUT_S:.0f} s")
            if time.monotonic() >= next_line:
                next_line += 1.0
                self.say(f"orders-app at b: read {at_b.processed_count():,}")
            time.sleep(0.1)
        self.say(f"orders-app at b: read {at_b.processed_count():,} records, to the end of {REMOTE_TOPIC}")
        return assigned

    # -- stopping --------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Everything this demo started, whatever happened: the members, the mirror, both clusters."""
        for member in self.members:
            member.kill()
        if self.mirror.proc is not None and self.mirror.proc.poll() is None:
            self._out("stopping kafka-mirror-maker (SIGTERM) and the clusters")
            try:
                self.mirror.stop(MIRROR_STOP_S)
            except subprocess.TimeoutExpired:
                self._out(f"kafka-mirror-maker still waiting on cluster a {MIRROR_STOP_S:.0f} s after SIGTERM: killed")
                self.mirror.kill()
        for cluster in (self.a, self.b):
            cluster.down()


def run_demo(records: int = DEFAULT_RECORDS, rate: int = DEFAULT_RATE, read_rate: int = DEFAULT_READ_RATE,
             interval_s: float = DEFAULT_INTERVAL_S, exactly_once: bool = False,
             out: Callable[[str], None] = print) -> int:
    directory = Path(tempfile.mkdtemp(prefix="zkafka-demo-mirror-"))
    demo = MirrorDemo(directory, records, rate, read_rate, interval_s, exactly_once, out)
    code = 1
    try:
        code = demo.run()
    except KeyboardInterrupt:
        out("interrupted: stopping")
        code = 130
    except (DemoFailed, KafkaException, OSError, RuntimeError) as exc:
        out(f"demo failed: {exc}")
    finally:
        demo.stop()
        if code in (0, 130):
            shutil.rmtree(directory, ignore_errors=True)
        else:
            out(f"logs kept in {directory} (mirror.log, orders-app-*.log, a/, b/; rm -rf {directory})")
    return code


def demo_command(records: int, rate: int, read_rate: int, interval_s: float, exactly_once: bool) -> int:
    """The CLI entry: SIGTERM stops the demo like Ctrl-C (processes and clusters cleaned up)."""
    if records < MIN_RECORDS or rate < 1 or read_rate < 1 or interval_s <= 0:
        raise ValueError(f"--records must be at least {MIN_RECORDS}, the rates and the interval positive")
    return stopped_by_sigterm(lambda: run_demo(records, rate, read_rate, interval_s, exactly_once,
                                               out=lambda line: print(line, flush=True)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS)
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE)
    parser.add_argument("--read-rate", type=int, default=DEFAULT_READ_RATE)
    parser.add_argument("--checkpoint-interval-s", type=float, default=DEFAULT_INTERVAL_S)
    parser.add_argument("--exactly-once", action="store_true")
    args = parser.parse_args(argv)
    return demo_command(args.records, args.rate, args.read_rate, args.checkpoint_interval_s, args.exactly_once)


if __name__ == "__main__":
    sys.exit(main())
