"""``zkafka spark up|status|down|pack|submit``: a Spark standalone cluster on this host (master + N workers,
each its own JVM, from the pyspark wheel) and ``spark-submit`` of zkafka pipelines to any Spark cluster, with
the executors' Python environment and zkafka's code shipped the way Spark ships Python dependencies.

Exit codes: 0; 1 on an error; ``submit`` exits with spark-submit's code.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DEFAULT_DIR = Path(".zkafka/spark")


def add_parser(subparsers) -> None:
    spark = subparsers.add_parser("spark", help="a Spark standalone cluster, and spark-submit of zkafka pipelines")
    spark.set_defaults(run=run)
    commands = spark.add_subparsers(dest="spark_command", metavar="SUBCOMMAND", required=True)
    up = commands.add_parser("up", help="start a master and N workers; return once every worker is ALIVE")
    up.add_argument("--workers", type=int, default=2, help="number of workers (default 2)")
    up.add_argument("--cores-per-worker", type=int, default=1, help="cores each worker offers (default 1)")
    up.add_argument("--memory-per-worker", default="1g", help="memory each worker offers (default 1g)")
    up.add_argument("--master-port", type=int, default=7077)
    up.add_argument("--webui-port", type=int, default=8180, help="the master's web UI and JSON view")
    up.add_argument("--timeout", type=float, default=90.0)
    commands.add_parser("status", help="the master's view: workers and applications")
    commands.add_parser("down", help="stop the workers, their executors and the master")
    pack = commands.add_parser("pack", help="pack the executors' Python environment (cached); print its path")
    submit = commands.add_parser("submit", help="spark-submit APP with zkafka's environment and code shipped")
    submit.add_argument("--master", help="spark://HOST:PORT (default: the cluster of --dir)")
    submit.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    submit.add_argument("app", help="the application: a .py file, or zkafka:count / zkafka:copy (zkafka's own jobs)")
    submit.add_argument("app_args", nargs=argparse.REMAINDER, help="the application's arguments")
    for p in (pack, submit):
        p.add_argument("--cache-dir", type=Path, default=None, help="where packed environments are kept "
                       "(default ~/.cache/zkafka/spark)")
    for p in commands.choices.values():
        p.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"cluster directory (default ./{DEFAULT_DIR})")
        p.set_defaults(subparser=p)


def up(args: argparse.Namespace) -> int:
    from scripts.local.spark.standalone import SparkClusterSpec, SparkStandaloneCluster

    if args.workers < 1:
        args.subparser.error(f"--workers must be at least 1, got {args.workers}")
    spec = SparkClusterSpec(args.workers, args.cores_per_worker, args.memory_per_worker,
                            master_port=args.master_port, master_webui_port=args.webui_port)
    cluster = SparkStandaloneCluster(args.dir, spec).up(args.timeout)
    print(f"spark master: {cluster.master_url} (web UI {cluster.webui_url}), {args.workers} workers ALIVE")
    print(f"logs:         {cluster.dir}/master.log, {cluster.dir}/worker-<i>/worker.log")
    return 0


def status(args: argparse.Namespace) -> int:
    from scripts.local.spark.standalone import SparkStandaloneCluster

    cluster = SparkStandaloneCluster(args.dir)
    state = cluster.state()
    if state is None:
        print(f"spark master {cluster.master_url}: not answering at {cluster.webui_url}")
        return 1
    print(json.dumps({"master": cluster.master_url, "workers": [
        {k: w.get(k) for k in ("id", "host", "state", "cores", "coresused", "memory", "memoryused")}
        for w in state.get("workers", ())], "applications": [
        {k: a.get(k) for k in ("id", "name", "state", "cores")} for a in state.get("activeapps", ())]}, indent=2))
    return 0


def down(args: argparse.Namespace) -> int:
    from scripts.local.spark.standalone import SparkStandaloneCluster

    SparkStandaloneCluster(args.dir).down()
    print(f"stopped the Spark cluster in {args.dir}")
    return 0


def pack(args: argparse.Namespace) -> int:
    from scripts.local.spark import executor_env, submit

    print(executor_env.pack(args.cache_dir or submit.DEFAULT_CACHE))
    return 0


def submit(args: argparse.Namespace) -> int:
    from scripts.local.spark import submit as spark_submit
    from scripts.local.spark.standalone import SparkStandaloneCluster

    if any("=" not in item for item in args.conf):
        args.subparser.error("--conf takes KEY=VALUE")
    master = args.master or SparkStandaloneCluster(args.dir).master_url
    return spark_submit.submit(master, args.app, args.app_args, conf=dict(i.split("=", 1) for i in args.conf),
                               cache_dir=args.cache_dir or spark_submit.DEFAULT_CACHE)


SUBCOMMANDS = {"up": up, "status": status, "down": down, "pack": pack, "submit": submit}


def run(args: argparse.Namespace) -> int:
    from scripts.local.spark.standalone import SparkClusterError

    try:
        return SUBCOMMANDS[args.spark_command](args)
    except (SparkClusterError, FileNotFoundError) as exc:
        print(f"zkafka spark {args.spark_command}: {exc}", file=sys.stderr)
        return 1
