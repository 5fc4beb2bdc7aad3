"""The soak's report: ``report.html``, one self-contained page (inline CSS and SVG, no script, nothing loaded
from the network), and ``summary_text`` for the terminal.

The page: the run's meta (seed, minutes, brokers, faults by kind, command line); three charts over 5-second
buckets (ok sends/s and polled values/s; send latency p50/p99; acked values not yet polled), each with the
nemesis's fault windows (``start`` … ``heal`` events of one kind and target) shaded and labelled; then one row
per fault (and per fault that could not start), one row per anomaly kind (count, allowed?, description,
examples) and the checker's stats.
"""
from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Any, Iterable

from scripts.soak.checker.index import Completed, pair, reads_of, sends_of, topic_of
from scripts.soak.checker.model import CheckResult
from scripts.soak.history import OK, Op

BUCKET_NS = 5 * 10**9
WIDTH, HEIGHT, PAD = 960, 220, 48
COLOURS = ("#1f77b4", "#d62728", "#2ca02c")
TICKS_S = (5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)


def summary_text(result: CheckResult, meta: dict) -> str:
    head = f"soak {'VALID' if result.valid else 'INVALID'}" + "".join(
        f"  {k}={meta[k]}" for k in ("seed", "minutes", "brokers") if k in meta)
    lines = [head, *result.summary_lines()]
    if meta.get("faults"):
        lines.insert(2, "faults: " + ", ".join(f"{k} {n}" for k, n in sorted(meta["faults"].items())))
    return "\n".join(lines)


def write_report(out_dir: Path, ops: Iterable[Op], nemesis_events: list[dict], result: CheckResult,
                 meta: dict) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "report.html"
    path.write_text(render(list(ops), nemesis_events, result, meta))
    return path


def render(ops: list[Op], nemesis_events: list[dict], result: CheckResult, meta: dict) -> str:
    completed = pair(ops)
    t0 = min((o.time for o in ops), default=0)
    series = Series(completed, t0)
    windows = fault_windows(nemesis_events, t0, series.end_s)
    charts = [chart("Throughput (per second)", series.seconds, {"ok sends/s": series.sends_per_s,
                                                               "polled values/s": series.polled_per_s}, windows),
              chart("Send latency (ms)", series.seconds, {"p50": series.latency(50), "p99": series.latency(99)},
                    windows),
              chart("Acked values not yet polled (unseen)", series.seconds, {"unseen": series.unseen}, windows)]
    verdict = "VALID" if result.valid else "INVALID"
    return "\n".join([
        "<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\"><title>zkafka soak report</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>zkafka soak: <span class=\"{verdict.lower()}\">{verdict}</span></h1>",
        meta_table(meta), *charts, fault_table(windows, nemesis_events, t0), anomaly_table(result),
        "<h2>Stats</h2>", f"<pre>{escape(json.dumps(result.stats, indent=1))}</pre>",
        "</body></html>"])


CSS = ("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
       "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}"
       ".valid{color:#2a2}.invalid{color:#c22}tr.bad td{background:#fdd}tr.allowed td{background:#ffd}"
       "pre{font-size:12px;white-space:pre-wrap;margin:0}svg{background:#fff;border:1px solid #ddd}")


