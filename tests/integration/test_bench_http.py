"""``zkafka bench http`` at toy sizes, plain and ``--secure``: every request answers 200 and everything
produced (direct and forwarded, JSON and msgpack) is read back (the secure run authenticates each one)."""
from __future__ import annotations

import pytest

from scripts.bench_http import Client, HttpBenchOptions, format_report, run_http_bench


@pytest.mark.parametrize("secure", [False, True])
def test_the_http_bench_runs_end_to_end(tmp_path, secure):
    options = HttpBenchOptions(records=400, batch=100, record_size=10, threads=2, scrapes=2, secure=secure)
    results = run_http_bench(options, tmp_path)
    runs = {r["run"]: r for r in results}
    assert runs["consume json"]["records"] == runs["consume msgpack"]["records"] == 4 * 400
    assert all(r["records_per_s"] > 0 for r in results if "records_per_s" in r)
    assert "GET /api/v1/overview" in format_report(results)
    assert Client.auth == {}  # the credentials do not outlive the run
