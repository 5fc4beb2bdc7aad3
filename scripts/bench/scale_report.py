"""``zkafka bench scale``'s report: markdown tables (seconds and ms per partition per size, next to Kafka's
published slopes) and a log-log SVG plot of each step's time against partitions. Pure: it reads the result
dict of ``scripts.bench.scale_run.run_scale_bench``."""
from __future__ import annotations

import math

from scripts.bench.scale import KAFKA_SLOPES, LABELS, slope_ms

PLOT_NAMES = {"create": "topic creation", "failover": "failover - session timeout",
              "failover_new_controller": "new controller elected", "controlled_shutdown": "controlled shutdown",
              "restart": "restart until in ISRs", "restart_registered": "restart until registered",
              "uncontrolled": "kill -9 - session timeout"}
TIMED = ("create", "failover", "failover_new_controller", "controlled_shutdown", "restart", "restart_registered",
         "uncontrolled")


def step_seconds(size: dict, key: str) -> tuple[float | None, str | None]:
    """(seconds, status) of one row in one size: derived rows come from their step's extra fields."""
    steps = size["steps"]
    source, field = {"failover_new_controller": ("failover", "new_controller_s"),
                     "restart_registered": ("restart", "registered_s")}.get(key, (key, "seconds"))
    step = steps.get(source)
    if step is None:
        return None, None
    if step.get("seconds") is None:
        return None, step.get("status", "failed")
    return step.get(field), None


def denominator(size: dict, key: str) -> int:
    """What a row's slope divides by: the partitions the broker led for an unclean failure (Jun Rao's figure
    is per partition led), all partitions otherwise."""
    if key == "uncontrolled" and size["steps"].get("uncontrolled", {}).get("led"):
        return size["steps"]["uncontrolled"]["led"]
    return size["partitions"]


def cell(size: dict, key: str) -> str:
    seconds, status = step_seconds(size, key)
    if status:
        return status
    if seconds is None:
        return "-"
    return f"{seconds:.2f} s ({slope_ms(seconds, denominator(size, key)):.2f})"


def times_table(result: dict) -> list[str]:
    sizes = result["sizes"]
    head = " | ".join(f"{s['partitions']:,} partitions" for s in sizes)
    lines = [f"| step | {head} | Kafka's slope (ms/partition) |", "|---|" + "---|" * len(sizes) + "---|"]
    for key in TIMED:
        if any(step_seconds(s, key) != (None, None) for s in sizes):
            lines.append(f"| {LABELS[key]} | {' | '.join(cell(s, key) for s in sizes)} | {KAFKA_SLOPES[key]} |")
    rates = [f"{s['partitions'] / s['steps']['create']['seconds']:.0f}" if s["steps"].get("create", {}).get("seconds")
             else "-" for s in sizes]
    lines.append(f"| creation rate (partitions/s) | {' | '.join(rates)} | |")
    return lines


def latency_table(result: dict) -> list[str]:
    sizes = [s for s in result["sizes"] if s.get("latency") or s.get("l1")]
    if not sizes:
        return []
    lines = ["| partitions | Metadata (all topics) p50 / p99 ms | Produce (acks=all) + Fetch round trip p50 / p99 ms "
             "| L1 beside them (10k/s, RF 3, acks=all): end-to-end p50 / p99 ms |", "|---|---|---|---|"]
    for s in sizes:
        m, r = (s.get("latency") or {}).get("metadata"), (s.get("latency") or {}).get("produce_fetch")
        e2e = (s.get("l1") or {}).get("end_to_end")
        lines.append(f"| {s['partitions']:,} | {_p50_p99(m, 1)} | {_p50_p99(r, 2)} | {_p50_p99(e2e, 2)} |")
    return lines


def _p50_p99(summary: dict | None, digits: int) -> str:
    if not summary or summary.get("p50_ms") is None:
        return "-"
    return f"{summary['p50_ms']:.{digits}f} / {summary['p99_ms']:.{digits}f}"


