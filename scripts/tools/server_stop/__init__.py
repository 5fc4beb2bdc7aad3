"""``kafka-server-stop [--config PATH]...``: Kafka 2.8's kafka-server-stop.sh for zkafka brokers.

Finds the broker processes of this machine through ``/proc/<pid>/cmdline`` (``python -m brokers ...`` or
``kafka-server-start ...``; ``scripts.tools.server_stop.selection``) and sends each ``SIGNAL`` (default
SIGTERM: the broker does a controlled shutdown -- leadership moved away through the controller, logs flushed
and checkpointed, ``.kafka_cleanshutdown`` written -- and exits). Like Kafka's script it does not wait, prints
nothing on success, and prints ``No kafka server to stop`` and exits 1 when there is none.

Without ``--config`` every zkafka broker on the machine gets the signal, as with Kafka's script; ``--config
PATH`` (zkafka's addition, repeatable) restricts it to the brokers started with that server.properties, or with
one below that directory. A broker it may not signal prints kill's message (``kill: (PID) - Operation not
permitted``) and the exit code is 1.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from scripts.tools.server_stop.selection import NO_SERVER, StopError, broker_config, build_parser, resolve, selected, signal_of


def broker_processes() -> list[tuple[int, Path]]:
    """(pid, absolute server.properties) of every zkafka broker process this machine runs (ours excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            config = broker_config([word.decode(errors="replace") for word in argv if word])
            if config is not None:
                found.append((int(entry.name), Path(resolve(config, os.readlink(entry / "cwd")))))
        except OSError:  # gone meanwhile, or another user's process whose cwd we may not read
            continue
    return sorted(found)


def targets(parser, paths: list[str]) -> list[tuple[Path, bool]]:
    out = []
    for path in paths:
        target = Path(path).resolve()
        if not target.exists():
            parser.exit(1, f"kafka-server-stop: --config {path}: no such file or directory\n")
        out.append((target, target.is_dir()))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        sig = signal_of(os.environ.get("SIGNAL"))
    except StopError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    wanted = targets(parser, args.config)
    pids = [pid for pid, config in broker_processes() if selected(config, wanted)]
    if not pids:
        print(NO_SERVER)
        return 1
    code = 0
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            continue  # it stopped meanwhile
        except PermissionError:
            print(f"kill: ({pid}) - Operation not permitted", file=sys.stderr)
            code = 1
    return code
