"""``zkafka bench scale``: how the control plane's times grow with the number of partitions, on real processes.

Per size, a fresh cluster (temp dir under ``./.zkafka``, free ports, ZooKeeper tickTime 500,
``zookeeper.session.timeout.ms`` as given) and these steps, in this order (``--steps`` picks some; creation
always runs):

1. create: ONE CreateTopics request (confluent-kafka AdminClient) holding all the topics (``--topic-partitions``
   each, RF as given), until every broker's ``/healthz`` metadata has every partition led by a live broker.
   If that request times out, the rest is created ten topics per request and the report says so.
2. latency: Metadata for all topics (20 requests) and one Produce (acks=all) + Fetch round trip on one
   partition (200 of them) while the rest idle.
3. idle: each broker's CPU seconds per second over ``--idle-seconds`` with no traffic, RSS, open fds and
   memory maps, against the same figures taken right after cluster up (no topics), per partition replica.
4. controlled_shutdown: SIGTERM to the non-controller broker leading most, until it exits and every
   survivor's metadata has every partition led by a survivor.
5. restart: that broker started again, until registered (``/healthz`` broker_epoch) and back in every ISR it
   belongs to in every broker's metadata.
6. uncontrolled: kill -9 of the non-controller broker leading most, until every partition it led has a new
   leader in every survivor's metadata (minus the session timeout: the death is noticed when its session
   expires). The broker is then restarted (not measured) and awaited in every ISR.
7. failover: kill -9 of the controller until another broker is controller and every survivor's metadata has
   every partition led by a survivor (minus the session timeout).

A step that times out records ``timeout (> N s)``; the steps after it that need a whole cluster are skipped
for that size and the run goes on with the next size. Progress goes to stderr, the report to stdout.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.bench import scale
from scripts.bench.common import bench_base, create_topic, machine
from scripts.bench.suite.runner import MIN_INSYNC, latency_run
from scripts.bench.suite.scenarios import BY_ID
from scripts.bench.procstat import Sample, cpu_between
from scripts.local.cluster import Cluster, ClusterSpec


class StepTimeout(Exception):
    pass


@dataclass(frozen=True)
class ScaleOptions:
    sizes: list[int]
    brokers: int = 3
    replication_factor: int = 3
    steps: tuple[str, ...] = scale.STEPS
    session_timeout_ms: int = 6000
    topic_partitions: int = 100
    idle_seconds: float = 10.0
    directory: Path | None = None

    def step_timeout(self, partitions: int) -> float:
        """Generous: a minute plus 50 ms per partition (today's creation runs at ~20 ms per partition)."""
        return 60 + partitions * 0.05


def progress(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


class Run:
    """One size on one fresh cluster."""

    def __init__(self, cluster: Cluster, options: ScaleOptions, partitions: int):
        self.cluster, self.options, self.partitions = cluster, options, partitions
        self.timeout = options.step_timeout(partitions)
        self.session_s = options.session_timeout_ms / 1000
        self.pool = ThreadPoolExecutor(options.brokers)
        # each look is a /healthz of every broker (a JSON of every partition): at thousands of partitions
        # polling it back to back would load the brokers measured (py-spy: ~10 % of their samples)
        self.poll_interval = 0.1 + partitions / 10000

    # -- looking -------------------------------------------------------------------------------------------
    def views(self, brokers: list[int]) -> dict[int, dict | None]:
        """Each broker's ``/healthz`` metadata partitions (None: no answer), fetched in parallel."""
        healths = self.pool.map(lambda b: self.cluster.health(b, timeout=30), brokers)
        return {b: (h or {}).get("metadata", {}).get("partitions") if h else None for b, h in zip(brokers, healths)}

    def wait(self, condition, since: float, what: str, interval: float | None = None) -> float:
        """Seconds from ``since`` (perf_counter) until ``condition()`` holds, looking every ``interval`` s (default
        the ``/healthz`` poll interval); StepTimeout past the step timeout."""
        while not condition():
            if time.perf_counter() - since > self.timeout:
                raise StepTimeout(f"{what}: timeout (> {self.timeout:.0f} s)")
            time.sleep(self.poll_interval if interval is None else interval)
        return time.perf_counter() - since

    def everywhere(self, brokers: list[int], check) -> bool:
        self.check_alive(brokers)
        return all(check(v) for v in self.views(brokers).values())

    def check_alive(self, brokers: list[int]) -> None:
        """A broker that should be up and has exited ends the step at once (e.g. out of file descriptors)."""
        dead = [b for b in brokers if self.cluster.broker_pid(b) is None]
        if dead:
            raise StepTimeout(f"broker(s) {dead} exited: see {self.cluster.broker_dir(dead[0]) / 'broker.log'}")

    def live(self) -> list[int]:
        return [b for b in self.cluster.broker_ids if self.cluster.broker_pid(b) is not None]

    def controller(self) -> int | None:
        """The broker that says it is the active controller (a broker busy with many partitions may answer
        ``/healthz`` slower than ``Cluster.controller``'s one second)."""
        healths = self.pool.map(lambda b: (b, self.cluster.health(b, timeout=30)), self.live())
        return next((b for b, h in healths if h and h["controller"].get("is_controller")), None)

    def the_controller(self) -> int:
        start = time.perf_counter()
        while (found := self.controller()) is None:
            if time.perf_counter() - start > self.timeout:
                raise StepTimeout(f"no controller: timeout (> {self.timeout:.0f} s)")
            time.sleep(0.1)
        return found

    def busiest_non_controller(self) -> tuple[int, set[str]]:
        ctrl = self.the_controller()
        view = self.views([ctrl])[ctrl] or {}
        leads = {b: scale.led_by(view, b) for b in self.cluster.broker_ids if b != ctrl}
        broker = max(leads, key=lambda b: len(leads[b]))
        return broker, leads[broker]

    # -- steps ---------------------------------------------------------------------------------------------
    def create(self) -> dict:
        layout = scale.topic_layout(self.partitions, self.options.topic_partitions)
        # the broker answers once its metadata shows every partition led, or REQUEST_TIMED_OUT after
        # operation_timeout (the creation goes on); librdkafka gives up on a request in flight after
        # socket.timeout.ms (default 60 s, at most 300 s), whatever request_timeout says
        request_timeout = min(self.timeout, 300)
        admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap_servers,
                             "socket.timeout.ms": int(request_timeout * 1000)})
        operation_timeout = request_timeout - 10
        start = time.perf_counter()
        futures = admin.create_topics([NewTopic(t, n, self.options.replication_factor) for t, n in layout],
                                      operation_timeout=operation_timeout, request_timeout=request_timeout)
        failed = _failed_topics(futures, request_timeout, lambda: self.check_alive(self.cluster.broker_ids))
        mode = f"one CreateTopics request with {len(layout)} topics (timeout {operation_timeout:.0f} s)"
        answered = time.perf_counter() - start
        if failed:
            mode += (f": {len(failed)} topics failed after {answered:.1f} s ({failed[next(iter(failed))]}); "
                     f"those re-sent 10 topics per request")
            counts = dict(layout)
            for i in range(0, len(failed), 10):
                batch = list(failed)[i:i + 10]
                rest = _failed_topics(admin.create_topics([NewTopic(t, counts[t], self.options.replication_factor)
                                                           for t in batch], operation_timeout=operation_timeout,
                                                          request_timeout=request_timeout), request_timeout,
                                      lambda: self.check_alive(self.cluster.broker_ids))
                if rest:
                    raise StepTimeout(f"creation failed: {rest}")
        brokers = self.cluster.broker_ids
        total = self.wait(lambda: self.everywhere(brokers, lambda v: scale.all_led(v, self.partitions, brokers)),
                          start, "create")
        return {"seconds": total, "answered_s": answered, "mode": mode, "topics": len(layout)}

    def controlled_shutdown(self) -> tuple[dict, int]:
        broker, led = self.busiest_non_controller()
        pid = self.cluster.broker_pid(broker)
        survivors = [b for b in self.cluster.broker_ids if b != broker]
        start = time.perf_counter()
        os.kill(pid, signal.SIGTERM)
        # the exit is a /proc lookup, cheap: looked at every 10 ms, not at the /healthz interval (1.1 s at 10k)
        exited = self.wait(lambda: self.cluster.broker_pid(broker) is None, start, "controlled shutdown exit", 0.01)
        total = self.wait(lambda: self.everywhere(survivors, lambda v: scale.all_led(v, self.partitions, survivors)),
                          start, "controlled shutdown")
        return {"seconds": total, "exited_s": exited, "broker": broker, "led": len(led)}, broker

    def restart(self, broker: int) -> dict:
        start = time.perf_counter()
        self.cluster.start_broker(broker)
        registered = self.wait(lambda: (self.cluster.health(broker, timeout=30) or {}).get("broker_epoch", -1) > 0,
                               start, "restart registration")
        brokers = self.cluster.broker_ids
        total = self.wait(lambda: self.everywhere(brokers, lambda v: scale.in_every_isr(v, broker, self.partitions)),
                          start, "restart ISR")
        return {"seconds": total, "registered_s": registered, "broker": broker}

    def uncontrolled(self) -> dict:
        broker, led = self.busiest_non_controller()
        survivors = [b for b in self.cluster.broker_ids if b != broker]
        start = time.perf_counter()
        self.cluster.signal_broker(broker, signal.SIGKILL)
        total = self.wait(lambda: self.everywhere(survivors, lambda v: scale.leaders_moved(v, led, survivors)),
                          start, "uncontrolled failure")
        result = {"seconds": total - self.session_s, "total_s": total, "broker": broker, "led": len(led)}
        self.restart(broker)  # whole again for the next step (not measured)
        return result

    def failover(self) -> dict:
        old = self.the_controller()
        survivors = [b for b in self.cluster.broker_ids if b != old]
        start = time.perf_counter()
        self.cluster.signal_broker(old, signal.SIGKILL)
        elected = self.wait(lambda: self.controller() not in (None, old), start,
                            "new controller")
        total = self.wait(lambda: self.everywhere(survivors, lambda v: scale.all_led(v, self.partitions, survivors)),
                          start, "failover")
        return {"seconds": total - self.session_s, "total_s": total, "new_controller_s": elected, "old": old}

    def latency(self) -> dict:
        admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap_servers})
        metadata = []
        for _ in range(20):
            start = time.perf_counter()
            admin.list_topics(timeout=60)
            metadata.append(time.perf_counter() - start)
        return {"metadata": scale.p50_p99_ms(metadata), "produce_fetch": _round_trips(self.cluster, 200)}

    def l1(self) -> dict:
        """The suite's L1 at 10k records/s, RF 3, acks=all (``scale.L1_SCENARIO``) on one new partition beside
        the idle bench partitions: ack and end-to-end latency."""
        bootstrap, s = self.cluster.bootstrap_servers, BY_ID[scale.L1_SCENARIO]
        create_topic(bootstrap, scale.L1_TOPIC, 1, min(s.replication_factor, self.options.brokers), config=MIN_INSYNC)
        result = latency_run(bootstrap, scale.L1_TOPIC, s, scale.L1_SECONDS)
        return {"achieved_per_s": result["sent"] / scale.L1_SECONDS, "ack": result["ack"],
                "end_to_end": result["end_to_end"], "failed": result["failed"]}

    def close(self) -> None:
        self.pool.shutdown()


