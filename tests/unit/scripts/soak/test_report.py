"""The soak's HTML report and terminal summary: self-contained, with the anomaly rows and the fault windows."""
from __future__ import annotations

from html.parser import HTMLParser

import pytest

from scripts.soak.checker import CheckConfig, check
from scripts.soak.checker.__main__ import main as checker_main
from scripts.soak.report import line_runs, fault_windows, summary_text, write_report

from .histories import History

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "embed", "source", "track", "wbr"}


class Structure(HTMLParser):
    """Checks that every element closes in order and collects the text, the tags and any src/href."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.text: list[str] = []
        self.tags: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.links.extend(v for k, v in attrs if k in ("src", "href") and v)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)
        self.links.extend(v for k, v in attrs if k in ("src", "href") and v)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def _history() -> History:
    h = History()
    h.send("p0", "soak/0", 1, 0)
    h.at(6)
    h.send("p0", "soak/0", 2, 1)
    h.at(12)
    h.poll("r0", {"soak/0": [(1, 2)]})  # offset 0 lost
    return h


def test_the_report_has_the_anomaly_rows_the_fault_labels_and_nothing_from_the_network(tmp_path):
    h = _history()
    result = check(h.ops, CheckConfig())
    t0 = h.ops[0].time
    events = [{"time": t0 + 2 * 10**9, "event": "start", "kind": "kill-leader", "target": "broker2", "detail": ""},
              {"time": t0 + 8 * 10**9, "event": "heal", "kind": "kill-leader", "target": "broker2", "detail": ""},
              {"time": t0 + 9 * 10**9, "event": "start", "kind": "partition-ring", "target": "", "detail": ""}]
    meta = {"seed": 42, "minutes": 0.2, "brokers": 3, "faults": {"kill-leader": 1, "partition-ring": 1},
            "command": ["zkafka", "soak", "--seed", "42"]}
    path = write_report(tmp_path / "out", h.ops, events, result, meta)
    assert path == tmp_path / "out" / "report.html"
    page = path.read_text()
    parser = Structure()
    parser.feed(page)
    parser.close()
    assert parser.errors == [] and parser.stack == []
    assert {"html", "svg", "rect", "polyline", "table"} <= parser.tags
    assert not [link for link in parser.links if "http" in link]
    assert "<script" not in page
    text = " ".join(parser.text)
    assert "INVALID" in text and "lost-write" in text and "unseen" in text and "seed" in text
    assert "kill-leader broker2" in text and "partition-ring" in text
    assert page.count('class="bad"') == 2  # lost-write and unseen
    assert "<td>kill-leader broker2</td><td>2.0</td><td>8.0</td><td>6.0</td>" in page
    assert '"highest_read": 1' in page.replace("&quot;", '"')


def test_fault_windows_pair_a_start_with_its_heal_and_leave_the_unhealed_open_to_the_end():
    events = [{"time": 2_000_000_000, "event": "start", "kind": "pause-broker", "target": "broker1"},
              {"time": 3_000_000_000, "event": "error", "kind": "kill-controller", "target": ""},
              {"time": 7_000_000_000, "event": "heal", "kind": "pause-broker", "target": "broker1"},
              {"time": 8_000_000_000, "event": "start", "kind": "disk-full", "target": "broker3"}]
    assert fault_windows(events, 1_000_000_000, 30.0) == [(1.0, 6.0, "pause-broker broker1"),
                                                           (7.0, 30.0, "disk-full broker3")]


def test_the_summary_names_the_verdict_and_each_anomaly_seen():
    result = check(_history().ops, CheckConfig())
    text = summary_text(result, {"seed": 7, "faults": {"kill-broker": 3}})
    assert text.startswith("soak INVALID  seed=7")
    assert "lost-write" in text and "BAD" in text and "kill-broker 3" in text
    assert "G0" not in text


def test_the_checker_cli_exits_1_on_an_invalid_history(tmp_path, capsys):
    h = _history()
    (tmp_path / "history-all.jsonl").write_text("".join(op.to_json() + "\n" for op in h.ops))
    assert checker_main([str(tmp_path)]) == 1
    assert "lost-write" in capsys.readouterr().out
    clean = History()
    clean.send("p0", "soak/0", 1, 0)
    clean.poll("r0", {"soak/0": [(0, 1)]})
    (tmp_path / "clean.jsonl").write_text("".join(op.to_json() + "\n" for op in clean.ops))
    assert checker_main([str(tmp_path / "clean.jsonl")]) == 0
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_text((tmp_path / "clean.jsonl").read_text())
    assert checker_main([str(run)]) == 0
    with pytest.raises(SystemExit, match="no history"):
        checker_main([str(tmp_path / "nowhere")])


def test_a_chart_line_breaks_over_buckets_without_values():
    assert line_runs([0, 5, 10, 15, 20], [1.0, None, 2.0, 3.0, None]) == [[(0, 1.0)], [(10, 2.0), (15, 3.0)]]
    assert line_runs([0, 5], [None, None]) == []