def idle_rows(size: dict, replicas: int) -> list[str]:
    """One row per broker: loaded figures, and per partition replica the growth over the no-topic baseline."""
    idle = size["idle"]
    rows = []
    for b, loaded in sorted(idle["loaded"].items(), key=lambda kv: int(kv[0])):
        base = (idle["baseline"] or {}).get(b) or (idle["baseline"] or {}).get(str(b)) or {}

        def per(key: str, scale: float = 1.0) -> str:
            return f"{(loaded[key] - base.get(key, 0)) * scale / replicas:.3g}" if base else "-"
        rows.append(f"| {size['partitions']:,} | {b} | {loaded['cpu_per_s']:.3f} ({base.get('cpu_per_s', 0):.3f}) | "
                    f"{loaded['rss_kib'] / 1024:.0f} ({base.get('rss_kib', 0) / 1024:.0f}) | {loaded['fds']} "
                    f"({base.get('fds', 0)}) | {loaded['maps']} ({base.get('maps', 0)}) | "
                    f"{per('rss_kib')} | {per('fds')} | {per('maps')} | {per('cpu_per_s', 1e6)} |")
    return rows


def idle_table(result: dict) -> list[str]:
    sizes = [s for s in result["sizes"] if s.get("idle")]
    if not sizes:
        return []
    lines = ["| partitions | broker | CPU s/s (no topics) | RSS MiB | open fds | memory maps | "
             "per replica: RSS KiB | fds | maps | CPU µs/s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for s in sizes:
        replicas = s["partitions"] * result["replication_factor"] // result["brokers"]
        lines += idle_rows(s, replicas)
    return lines


def format_report(result: dict) -> list[str]:
    m = result["machine"]
    lines = [f"{result['brokers']} brokers + ZooKeeper + clients on one machine: {m['cpu']}, {m['cores']} cores, "
             f"{m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}, confluent-kafka "
             f"{m['confluent_kafka']} (librdkafka {m['librdkafka']})",
             f"RF {result['replication_factor']}, topics of {result['topic_partitions']} partitions, "
             f"zookeeper.session.timeout.ms={result['session_timeout_ms']} (tickTime 500)", "",
             "Seconds (ms per partition: the slope; for the unclean failure per partition the broker led)", "",
             *times_table(result), ""]
    for s in result["sizes"]:
        create = s["steps"].get("create", {})
        if create.get("mode"):
            lines.append(f"- {s['partitions']:,}: {create['mode']}, answered after {create['answered_s']:.1f} s")
        for name in ("controlled_shutdown", "uncontrolled"):
            step = s["steps"].get(name, {})
            if step.get("led") is not None:
                lines.append(f"- {s['partitions']:,}: {name} of broker {step['broker']}, leading {step['led']:,}")
        lines += [f"- {s['partitions']:,}: {note}" for note in s.get("notes", [])]
    if latency := latency_table(result):
        lines += ["", "Latency while the other partitions idle", "", *latency]
    if idle := idle_table(result):
        lines += ["", f"Idle cost over {result['idle_seconds']:g} s without traffic (in parentheses: the same broker "
                      "right after cluster up, no topics)", "", *idle]
    return lines


def plot_svg(result: dict, width: int = 640, height: int = 420) -> str:
    """A log-log plot (seconds against partitions) of every timed step, one polyline each, as SVG text."""
    series = {key: [(s["partitions"], v) for s in result["sizes"] if (v := step_seconds(s, key)[0]) and v > 0]
              for key in TIMED}
    series = {k: pts for k, pts in series.items() if pts}
    xs = [x for pts in series.values() for x, _ in pts] or [1, 10]
    ys = [y for pts in series.values() for _, y in pts] or [1, 10]
    x0, x1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)) + 1e-9)
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)) + 1e-9)
    x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)
    left, right, top, bottom = 60, 230, 20, 40
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (math.log10(x) - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + ph - (math.log10(y) - y0) / (y1 - y0) * ph
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           'font-size="11">', f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>']
    for e in range(x0, x1 + 1):
        out.append(f'<text x="{px(10 ** e):.1f}" y="{top + ph + 15}" text-anchor="middle">{10 ** e:g}</text>')
    for e in range(y0, y1 + 1):
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{py(10 ** e):.1f}" y2="{py(10 ** e):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 5}" y="{py(10 ** e) + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 5}" text-anchor="middle">partitions</text>')
    out.append(f'<text x="12" y="{top + ph / 2}" transform="rotate(-90 12 {top + ph / 2})" '
               'text-anchor="middle">seconds</text>')
    for i, (key, pts) in enumerate(series.items()):
        color = colors[i % len(colors)]
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>')
        out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>' for x, y in pts]
        out.append(f'<text x="{left + pw + 10}" y="{top + 14 + 16 * i}" fill="{color}">{PLOT_NAMES[key]}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
