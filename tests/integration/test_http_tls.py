"""The HTTP port over TLS, end to end: a real ZooKeeper and 3 real brokers with ``http.ssl.enabled=true``
(the broker keystore and CA made with ``openssl`` at test time, tests/certs.py), HTTP basic auth on
(``http.authentication.method=BASIC``) and a PLAINTEXT Kafka listener. Everything broker-to-broker over
HTTP goes over https and is verified against ``ssl.truststore.location``: the controller's LeaderAndIsr and
UpdateMetadata (a replication-factor-3 topic gets full ISRs everywhere), the admin API's fan-out and the
REST proxy's forwarding to a leader (every partition's high watermark, through one broker), and a broker's
ControlledShutdown to the controller. The port refuses plain HTTP and a client that does not trust the CA;
basic auth works over https. The registration in ZooKeeper says https."""
from __future__ import annotations

import json

import pytest
import requests
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, ClusterSpec
from tests.certs import make_pki
from tests.integration.conditions import wait_for
from tests.integration.scram_users import add_scram_users

TIMEOUT = 60
TOPIC, PARTITIONS = "tls-http", 3
ALICE = ("alice", "alice-secret")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, pki):
    spec = ClusterSpec.on_free_ports(3, tick_time=500, session_timeout_ms=6000, properties={
        "http.ssl.enabled": "true",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
        "http.authentication.method": "BASIC",
        "offsets.topic.num.partitions": "1", "replica.fetch.backoff.ms": "200"})
    c = Cluster(tmp_path_factory.mktemp("cluster"), spec)
    c.up(timeout=TIMEOUT)  # the health polls themselves go over https, trusting the CA
    try:
        add_scram_users(c, dict([ALICE]))
        yield c
    finally:
        c.down()


def get(cluster: Cluster, pki, broker_id: int, path: str, **kwargs) -> requests.Response:
    return requests.get(cluster.http_url(broker_id, path), verify=str(pki.ca), auth=ALICE, timeout=10, **kwargs)


def partition_rows(cluster: Cluster, pki, broker_id: int) -> list[dict]:
    response = get(cluster, pki, broker_id, "/api/v1/partitions", params={"topic": TOPIC})
    return response.json().get("partitions", []) if response.status_code == 200 else []


def test_the_registration_says_https(cluster, zk):
    for broker_id in cluster.broker_ids:
        data, _ = zk.get(f"/brokers/ids/{broker_id}")
        registration = json.loads(data)
        assert registration["zkafka_http_scheme"] == "https"
        assert registration["zkafka_http_port"] == cluster.http_port(broker_id)


def test_plain_http_and_an_untrusting_client_are_refused(cluster, pki):
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"http://127.0.0.1:{cluster.http_port(1)}/healthz", timeout=10)
    with pytest.raises(requests.exceptions.SSLError):  # the system's CAs do not know the test CA
        requests.get(cluster.http_url(1, "/healthz"), timeout=10)
    response = requests.get(cluster.http_url(1, "/healthz"), verify=str(pki.ca), timeout=10)
    assert response.status_code == 200 and response.json()["broker_epoch"] > 0


def test_basic_auth_over_https(cluster, pki):
    url = cluster.http_url(2, "/api/v1/cluster")
    assert requests.get(url, verify=str(pki.ca), timeout=10).status_code == 401
    assert requests.get(url, verify=str(pki.ca), auth=("alice", "wrong"), timeout=10).status_code == 401
    response = requests.get(url, verify=str(pki.ca), auth=ALICE, timeout=10)
    assert response.status_code == 200
    assert sorted(response.json()["brokers"]) == cluster.broker_ids


def test_the_controller_reaches_every_broker_over_https(cluster, pki):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(TIMEOUT)

    def full_everywhere() -> bool:  # every broker's metadata (UpdateMetadata) and ISRs (LeaderAndIsr -> fetchers)
        views = [partition_rows(cluster, pki, b) for b in cluster.broker_ids]
        return all(len(rows) == PARTITIONS and all(sorted(r["isr"]) == [1, 2, 3] and r["leader"] > 0 for r in rows)
                   for rows in views)
    wait_for(full_everywhere, TIMEOUT, "RF-3 partitions with full ISRs in every broker's metadata")

    for partition in range(PARTITIONS):  # through broker 1: a partition it does not lead is forwarded over https
        response = requests.post(cluster.http_url(1, f"/api/v1/topics/{TOPIC}/partitions/{partition}/records"),
                                 json={"records": [{"value": f"v{i}"} for i in range(partition + 1)]},
                                 verify=str(pki.ca), auth=ALICE, timeout=30)
        assert response.status_code == 200, response.text
    leaders = {r["leader"] for r in partition_rows(cluster, pki, 1)}
    assert leaders - {1}, "no partition led by another broker: neither forwarding nor the fan-out was exercised"
    # the high watermarks are the leaders' own facts: broker 1 asks the others for them over https
    wait_for(lambda: sorted((r["partition"], r["high_watermark"]) for r in partition_rows(cluster, pki, 1))
             == [(p, p + 1) for p in range(PARTITIONS)], TIMEOUT, "every partition's high watermark via broker 1")


def test_controlled_shutdown_over_https(cluster, pki):
    controller = cluster.controller()
    assert controller is not None
    rows = wait_for(lambda: partition_rows(cluster, pki, controller[0]), TIMEOUT, "the topic's partitions")
    led = {r["leader"] for r in rows} - {controller[0]}  # preferred leaders are spread over the 3 brokers
    assert led, f"every partition is led by the controller {controller[0]}: {rows}"
    victim = min(led)  # it asks the controller (another process) to move its leaderships: over https
    cluster.stop_broker(victim)
    log = (cluster.broker_dir(victim) / "broker.log").read_text()
    assert f"broker {victim}: controlled shutdown succeeded" in log, cluster.tail(victim)
    assert "controlled shutdown attempt" not in log  # the first attempt, over https, was answered

    survivors = [b for b in cluster.broker_ids if b != victim]
    wait_for(lambda: (rows := partition_rows(cluster, pki, survivors[0])) and all(
        r["leader"] in survivors and victim not in r["isr"] for r in rows), TIMEOUT,
        f"leaders moved off broker {victim} and it left the ISRs")
    cluster.start_broker(victim)
    cluster.wait_until_ready(TIMEOUT, cluster.broker_ids)
    wait_for(lambda: all(sorted(r["isr"]) == [1, 2, 3] for r in partition_rows(cluster, pki, victim)), TIMEOUT,
             f"broker {victim} back in every ISR")