def _failed_topics(futures: dict, timeout: float, check_alive) -> dict[str, str]:
    """Topic -> error of the CreateTopics futures that failed (an existing topic is fine: a timed-out request
    may have been carried out); ``check_alive`` raises if a broker died meanwhile."""
    deadline = time.monotonic() + timeout + 30
    while wait(futures.values(), timeout=1).not_done and time.monotonic() < deadline:
        check_alive()
    failed = {}
    for topic, future in futures.items():
        try:
            future.result(max(1.0, deadline - time.monotonic()))
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                failed[topic] = str(exc.args[0])
        except Exception as exc:  # noqa: BLE001 - the future's own timeout
            failed[topic] = repr(exc)
    return failed


def _round_trips(cluster: Cluster, count: int) -> dict:
    """Produce one record (acks=all, awaited) and fetch it back, ``count`` times, on partition 0 of the first
    topic."""
    topic = scale.topic_layout(1, 1)[0][0]
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0})
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "scale-bench",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 5, "fetch.min.bytes": 1})
    consumer.assign([TopicPartition(topic, 0, -2)])  # OFFSET_BEGINNING: the partition is empty
    try:
        producer.produce(topic, b"warm-up", partition=0)
        producer.flush(30)
        _poll_one(consumer, 30)
        times = []
        for i in range(count):
            start = time.perf_counter()
            producer.produce(topic, str(i).encode(), partition=0)
            producer.flush(30)
            _poll_one(consumer, 30)
            times.append(time.perf_counter() - start)
        return scale.p50_p99_ms(times)
    finally:
        consumer.close()


