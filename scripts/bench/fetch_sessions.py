"""What fetch sessions (KIP-227) save on idle partitions: a 3-broker cluster, one topic of N idle
partitions at RF 3, run once with ``max.incremental.fetch.session.cache.slots`` = 0 (every Fetch full:
the behaviour before sessions) and once with the default 1000.

Per run: the brokers' CPU seconds (``/proc/<pid>/stat``) over ``--seconds`` of idleness (the followers'
fetches long-poll ``replica.fetch.wait.max.ms`` each), the leaders' incremental fetches over that time,
and the bytes of one follower-like Fetch v12 exchange with broker 1 (``replica_id`` -1 so it changes no
follower state; the same partitions and fields a follower names): the full request and response, then
an idle incremental one (an empty request, an empty response).

    python -m scripts.bench.fetch_sessions [--partitions 1000] [--seconds 30]
"""
from __future__ import annotations

import argparse
import json
import socket
import struct
import tempfile
import time
from pathlib import Path

from scripts.bench.common import create_topic, machine_line
from scripts.bench.procstat import cpu_seconds
from scripts.local.cluster import Cluster, running_cluster

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode

FETCH, VERSION = 1, 12
TOPIC = "idle"


def _exchange(sock: socket.socket, correlation_id: int, body) -> tuple[int, int, object]:
    """Send one Fetch; (request bytes, response bytes, decoded response)."""
    frame = codec.encode_request(FETCH, VERSION, correlation_id, "fetch-sessions-bench", body)
    sock.sendall(frame)
    size = struct.unpack(">i", _read(sock, 4))[0]
    payload = _read(sock, size)
    return len(frame), size + 4, codec.decode_response(FETCH, VERSION, payload)[1]


def _read(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        out += chunk
    return bytes(out)


def _led_by(cluster: Cluster, broker: int) -> list[tuple[int, int]]:
    """(partition, log end offset) of the partitions ``broker`` leads."""
    view = cluster.health(broker, timeout=10)["partitions"]
    return [(int(name.rsplit("-", 1)[1]), row["log_end_offset"]) for name, row in view.items()
            if name.startswith(f"{TOPIC}-") and row["is_leader"]]


def fetch_bytes(cluster: Cluster) -> dict:
    led = _led_by(cluster, 1)
    cls = codec.request_class(FETCH, VERSION)

    def body(session_id: int, epoch: int, partitions):
        return codec.build(cls, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=10 << 20, isolation_level=0,
                           session_id=session_id, session_epoch=epoch, rack_id="", forgotten_topics_data=[],
                           topics=[dict(topic=TOPIC, partitions=[dict(
                               partition=p, current_leader_epoch=-1, fetch_offset=end, last_fetched_epoch=-1,
                               log_start_offset=0, partition_max_bytes=1 << 20) for p, end in partitions])]
                           if partitions else [])

    with socket.create_connection(("127.0.0.1", cluster.kafka_port(1)), timeout=30) as sock:
        full_req, full_resp, answer = _exchange(sock, 1, body(0, 0, led))
        result = {"partitions_led": len(led), "full_request_bytes": full_req, "full_response_bytes": full_resp,
                  "session_id": answer.session_id}
        if answer.session_id:
            inc_req, inc_resp, again = _exchange(sock, 2, body(answer.session_id, 1, []))
            assert again.error_code.value == ErrorCode.NONE, again.error_code
            result.update(incremental_request_bytes=inc_req, incremental_response_bytes=inc_resp,
                          incremental_partitions_answered=sum(len(t.partitions) for t in again.responses))
    return result


def _incremental_fetches(cluster: Cluster, broker: int) -> float:
    import urllib.request
    with urllib.request.urlopen(cluster.http_url(broker, "/metrics"), timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("kafka_server_fetch_session_cache_incremental_fetches"):
                return float(line.split()[-1])
    return 0.0


def run(partitions: int, seconds: float, slots: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="zkafka-fetch-sessions-") as tmp, running_cluster(
            Path(tmp), 3, properties={"max.incremental.fetch.session.cache.slots": str(slots)}) as cluster:
        started = time.monotonic()
        create_topic(cluster.bootstrap_servers, TOPIC, partitions, 3)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and sum(len(_led_by(cluster, b)) for b in (1, 2, 3)) < partitions:
            time.sleep(1)
        time.sleep(10)  # the followers' first (full) fetches, ISR writes settled
        pids = {b: cluster.broker_pid(b) for b in (1, 2, 3)}
        fetches = {b: _incremental_fetches(cluster, b) for b in pids}
        cpu = {b: cpu_seconds(pid) for b, pid in pids.items()}
        time.sleep(seconds)
        cpu = {b: round(cpu_seconds(pid) - cpu[b], 2) for b, pid in pids.items()}
        fetches = {b: _incremental_fetches(cluster, b) - fetches[b] for b in pids}
        return {"slots": slots, "partitions": partitions, "seconds": seconds, "setup_s": round(time.monotonic() - started),
                "broker_cpu_s": cpu, "cpu_share_per_broker": round(sum(cpu.values()) / 3 / seconds, 3),
                "incremental_fetches": fetches, **fetch_bytes(cluster)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args(argv)
    print(machine_line())
    for slots in (0, 1000):
        print(json.dumps(run(args.partitions, args.seconds, slots)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
