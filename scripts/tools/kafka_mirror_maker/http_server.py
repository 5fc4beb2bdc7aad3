"""The mirror process's own HTTP port (``--http-port``): what it measures, for Prometheus, scripts and people.

- ``GET /metrics``: Prometheus' text format (``metrics.prometheus_text``);
- ``GET /api/v1/mirror``: ``{"flows": [...]}``, each flow's ``FlowMetrics.snapshot()``;
- ``GET /``: a page that shows the same every two seconds (flows, then a row per partition).

Standard library only (``http.server`` in a daemon thread): the process has no event loop to share.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from scripts.tools.kafka_mirror_maker.metrics import FlowMetrics, prometheus_text

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>kafka-mirror-maker</title>
<style>body{font:14px sans-serif;margin:1.5em}table{border-collapse:collapse;margin-bottom:1.5em}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#eee}</style></head>
<body><h1>kafka-mirror-maker</h1><div id="flows">loading...</div><script>
const cell = v => `<td>${v === null || v === undefined ? "-" : v}</td>`;
async function refresh() {
  const data = await (await fetch("/api/v1/mirror")).json();
  let html = "<table id='flow-table'><tr><th>flow</th><th>records</th><th>bytes</th><th>lag</th>" +
    "<th>latency p50 ms</th><th>p99 ms</th><th>checkpoints</th><th>heartbeats</th><th>restarts</th></tr>";
  for (const f of data.flows) html += "<tr>" + [f.flow, f.record_count, f.byte_count, f.lag,
    f.replication_latency_ms.p50, f.replication_latency_ms.p99, f.checkpoints, f.heartbeats,
    f.task_restarts].map(cell).join("") + "</tr>";
  html += "</table><table id='partition-table'><tr><th>flow</th><th>remote topic</th><th>partition</th>" +
    "<th>records</th><th>lag</th><th>record age ms</th><th>latency ms</th></tr>";
  for (const f of data.flows) for (const p of f.partitions) html += "<tr>" + [f.flow, p.topic, p.partition,
    p.record_count, p.lag, p.record_age_ms, p.replication_latency_ms].map(cell).join("") + "</tr>";
  document.getElementById("flows").innerHTML = html + "</table>";
}
refresh(); setInterval(refresh, 2000);
</script></body></html>
"""


def _handler(flows: Callable[[], list[FlowMetrics]]):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, "text/plain; version=0.0.4", prometheus_text(flows()))
            elif path == "/api/v1/mirror":
                self._send(200, "application/json", json.dumps({"flows": [f.snapshot() for f in flows()]}))
            elif path == "/":
                self._send(200, "text/html; charset=utf-8", PAGE)
            else:
                self._send(404, "application/json", json.dumps({"error": f"no such path: {path}"}))

        def _send(self, status: int, content_type: str, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:  # quiet: scrapes every few seconds
            pass

    return Handler


class MirrorHttpServer:
    def __init__(self, host: str, port: int, flows: Callable[[], list[FlowMetrics]]):
        self.server = ThreadingHTTPServer((host, port), _handler(flows))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="mirror-http", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
