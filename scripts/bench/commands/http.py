"""``zkafka bench http``: the REST proxy's produce/consume throughput and the admin endpoints' latency."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "http", help="the REST proxy on a 3-broker cluster (produce JSON/msgpack, direct and forwarded to the "
                     "leader; consume JSON/msgpack) and the latency of /metrics and /api/v1/overview")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--records", type=int, default=300_000, help="records per produce run (default 300000)")
    p.add_argument("--batch", type=int, default=500, help="records per POST (default 500)")
    p.add_argument("--record-size", type=int, default=100, help="bytes per record value (default 100)")
    p.add_argument("--threads", type=int, default=4, help="HTTP clients posting at once (default 4)")
    p.add_argument("--scrapes", type=int, default=50, help="GETs of each admin endpoint timed (default 50)")
    p.add_argument("--secure", action="store_true", help="with the ACL authorizer on and HTTP basic auth "
                                                         "required on every request (a SCRAM user)")
    p.add_argument("--tls", action="store_true", help="the HTTP ports serve HTTPS (http.ssl.enabled=true, "
                                                      "certificates made with openssl)")
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.http_api import HttpBenchOptions, format_report, run_http_bench

    if min(args.records, args.batch, args.record_size, args.threads, args.scrapes) < 1:
        args.subparser.error("--records, --batch, --record-size, --threads and --scrapes must be positive")
    options = HttpBenchOptions(args.records, args.batch, args.record_size, args.threads, args.scrapes, args.secure,
                               args.tls)
    results = run_http_bench(options, args.dir)
    print(json.dumps(results, indent=2) if args.json else format_report(results))
    return 0
