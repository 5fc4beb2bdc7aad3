"""``python -m brokers --config server.properties [--override key=value ...]``: run one broker.

SIGTERM / SIGINT stop it cleanly (controller resign, session close, logs flushed and checkpointed,
``.kafka_cleanshutdown`` written). A bad config or flag prints one line naming the problem, exit 2.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import logging
import signal
import sys
from pathlib import Path

from brokers import event_loop
from brokers.config import BrokerConfig, ConfigError
from brokers.zk.errors import ZkError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m brokers", description="Run one zkafka broker.")
    parser.add_argument("properties", nargs="?", type=Path, help="server.properties (as kafka-server-start takes it)")
    parser.add_argument("--config", type=Path, help="server.properties (alternative to the positional argument)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="override one property (repeatable), like kafka-server-start's --override")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    args.config = args.config or args.properties
    if args.config is None:
        parser.error("a server.properties file is required (positional or --config)")
    for item in args.override:
        if "=" not in item:
            parser.error(f"--override needs KEY=VALUE, got {item!r}")
    return args


async def run(config: BrokerConfig) -> None:
    from brokers.app import BrokerServer
    from brokers.app.long_lived_heap import HEAP

    HEAP.install()  # full collections skip what survived a slow one (brokers/app/long_lived_heap.py)
    server = BrokerServer(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.startup()
        logging.getLogger("brokers").info("broker %d started", server.broker_id)
        await stop.wait()
        logging.getLogger("brokers").info("broker %d stopping (signal)", server.broker_id)
    finally:
        await server.shutdown()
        logging.getLogger("brokers").info("broker %d shut down completed", server.broker_id)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        overrides = dict(item.split("=", 1) for item in args.override)
        config = BrokerConfig.from_file(args.config, overrides)
        event_loop.loop_name()  # a bad ZKAFKA_EVENT_LOOP fails here, before anything starts
        event_loop.run(run(config))
    except (ConfigError, ValueError) as exc:
        print(f"zkafka broker: {exc}", file=sys.stderr)
        return 2
    except ZkError as exc:  # no ZooKeeper, a duplicate broker id, ...
        print(f"zkafka broker: {exc}", file=sys.stderr)
        return 1
    return 0


def console_main() -> None:
    """``kafka-server-start`` / ``python -m brokers``: ``main``, then exit at once. Everything durable is synced
    and every file closed by then, so the process leaves without the interpreter's teardown (1.6 s of a
    6,000-partition broker's controlled shutdown, after its logs were closed), as the JVM's exit would."""
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    console_main()
