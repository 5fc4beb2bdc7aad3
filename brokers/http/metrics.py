"""``GET /metrics``: Prometheus text exposition (the only module that imports prometheus-client).

Nothing is counted here: the broker's packages keep plain numbers (``brokers.stats.BrokerStats``, the
ZooKeeper gateway's latency histogram, the coordinator's rebalance count, the transaction coordinator's
``describe()`` through ``BrokerState.transaction_view``, the logs and their last stable offsets) and
``BrokerCollector`` turns them into metric families at scrape time. Consumer lag needs the high
watermarks of partitions other brokers lead, so a scrape first gathers them (``ClusterReader``), then
renders synchronously: nothing interleaves between the two on the broker's one event loop.

Names follow Kafka's JMX metrics, flattened the way the JMX exporter's common rules do
(``kafka_server_brokertopicmetrics_bytesin_total`` becomes ``kafka_server_topic_bytes_in_total``).
Client quotas (Kafka's ``kafka.server:type=Produce|Fetch|Request|ControllerMutation,user=U,client-id=C``) become
``kafka_server_<type>_<metric>{user,client_id}``, one series per sensor (``brokers.http.quota_views``), only
for the types with a quota configured: ``kafka_server_produce_byte_rate`` / ``kafka_server_fetch_byte_rate``
(bytes/s over the quota window), ``kafka_server_request_request_time`` (%), ``kafka_server_controllermutation_tokens``
(credits left; no sample while the tags are unlimited), and for each type ``..._quota_limit`` (the bound; no
sample while unlimited), ``..._throttle_time_ms_total`` (throttle time handed out) and
``..._throttled_responses_total`` (responses that carried one).
``EventLoopMonitor`` measures how late a timer fires: the broker's event-loop lag.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Iterator

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector

from brokers.http import auth, quota_views, views
from brokers.http.cluster_reader import ClusterReader, local_groups
from brokers.http.ports import BrokerState
from brokers.security import acls as acl
from brokers.stats import LatencyHistogram

log = logging.getLogger(__name__)

LOOP_PROBE_INTERVAL_S = 0.25
SESSION_STATES = ("CONNECTED", "SUSPENDED", "LOST", "NOT_CONNECTED")
QUOTA_DOCS = {"byte_rate": "Bytes per second over the quota window, per client quota sensor",
              "request_time": "Request handling time as a percentage of one event loop, per client quota sensor",
              "tokens": "Controller mutation credits left in the token bucket, per client quota sensor"}
GROUP_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")  # Kafka's GroupState names


def _histogram(name: str, doc: str, labels: list[str], series: list[tuple[list[str], LatencyHistogram]]) -> Metric:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for values, histogram in series:
        family.add_metric(values, histogram.cumulative(), histogram.sum)
    return family


def _gauge(name: str, doc: str, value: float) -> Metric:
    return GaugeMetricFamily(name, doc, value=value)


class BrokerCollector:
    """Every metric of one broker, read from its state when Prometheus scrapes."""

    def __init__(self, broker: BrokerState):
        self.broker = broker
        self.groups: list[dict] = []  # the groups this broker coordinates, with lag: set before each scrape

    def collect(self) -> Iterator[Metric]:
        for part in (self._network, self._topics, self._replication, self._controller, self._zookeeper,
                     self._groups, self._transactions, self._logs, self._quotas, self._loop):
            try:
                yield from part()
            except Exception:  # noqa: BLE001 - one broken family must not hide the others
                log.exception("metrics: %s failed", part.__name__)

    def _network(self) -> Iterator[Metric]:
        stats = self.broker.stats
        yield _histogram("kafka_network_request_duration_seconds",
                         "Time from a request's arrival to its response, per API and version",
                         ["api", "version"], [([api, str(v)], h) for (api, v), h in sorted(stats.requests.items())])
        errors = CounterMetricFamily("kafka_network_request_errors", "Requests that closed their connection",
                                     labels=["api", "version"])
        for (api, version), n in sorted(stats.request_errors.items()):
            errors.add_metric([api, str(version)], n)
        yield errors

    def _topics(self) -> Iterator[Metric]:
        families = {name: CounterMetricFamily(f"kafka_server_topic_{name}", doc, labels=["topic"]) for name, doc in (
            ("bytes_in", "Bytes produced to the topic's partitions this broker leads"),
            ("bytes_out", "Bytes sent to consumers (replication excluded)"),
            ("messages_in", "Records appended"),
            ("produce_requests", "Produce appends to the topic (Kafka's TotalProduceRequestsPerSec)"),
            ("fetch_requests", "Consumer fetches that returned the topic's records (TotalFetchRequestsPerSec)"),
            ("produce_message_conversions", "Records up-converted from Produce v0-2 message sets"),
            ("fetch_message_conversions", "Records down-converted for Fetch v0-3"))}
        for topic, traffic in sorted(self.broker.stats.topics.items()):
            for name, family in families.items():
                family.add_metric([topic], getattr(traffic, name))
        yield from families.values()

    def _replication(self) -> Iterator[Metric]:
        manager = self.broker.replica_manager
        partitions = list(manager.partitions.values()) if manager is not None else []
        led = [p for p in partitions if p.is_leader]
        yield _gauge("kafka_server_produce_purgatory_size", "Produce requests (acks=all) waiting for the ISR",
                     sum(len(p.purgatory) for p in led))
        yield _gauge("kafka_server_fetch_purgatory_size", "Fetch requests long-polling for data",
                     self.broker.stats.fetches_parked)
        yield _gauge("kafka_server_under_replicated_partitions", "Partitions led here whose ISR is short of replicas",
                     sum(len(p.isr) < len(p.replicas) for p in led))
        yield _gauge("kafka_server_leader_count", "Partitions led by this broker", len(led))
        yield _gauge("kafka_server_partition_count", "Replicas hosted by this broker", len(partitions))
        yield from self._fetch_sessions()
        stats = self.broker.stats
        yield CounterMetricFamily("kafka_server_isr_shrinks", "ISR shrinks written by this leader",
                                  value=stats.isr_shrinks)
        yield CounterMetricFamily("kafka_server_isr_expands", "ISR expansions written by this leader",
                                  value=stats.isr_expands)

    def _fetch_sessions(self) -> Iterator[Metric]:
        """Kafka's kafka.server:type=FetchSessionCache metrics (KIP-227)."""
        cache = getattr(self.broker, "fetch_sessions", None)
        if cache is None:
            return
        yield _gauge("kafka_server_fetch_session_cache_num_incremental_fetch_sessions",
                     "Incremental fetch sessions cached", len(cache.sessions))
        yield _gauge("kafka_server_fetch_session_cache_num_incremental_fetch_partitions_cached",
                     "Partitions in the cached incremental fetch sessions", cache.partitions_cached())
        yield CounterMetricFamily("kafka_server_fetch_session_cache_incremental_fetch_session_evictions",
                                  "Incremental fetch sessions evicted", value=cache.evictions)
        yield CounterMetricFamily("kafka_server_fetch_session_cache_incremental_fetches",
                                  "Incremental Fetch requests answered from a session", value=cache.incremental_fetches)

    def _controller(self) -> Iterator[Metric]:
        controller = self.broker.controller
        active = bool(controller is not None and controller.is_active)
        yield _gauge("kafka_controller_active_controller_count", "1 on the active controller", int(active))
        epoch = controller.context.epoch if active else (
            self.broker.replica_manager.controller_epoch if self.broker.replica_manager else 0)
        yield _gauge("kafka_controller_epoch", "The controller epoch (the highest this broker has seen)", epoch)
        cache = self.broker.metadata_cache
        offline = sum(1 for s in cache.partitions.values() if s.leader < 0 or s.leader not in cache.live_brokers)
        yield _gauge("kafka_controller_offline_partitions_count",
                     "Partitions without a live leader (reported by the active controller only, as Kafka)",
                     offline if active else 0)

    def _zookeeper(self) -> Iterator[Metric]:
        zk = self.broker.zk
        state = zk.session_state.value if zk.session_state is not None else "NOT_CONNECTED"
        family = GaugeMetricFamily("kafka_zookeeper_session_state", "1 for the current ZooKeeper session state",
                                   labels=["state"])
        for name in SESSION_STATES:
            family.add_metric([name], int(name == state))
        yield family
        yield _histogram("kafka_zookeeper_request_duration_seconds", "ZooKeeper round trips", [], [([], zk.latency)])

    def _groups(self) -> Iterator[Metric]:
        coordinator = self.broker.group_coordinator
        counts: dict[str, int] = {s: 0 for s in GROUP_STATES}
        for group in self.groups:
            counts[group["state"]] = counts.get(group["state"], 0) + 1
        family = GaugeMetricFamily("kafka_coordinator_group_count", "Groups this broker coordinates, per state",
                                   labels=["state"])
        for state, n in counts.items():
            family.add_metric([state], n)
        yield family
        yield CounterMetricFamily("kafka_coordinator_rebalances", "Rebalances this coordinator started",
                                  value=coordinator.rebalances)
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus committed offset",
                                labels=["group", "topic", "partition"])
        committed = GaugeMetricFamily("kafka_consumergroup_committed_offset", "Committed offset",
                                      labels=["group", "topic", "partition"])
        for group in self.groups:
            for entry in group["offsets"]:
                labels = [group["group_id"], entry["topic"], str(entry["partition"])]
                committed.add_metric(labels, entry["committed_offset"])
                if entry["lag"] is not None:
                    lag.add_metric(labels, entry["lag"])
        yield lag
        yield committed

    def _transactions(self) -> Iterator[Metric]:
        described = self.broker.transaction_view()
        ongoing: dict[str, int] = {s: 0 for s in views.ONGOING_STATES}
        for txn in views.local_transactions(described, self.broker.broker_id):
            if txn["state"] in ongoing:  # not an idle one (Empty, Complete*) listed for its pending transition
                ongoing[txn["state"]] += 1
        family = GaugeMetricFamily("kafka_coordinator_transaction_ongoing_count",
                                   "Transactions in progress this broker coordinates, per TransactionState",
                                   labels=["state"])
        for state, n in ongoing.items():
            family.add_metric([state], n)
        yield family
        counters = views.transaction_counters(described)
        yield _gauge("kafka_coordinator_transactional_id_count", "Transactional ids this broker coordinates",
                     counters["transactional_ids"])
        for name, doc in (("markers_written", "Transaction markers (one per partition) this coordinator had written"),
                          ("aborts_by_timeout", "Transactions aborted because they outlived their timeout"),
                          ("transactions_committed", "Transactions this coordinator completed with a commit"),
                          ("transactions_aborted", "Transactions this coordinator completed with an abort"),
                          ("expired_transactional_ids", "Transactional ids removed after "
                                                        "transactional.id.expiration.ms")):
            yield CounterMetricFamily(f"kafka_coordinator_transaction_{name}", doc, value=counters[name])

    def _logs(self) -> Iterator[Metric]:
        manager = self.broker.replica_manager
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_size_bytes", "Bytes of the replica's log on disk", labels=labels)
        segments = GaugeMetricFamily("kafka_log_segments", "Segments of the replica's log", labels=labels)
        end = GaugeMetricFamily("kafka_log_end_offset", "Log end offset of the replica", labels=labels)
        start = GaugeMetricFamily("kafka_log_start_offset", "Log start offset of the replica", labels=labels)
        stable = GaugeMetricFamily("kafka_log_last_stable_offset",
                                   "Last stable offset of the partitions led here (read_committed consumers' end)",
                                   labels=labels)
        lso_lag = GaugeMetricFamily("kafka_cluster_partition_last_stable_offset_lag",
                                    "High watermark minus last stable offset of the partitions led here "
                                    "(Kafka's LastStableOffsetLag: records held back by open transactions)",
                                    labels=labels)
        for tp, partition in sorted(manager.partitions.items()) if manager is not None else ():
            values, log_ = [tp.topic, str(tp.partition)], partition.log
            size.add_metric(values, log_.size)
            segments.add_metric(values, len(log_.segments))
            end.add_metric(values, log_.log_end_offset)
            start.add_metric(values, log_.log_start_offset)
            if partition.is_leader:
                row = {"high_watermark": log_.high_watermark, "last_stable_offset": partition.last_stable_offset}
                stable.add_metric(values, row["last_stable_offset"])
                lso_lag.add_metric(values, views.lso_lag(row))
        yield from (size, segments, end, start, stable, lso_lag)

    def _quotas(self) -> Iterator[Metric]:
        """Kafka's client quota sensors: per quota type, the measured value, the bound, the throttle totals."""
        quotas = getattr(self.broker, "quotas", None)
        if quotas is None:
            return
        by_type: dict = {}
        for reading in quota_views.readings(quotas):
            by_type.setdefault(reading.quota_type, []).append(reading)
        labels = ["user", "client_id"]
        for quota_type, readings in by_type.items():
            prefix = f"kafka_server_{quota_type.group.lower()}"
            metric, _, limit_unit = quota_views.MEASURES[quota_type]
            value = GaugeMetricFamily(f"{prefix}_{metric}", QUOTA_DOCS[metric], labels=labels)
            limit = GaugeMetricFamily(f"{prefix}_quota_limit",
                                      f"The {quota_type.key} bound of the sensor ({limit_unit}); absent: unlimited",
                                      labels=labels)
            throttle = CounterMetricFamily(f"{prefix}_throttle_time_ms",
                                           f"Throttle time (ms) {quota_type.group} quota responses carried",
                                           labels=labels)
            throttled = CounterMetricFamily(f"{prefix}_throttled_responses",
                                            f"Responses throttled by the {quota_type.group} quota", labels=labels)
            for reading in readings:
                tags = [reading.user, reading.client_id]
                if reading.value is not None:
                    value.add_metric(tags, reading.value)
                if reading.limit is not None:
                    limit.add_metric(tags, reading.limit)
                throttle.add_metric(tags, reading.throttle_time_ms_total)
                throttled.add_metric(tags, reading.throttled_responses)
            yield from (value, limit, throttle, throttled)

    def _loop(self) -> Iterator[Metric]:
        stats = self.broker.stats
        yield _gauge("kafka_event_loop_lag_seconds", "How late the last event-loop probe timer fired",
                     stats.event_loop_lag_s)
        yield _histogram("kafka_event_loop_lag_probe_seconds", "Event-loop probe delays", [],
                         [([], stats.event_loop_lag)])