class Series:
    """Per 5-second bucket: ok sends, polled values, send latencies, and acked values not polled yet."""

    def __init__(self, completed: list[Completed], t0: int) -> None:
        self.t0 = t0
        sends: dict[int, int] = defaultdict(int)
        polled: dict[int, int] = defaultdict(int)
        self.latencies: dict[int, list[float]] = defaultdict(list)
        acked_at: dict[Any, int] = {}
        first_read: dict[Any, int] = {}
        last = t0
        topic = _TopicCache()
        for c in completed:
            if c.end is None:
                continue
            last = max(last, c.end)
            b = self.bucket(c.end)
            if c.type == OK and c.f in ("send", "txn"):
                for key, _, value in sends_of(c.value):
                    sends[b] += 1
                    acked_at[(topic(key), value)] = c.end
                if c.f == "send":
                    self.latencies[b].append((c.end - c.start) / 1e6)
            if c.type == OK and c.f in ("poll", "txn"):
                for key, _, value in reads_of(c.value):
                    polled[b] += 1
                    tv = (topic(key), value)
                    if tv not in first_read or c.end < first_read[tv]:
                        first_read[tv] = c.end
        self.n = self.bucket(last) + 1
        self.end_s = self.n * BUCKET_NS / 1e9
        self.seconds = [i * BUCKET_NS / 1e9 for i in range(self.n)]
        self.sends_per_s = [sends[i] * 1e9 / BUCKET_NS for i in range(self.n)]
        self.polled_per_s = [polled[i] * 1e9 / BUCKET_NS for i in range(self.n)]
        self.unseen = self._unseen(acked_at, first_read)

    def bucket(self, t: int) -> int:
        return max(0, (t - self.t0) // BUCKET_NS)

    def latency(self, q: float) -> list[float | None]:
        out: list[float | None] = []
        for i in range(self.n):
            values = sorted(self.latencies.get(i, ()))
            out.append(values[min(len(values) - 1, max(0, -(-len(values) * q // 100) - 1))] if values else None)
        return out

    def _unseen(self, acked_at: dict, first_read: dict) -> list[float]:
        delta = [0] * (self.n + 1)
        for value, t in acked_at.items():
            delta[self.bucket(t)] += 1
            read = first_read.get(value)
            if read is not None:
                delta[max(self.bucket(t), self.bucket(read))] -= 1
        out, n = [], 0
        for i in range(self.n):
            n += delta[i]
            out.append(n)
        return out


class _TopicCache(dict):
    """key -> topic (a copier's copy of a value is another record: records are ``(topic, value)``)."""

    def __call__(self, key: str) -> str:
        topic = self.get(key)
        if topic is None:
            topic = self[key] = topic_of(key)
        return topic


def fault_windows(events: list[dict], t0: int, end_s: float) -> list[tuple[float, float, str]]:
    """``(start_s, heal_s, label)`` per fault: a ``start`` paired with the next ``heal`` of its kind and target."""
    open_: dict[tuple, list[float]] = defaultdict(list)
    windows = []
    for e in sorted(events, key=lambda e: e.get("time", 0)):
        at = (e.get("time", t0) - t0) / 1e9
        ident = (e.get("kind"), e.get("target"))
        if e.get("event") == "start":
            open_[ident].append(at)
        elif e.get("event") == "heal" and open_[ident]:
            windows.append((open_[ident].pop(0), at, _label(ident)))
    for ident, starts in open_.items():
        windows.extend((s, end_s, _label(ident)) for s in starts)
    return sorted(windows)


def _label(ident: tuple) -> str:
    kind, target = ident
    return f"{kind} {target}" if target else str(kind)


def chart(title: str, xs: list[float], lines: dict[str, list], windows: list[tuple[float, float, str]]) -> str:
    x_max = max(xs[-1] if xs else 0, max((w[1] for w in windows), default=0), 1.0)
    y_max = max([v for ys in lines.values() for v in ys if v is not None] + [1.0])
    w, h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD

    def x(s: float) -> float:
        return PAD + w * s / x_max

    def y(v: float) -> float:
        return PAD + h - h * v / y_max
    parts = [f'<svg width="{WIDTH}" height="{HEIGHT}" role="img">',
             f'<text x="{PAD}" y="20" font-weight="bold">{escape(title)}</text>']
    for n, (start, heal, label) in enumerate(windows):
        parts.append(f'<rect class="fault" x="{x(start):.1f}" y="{PAD}" width="{max(1.0, x(heal) - x(start)):.1f}"'
                     f' height="{h}" fill="#f90" fill-opacity="0.18"><title>{escape(label)}</title></rect>')
        parts.append(f'<text class="fault-label" x="{x(start) + 2:.1f}" y="{PAD + 12 + 11 * (n % 4)}" '
                     f'font-size="10" fill="#a50">{escape(label)}</text>')
    parts.append(f'<line x1="{PAD}" y1="{PAD + h}" x2="{PAD + w}" y2="{PAD + h}" stroke="#888"/>')
    parts.append(f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{PAD + h}" stroke="#888"/>')
    parts.append(f'<text x="{PAD - 4}" y="{PAD + 4}" font-size="10" text-anchor="end">{_short(y_max)}</text>')
    parts.append(f'<text x="{PAD - 4}" y="{PAD + h}" font-size="10" text-anchor="end">0</text>')
    step = next((s for s in TICKS_S if x_max / s <= 10), TICKS_S[-1])
    for n in range(0, int(x_max // step) + 1):
        parts.append(f'<line x1="{x(n * step):.1f}" y1="{PAD + h}" x2="{x(n * step):.1f}" y2="{PAD + h + 4}" '
                     f'stroke="#888"/><text x="{x(n * step):.1f}" y="{PAD + h + 15}" font-size="10" '
                     f'text-anchor="middle">{n * step} s</text>')
    for n, (name, ys) in enumerate(lines.items()):
        colour = COLOURS[n % len(COLOURS)]
        for run in line_runs(xs, ys):
            points = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in run)
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>')
        parts.append(f'<text x="{PAD + w - 150}" y="{20 + 12 * n}" font-size="11" fill="{colour}">'
                     f'{escape(name)}</text>')
    parts.append("</svg>")
    return "<div class=\"chart\">" + "".join(parts) + "</div>"


def line_runs(xs: list[float], ys: list) -> list[list[tuple[float, float]]]:
    """The points of a line, split where a bucket has no value (no sends: no latency)."""
    runs: list[list[tuple[float, float]]] = [[]]
    for s, v in zip(xs, ys):
        if v is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((s, v))
    return [r for r in runs if r]


def _short(v: float) -> str:
    return f"{v / 1e6:.3g}M" if v >= 1e6 else f"{v / 1e3:.3g}k" if v >= 1e4 else f"{v:.4g}"


def meta_table(meta: dict) -> str:
    rows = []
    for key, value in meta.items():
        shown = ", ".join(f"{k} {v}" for k, v in sorted(value.items())) if isinstance(value, dict) else (
            " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value))
        rows.append(f"<tr><th>{escape(str(key))}</th><td>{escape(shown)}</td></tr>")
    return "<h2>Run</h2><table>" + "".join(rows) + "</table>"


def fault_table(windows: list[tuple[float, float, str]], events: list[dict], t0: int) -> str:
    rows = ["<tr><th>fault</th><th>from (s)</th><th>to (s)</th><th>seconds</th></tr>"]
    rows.extend(f"<tr><td>{escape(label)}</td><td>{start:.1f}</td><td>{heal:.1f}</td><td>{heal - start:.1f}</td></tr>"
                for start, heal, label in windows)
    errors = [e for e in events if e.get("event") == "error"]
    rows.extend(f'<tr class="allowed"><td>{escape(_label((e.get("kind"), e.get("target"))))} could not start: '
                f'{escape(str(e.get("detail", "")))}</td><td>{(e.get("time", t0) - t0) / 1e9:.1f}</td><td></td>'
                f'<td></td></tr>' for e in errors)
    return "<h2>Faults</h2><table class=\"faults\">" + "".join(rows) + "</table>"


def anomaly_table(result: CheckResult) -> str:
    rows = ["<tr><th>kind</th><th>count</th><th>allowed?</th><th>description</th><th>examples</th></tr>"]
    for a in result.anomalies.values():
        cls = "" if not a.count else ("allowed" if a.allowed else "bad")
        examples = "\n".join(json.dumps(e) for e in a.examples)
        rows.append(f'<tr class="{cls}"><td>{escape(a.kind)}</td><td>{a.count}</td>'
                    f'<td>{"yes" if a.allowed else "no"}</td><td>{escape(a.description)}</td>'
                    f'<td><pre>{escape(examples)}</pre></td></tr>')
    return "<h2>Anomalies</h2><table class=\"anomalies\">" + "".join(rows) + "</table>"
