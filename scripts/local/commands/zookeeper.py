"""``zkafka zookeeper start|stop|status``: a real Apache ZooKeeper, standalone or an ensemble on 127.0.0.1.

Exit codes: ``start``/``stop`` 0 or 1; ``status`` 0 serving, 1 degraded, 3 stopped.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

STATUS_EXIT = {"serving": 0, "degraded": 1}
STOPPED_EXIT = 3


def add_parser(subparsers) -> None:
    zk = subparsers.add_parser("zookeeper", help="run a real Apache ZooKeeper (standalone or an ensemble on 127.0.0.1)")
    zk.set_defaults(run=run)
    commands = zk.add_subparsers(dest="zk_command", metavar="SUBCOMMAND", required=True)
    start = commands.add_parser("start", help="start in the background; exits 0 once it serves")
    start.set_defaults(subparser=start)
    start.add_argument("--port", type=int, default=2181,
                       help="client port; an ensemble's node N uses PORT+N-1, quorum/election ports "
                            "PORT+10+N-1 and PORT+20+N-1 (default 2181)")
    start.add_argument("--ensemble", type=int, default=1, metavar="N",
                       help="number of nodes (1 = standalone, the default; at most 10)")
    start.add_argument("--tick-time", type=int, default=2000, metavar="MS", help="tickTime in ms (default 2000)")
    start.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for readiness (default 60)")
    stop = commands.add_parser("stop", help="stop it (SIGTERM, then SIGKILL after a grace period)")
    status = commands.add_parser("status", help="pid, mode and port per node; exit 0 serving, 1 degraded, 3 stopped")
    status.add_argument("--json", action="store_true", help="print JSON")
    for p in (start, stop, status):
        p.add_argument("--data-dir", type=Path, default=Path(".zkafka/zookeeper"),
                       help="where configs, data, logs and pid files live (default ./.zkafka/zookeeper)")


def check_start_flags(args: argparse.Namespace) -> None:
    from scripts.local import zookeeper

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


def start(args: argparse.Namespace) -> int:
    from scripts.local import zookeeper

    zk = zookeeper.start(args.data_dir, args.port, ensemble=args.ensemble, tick_time=args.tick_time,
                         timeout=args.timeout)
    print(zk.connect_string)
    for node in getattr(zk, "nodes", [zk]):
        print(f"  {node.connect_string} pid {node.pid} log {node.log_path} pidfile {node.pid_path}")
    return 0


def stop(args: argparse.Namespace) -> int:
    from scripts.local import zookeeper

    pids = zookeeper.stop(args.data_dir)
    print(f"stopped pid {', '.join(map(str, pids))}" if pids else "not running")
    return 0


def status(args: argparse.Namespace) -> int:
    from scripts.local import zookeeper

    info = zookeeper.status(args.data_dir)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"{info['state']} {info['connect_string']} ({info['data_dir']})")
        for n in info["nodes"]:
            print(f"  {n['connect_string']} pid {n['pid'] or '-'} mode {n['mode'] or '-'} log {n['log']}")
    return STATUS_EXIT.get(info["state"], STOPPED_EXIT)


SUBCOMMANDS = {"start": start, "stop": stop, "status": status}


def run(args: argparse.Namespace) -> int:
    from scripts.local.zookeeper import ZooKeeperError

    if args.zk_command == "start":
        check_start_flags(args)
    try:
        return SUBCOMMANDS[args.zk_command](args)
    except ZooKeeperError as exc:
        print(f"zkafka zookeeper {args.zk_command}: {exc}", file=sys.stderr)
        return STOPPED_EXIT if args.zk_command == "status" else 1
