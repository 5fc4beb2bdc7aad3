"""``zkafka cluster up|status|down``: a local cluster, a real ZooKeeper and N broker processes.

Exit codes: 0, or 1 on an error; ``status`` 1 also when a broker is down or no controller is elected.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    cluster = subparsers.add_parser("cluster", help="a local cluster: real ZooKeeper + N broker processes")
    cluster.set_defaults(run=run)
    commands = cluster.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND", required=True)
    up = commands.add_parser("up", help="start ZooKeeper and the brokers; return once a controller is elected")
    up.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    up.add_argument("--zookeeper-port", type=int, default=2181)
    up.add_argument("--kafka-port-base", type=int, default=9092, help="broker i listens on BASE+i-1 (default 9092)")
    up.add_argument("--http-port-base", type=int, default=8080, help="broker i serves HTTP on BASE+i-1 (default 8080)")
    up.add_argument("--session-timeout-ms", type=int, default=18000, help="zookeeper.session.timeout.ms")
    up.add_argument("--tick-time", type=int, default=2000, help="ZooKeeper tickTime in ms")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the cluster")
    up.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                    help="extra broker property for every broker (repeatable). In a value, {kafka_port} is the "
                         "broker's own Kafka port (BASE+i-1) and {broker_id} its id, e.g. a SASL_SSL listener "
                         "instead of PLAINTEXT: --property 'listeners=SASL_SSL://127.0.0.1:{kafka_port}' --property "
                         "inter.broker.listener.name=SASL_SSL; a second listener per broker needs ports of its own: "
                         "'listeners=SASL_PLAINTEXT://127.0.0.1:{kafka_port},SSL://127.0.0.1:1909{broker_id}'")
    up.add_argument("--racks", type=lambda v: v.split(","), default=[], metavar="RACK,RACK,...",
                    help="broker.rack of each broker in id order, e.g. a,a,b,c: topics then get Kafka's rack-aware "
                         "replica placement (default: no racks)")
    up.set_defaults(subparser=up)
    status = commands.add_parser("status", help="ZooKeeper, each broker and the controller")
    status.add_argument("--json", action="store_true")
    commands.add_parser("down", help="stop the brokers (cleanly) and ZooKeeper")
    for p in commands.choices.values():
        p.add_argument("--dir", type=Path, default=Path(".zkafka"), help="cluster directory (default ./.zkafka)")


def print_status(info: dict) -> None:
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


def up(args: argparse.Namespace) -> int:
    from scripts.local.cluster import Cluster, ClusterSpec

    if not 1 <= args.brokers <= 64:
        args.subparser.error(f"--brokers must be between 1 and 64, got {args.brokers}")
    if any("=" not in item for item in args.property):
        args.subparser.error("--property takes KEY=VALUE")
    if args.racks and (len(args.racks) != args.brokers or not all(args.racks)):
        args.subparser.error(f"--racks needs one non-empty rack per broker ({args.brokers}), got {','.join(args.racks)}")
    spec = ClusterSpec(args.brokers, args.zookeeper_port, args.kafka_port_base, args.http_port_base,
                       args.tick_time, args.session_timeout_ms, dict(i.split("=", 1) for i in args.property),
                       racks=args.racks)
    cluster = Cluster(args.dir, spec)
    cluster.up(args.timeout)
    print_status(cluster.status())
    return 0


def down(args: argparse.Namespace) -> int:
    from scripts.local.cluster import Cluster

    cluster = Cluster(args.dir)
    cluster.down()
    print(f"stopped the cluster in {cluster.dir}")
    return 0


def status(args: argparse.Namespace) -> int:
    from scripts.local.cluster import Cluster

    info = Cluster(args.dir).status()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print_status(info)
    return 0 if info["controller"] and all(b["alive"] for b in info["brokers"]) else 1


SUBCOMMANDS = {"up": up, "status": status, "down": down}


def run(args: argparse.Namespace) -> int:
    from scripts.local.cluster import ClusterError
    from scripts.local.zookeeper import ZooKeeperError

    try:
        return SUBCOMMANDS[args.cluster_command](args)
    except (ClusterError, ZooKeeperError) as exc:
        print(f"zkafka cluster {args.cluster_command}: {exc}", file=sys.stderr)
        return 1

