"""``zkafka bench http`` at toy sizes, plain, ``--secure`` and ``--secure --tls``: every request answers 200
and everything produced (direct and forwarded, JSON and msgpack) is read back (the secure runs authenticate
each one; the TLS run does it all over https)."""
from __future__ import annotations

import pytest

from scripts.bench.http_api import Client, HttpBenchOptions, format_report, run_http_bench


@pytest.mark.parametrize("secure, tls", [(False, False), (True, False), (True, True)])
def test_the_http_bench_runs_end_to_end(tmp_path, secure, tls):
    options = HttpBenchOptions(records=400, batch=100, record_size=10, threads=2, scrapes=2, secure=secure, tls=tls)
    results = run_http_bench(options, tmp_path)
    runs = {r["run"]: r for r in results}
    assert runs["consume json"]["records"] == runs["consume msgpack"]["records"] == 4 * 400
    assert all(r["records_per_s"] > 0 for r in results if "records_per_s" in r)
    assert "GET /api/v1/overview" in format_report(results)
    assert Client.auth == {} and Client.tls is None  # the credentials do not outlive the run