def _poll_one(consumer: Consumer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            return
    raise StepTimeout("round trip: record not fetched")


def footprint(cluster: Cluster) -> dict[int, dict]:
    """Per broker: RSS (KiB), open fds and memory maps, from /proc."""
    out = {}
    for b in cluster.broker_ids:
        pid = cluster.broker_pid(b)
        if pid is None:
            continue
        proc = Path(f"/proc/{pid}")
        out[b] = {"pid": pid, "rss_kib": scale.status_kib((proc / "status").read_text(), "VmRSS"),
                  "fds": len(os.listdir(proc / "fd")), "maps": len((proc / "maps").read_text().splitlines())}
    return out


def idle_cost(cluster: Cluster, seconds: float) -> dict:
    """Footprint plus each broker's CPU seconds per second over ``seconds`` of no traffic."""
    feet = footprint(cluster)
    before = Sample.take([f["pid"] for f in feet.values()])
    time.sleep(seconds)
    after = Sample.take([f["pid"] for f in feet.values()])
    for f in feet.values():
        f["cpu_per_s"] = cpu_between(Sample({f["pid"]: before.cpu[f["pid"]]}, 0, 0),
                                     Sample({f["pid"]: after.cpu[f["pid"]]}, 0, 0)) / seconds
    return feet


def run_size(options: ScaleOptions, partitions: int, base: Path) -> dict:
    spec = ClusterSpec.on_free_ports(options.brokers, tick_time=500, session_timeout_ms=options.session_timeout_ms)
    directory = Path(tempfile.mkdtemp(prefix=f"bench-scale-{partitions}-", dir=base))
    cluster = Cluster(directory, spec)
    result: dict = {"partitions": partitions, "steps": {}, "notes": []}
    ok = False
    run = Run(cluster, options, partitions)
    try:
        cluster.up(120)
        baseline = idle_cost(cluster, options.idle_seconds) if "idle" in options.steps else None
        ok = _steps(run, options, baseline, result)
    finally:
        run.close()
        cluster.down()
        if ok:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            result["notes"].append(f"broker logs kept in {directory}")
    return result


def _steps(run: Run, options: ScaleOptions, baseline: dict | None, result: dict) -> bool:
    steps = result["steps"]
    for step in options.steps:
        progress(f"{run.partitions} partitions: {step}")
        try:
            if step == "create":
                steps["create"] = run.create()
            elif step == "latency":
                result["latency"] = run.latency()
            elif step == "l1":
                result["l1"] = run.l1()
            elif step == "idle":
                result["idle"] = {"baseline": baseline, "loaded": idle_cost(run.cluster, options.idle_seconds)}
            elif step == "controlled_shutdown":
                steps["controlled_shutdown"], broker = run.controlled_shutdown()
                restarted = run.restart(broker)
                if "restart" in options.steps:
                    steps["restart"] = restarted
            elif step == "uncontrolled":
                steps["uncontrolled"] = run.uncontrolled()
            elif step == "failover":
                steps["failover"] = run.failover()
        except Exception as exc:  # noqa: BLE001 - a failed step is reported, the next size still runs
            steps[step] = {"seconds": None, "status": str(exc) if isinstance(exc, StepTimeout) else f"error: {exc!r}"}
            result["notes"].append(f"{step}: {exc}; the rest of this size skipped")
            progress(f"{run.partitions} partitions: {exc}")
            return False
        progress(f"{run.partitions} partitions: {step} done: {steps.get(step) or result.get(step)}")
    return True


def run_scale_bench(options: ScaleOptions) -> dict:
    base = Path(options.directory) if options.directory else bench_base()
    base.mkdir(parents=True, exist_ok=True)
    sizes = [run_size(options, n, base) for n in options.sizes]
    return {"machine": machine(), "brokers": options.brokers, "replication_factor": options.replication_factor,
            "session_timeout_ms": options.session_timeout_ms, "topic_partitions": options.topic_partitions,
            "idle_seconds": options.idle_seconds, "steps": list(options.steps), "sizes": sizes}
