"""``kafka-mirror-maker``: MirrorMaker 2's dedicated mode (Kafka's ``connect-mirror-maker.sh``) and the
offset translation tool.

    kafka-mirror-maker mm2.properties [--clusters ALIAS ...] [--http-port PORT] [--http-host HOST]
    kafka-mirror-maker translate-offsets --config mm2.properties --source A --target B --group G [--execute]

The first runs every enabled flow of the file (``--clusters``: only the flows into those clusters, as MM2's flag
does) until SIGTERM or SIGINT, then stops cleanly: each flow's task commits what the target acknowledged, the
process exits 0. It prints ``kafka-mirror-maker started: <flows>`` once every flow runs. A bad file (unknown
cluster alias, invalid regex, a value of the wrong type) is one line ``Error: <key>: <problem>`` and exit 1,
before any connection; so is a client setting librdkafka refuses, a port already taken, or an internal topic that
cannot be created.
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from confluent_kafka import KafkaException

from scripts.tools.kafka_mirror_maker.config import MirrorConfigError, MirrorMakerConfig, load

STOP_GRACE_S = 60.0
log = logging.getLogger("kafka_mirror_maker")


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-mirror-maker", description="MirrorMaker 2 (dedicated mode)")
    parser.add_argument("config", help="MM2's properties file (clusters = a, b; a->b.enabled = true; ...)")
    parser.add_argument("--clusters", nargs="+", metavar="ALIAS", help="run only the flows into these clusters")
    parser.add_argument("--http-port", type=int, help="serve /metrics, /api/v1/mirror and a page on this port")
    parser.add_argument("--http-host", default="127.0.0.1")
    return parser


def _translate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-mirror-maker translate-offsets",
                                     description="a group's offsets at the target, from MM2's checkpoints")
    parser.add_argument("--config", required=True, help="MM2's properties file")
    parser.add_argument("--source", required=True, metavar="ALIAS", help="the cluster the group consumed from")
    parser.add_argument("--target", required=True, metavar="ALIAS", help="the cluster to fail over to")
    parser.add_argument("--group", required=True)
    parser.add_argument("--execute", action="store_true", help="commit the translated offsets at the target")
    return parser


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1


def translate_offsets(argv: list[str]) -> int:
    from scripts.tools.kafka_mirror_maker import translate
    args = _translate_parser().parse_args(argv)
    try:
        config = load(args.config)
        rows = translate.newest(translate.read_checkpoints(config, args.source, args.target), args.group)
        if not rows:
            return _fail(f"no checkpoints of group '{args.group}' from {args.source} at {args.target}")
        if args.execute:
            translate.execute(config, args.target, args.group, rows)
    except (MirrorConfigError, translate.TranslateError, KafkaException) as exc:
        return _fail(str(exc))
    print("\n".join(translate.table(rows)))
    return 0


def run_mirror_maker(config: MirrorMakerConfig, http_host: str, http_port: int | None) -> int:
    from scripts.tools.kafka_mirror_maker.flow import MirrorFlow
    from scripts.tools.kafka_mirror_maker.http_server import MirrorHttpServer
    from scripts.tools.kafka_mirror_maker.topic_sync import InternalTopicError
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    flows: list[MirrorFlow] = []
    try:
        flows += [MirrorFlow(f, config.clusters[f.source], config.clusters[f.target], stop) for f in config.flows]
        server = MirrorHttpServer(http_host, http_port, lambda: [f.metrics for f in flows]) \
            if http_port is not None else None
        for flow in flows:
            flow.start()
    except (InternalTopicError, KafkaException, OSError) as exc:
        stop.set()
        for flow in flows:
            flow.join(STOP_GRACE_S)
        return _fail(str(exc))
    if server is not None:
        server.start()
    where = f" (http://{http_host}:{server.port}/)" if server is not None else ""
    print(f"kafka-mirror-maker started: {', '.join(f.flow.name for f in flows)}{where}", flush=True)
    stop.wait()
    log.info("stopping: %s", ", ".join(f.flow.name for f in flows))
    clean = all(flow.join(STOP_GRACE_S) for flow in flows)
    if server is not None:
        server.stop()
    log.info("stopped%s", "" if clean else " (a flow did not stop in time)")
    return 0 if clean else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    if argv[:1] == ["translate-offsets"]:
        return translate_offsets(argv[1:])
    args = _run_parser().parse_args(argv)
    try:
        config = load(args.config, args.clusters)
    except MirrorConfigError as exc:
        return _fail(str(exc))
    if not config.flows:
        return _fail(f"{args.config}: no enabled flow (set <source>-><target>.enabled = true)")
    return run_mirror_maker(config, args.http_host, args.http_port)


if __name__ == "__main__":
    sys.exit(main())
