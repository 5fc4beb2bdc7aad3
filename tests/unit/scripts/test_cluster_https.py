"""scripts.local.cluster for an https cluster (``http.ssl.enabled=true`` among its properties): the health polls
and ``http_url`` use https and trust the brokers' truststore; a plain cluster is exactly as before."""
from __future__ import annotations

import ssl

from scripts.local.cluster import Cluster, ClusterSpec
from tests.certs import make_pki


def cluster(tmp_path, **properties: str) -> Cluster:
    return Cluster(tmp_path / "c", ClusterSpec(3, 2181, 9092, 8080, properties=properties))


def test_a_plain_cluster_polls_http_without_a_context(tmp_path):
    c = cluster(tmp_path)
    assert c.http_scheme == "http" and c.http_url(2, "/healthz") == "http://127.0.0.1:8081/healthz"
    assert c.http_ssl_context is None
    assert cluster(tmp_path, **{"http.ssl.enabled": "false"}).http_scheme == "http"


def test_an_https_cluster_trusts_the_http_truststore_else_the_brokers_one(tmp_path):
    pki = make_pki(tmp_path / "pki")
    c = cluster(tmp_path, **{"http.ssl.enabled": " TRUE", "ssl.truststore.location": str(pki.ca)})
    assert c.http_url(3, "/healthz") == "https://127.0.0.1:8082/healthz"
    context = c.http_ssl_context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [ca["subject"] for ca in context.get_ca_certs()] == [((("commonName", "ca"),),)]
    other = cluster(tmp_path, **{"http.ssl.enabled": "true", "ssl.truststore.location": str(pki.dir / "nope.pem"),
                                 "http.ssl.truststore.location": str(pki.dir / "other-ca.pem")})
    assert [ca["subject"] for ca in other.http_ssl_context.get_ca_certs()] == [((("commonName", "other-ca"),),)]