class EventLoopMonitor:
    """Sleeps ``LOOP_PROBE_INTERVAL_S`` over and over; how much longer each sleep took is the loop's lag."""

    def __init__(self, broker: BrokerState):
        self.broker = broker
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await asyncio.sleep(LOOP_PROBE_INTERVAL_S)
            lag = max(0.0, loop.time() - started - LOOP_PROBE_INTERVAL_S)
            self.broker.stats.event_loop_lag_s = lag
            self.broker.stats.event_loop_lag.observe(lag)


METRICS_KEY: web.AppKey[BrokerCollector] = web.AppKey("metrics", BrokerCollector)


def add_metrics_route(app: web.Application, broker: BrokerState, reader: ClusterReader) -> None:
    registry = CollectorRegistry(auto_describe=False)
    collector = BrokerCollector(broker)
    registry.register(collector)
    ProcessCollector(registry=registry)
    monitor = EventLoopMonitor(broker)

    async def start_monitor(_: web.Application) -> None:
        monitor.start()

    async def stop_monitor(_: web.Application) -> None:
        await monitor.stop()

    async def metrics(request: web.Request) -> web.Response:
        if not auth.allowed(request, acl.DESCRIBE, acl.CLUSTER, acl.CLUSTER_NAME):  # every topic's numbers
            return web.Response(status=403, text=f"{auth.identity(request).principal} may not describe the cluster\n")
        groups = local_groups(broker)  # lag needs the leaders' high watermarks: ask only if there are offsets
        partitions = await reader.partitions() if any(g["offsets"] for g in groups) else []
        collector.groups = views.with_lag(groups, partitions)
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.on_startup.append(start_monitor)
    app.on_cleanup.append(stop_monitor)
    app[METRICS_KEY] = collector
    app.router.add_get("/metrics", metrics)
