"""``python -m scripts.soak.checker HISTORY [HISTORY ...]``: check history files (or directories of
``history-*.jsonl``, or a soak run's directory), print the summary and the time the check took; exit 1 when
the history is invalid. A run's directory also gives the run's client-fault windows (its ``nemesis.jsonl``),
so the verdict is the run's own; ``--nemesis FILE`` names that file for other histories."""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from scripts.soak.checker.core import check
from scripts.soak.checker.model import CheckConfig, client_fault_windows
from scripts.soak.history import merge


def history_paths(args: list[str]) -> list[Path]:
    """Files as given; a directory gives its ``history-*.jsonl`` (a workload's history directory), else its
    ``history.jsonl`` (a soak run's output directory, where the runner wrote the merged history)."""
    paths: list[Path] = []
    for arg in args:
        p = Path(arg)
        if p.is_dir():
            paths.extend(sorted(p.glob("history-*.jsonl")) or [p / "history.jsonl"])
        else:
            paths.append(p)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise SystemExit(f"no history at {', '.join(missing)}")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.soak.checker", description=__doc__)
    parser.add_argument("histories", nargs="+", help="history files, or directories of history-*.jsonl")
    parser.add_argument("--no-idempotence", action="store_true", help="duplicates are allowed")
    parser.add_argument("--read-uncommitted", action="store_true", help="aborted reads are allowed")
    parser.add_argument("--eos", action="append", default=[], metavar="IN:OUT",
                        help="an input topic and the output topic its copiers write")
    parser.add_argument("--nemesis", type=Path, default=None, metavar="FILE",
                        help="the run's nemesis.jsonl (default: the one beside a run's history.jsonl, if any)")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    args = parser.parse_args(argv)
    config = CheckConfig(idempotent=not args.no_idempotence, read_committed=not args.read_uncommitted,
                         eos_pairs=dict(pair.split(":", 1) for pair in args.eos))
    started = time.monotonic()
    paths = history_paths(args.histories)
    ops = merge(paths)
    nemesis = args.nemesis or next((p.parent / "nemesis.jsonl" for p in paths if (p.parent / "nemesis.jsonl").is_file()),
                                   None)
    if nemesis is not None:
        events = [json.loads(line) for line in nemesis.read_text().splitlines() if line.strip()]
        config = replace(config, client_fault_windows=client_fault_windows(events, ops[-1].time if ops else 0))
    read_s = time.monotonic() - started
    result = check(ops, config)
    check_s = time.monotonic() - started - read_s
    verdict = f"soak history {'VALID' if result.valid else 'INVALID'}"
    print(json.dumps(result.to_json(), indent=1) if args.json else "\n".join([verdict, *result.summary_lines()]))
    print(f"{len(ops)} ops read in {read_s:.1f} s, checked in {check_s:.1f} s", file=sys.stderr)
    return 0 if result.valid else 1


if __name__ == "__main__":
    sys.exit(main())
