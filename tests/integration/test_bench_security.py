"""``zkafka bench security`` end to end on a tiny scale: five real one-broker clusters (PLAINTEXT, PLAINTEXT
with the ACL authorizer, SASL_PLAINTEXT SCRAM-SHA-512 with the authorizer, SSL, PLAINTEXT without sendfile);
every record produced is consumed in every mode, every kind of login completes, and the clusters are gone
afterwards. A second test checks that the ACL mode really runs with the authorizer on: within the bench's
grants ANONYMOUS creates a topic and produces idempotently (InitProducerId through decide_any), outside them
it is refused. The numbers are not judged: benchmarks are never asserted."""
from __future__ import annotations

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.bench.security import format_report, run_security_bench, start_mode
from scripts.bench.security_options import MODES, SecurityBenchOptions


def test_a_small_run_measures_every_mode_and_login(tmp_path):
    options = SecurityBenchOptions(records=3000, reps=1, logins=5, acls=200, decision_sizes=(0, 100),
                                   decision_seconds=0.01, directory=tmp_path)
    result = run_security_bench(options)
    assert [(r["mode"], r["produce"]["records"], r["consume"]["records"], r["produce"]["errors"])
            for r in result["runs"]] == [(mode, 3000, 3000, 0) for mode in MODES]
    assert [r["connection"] for r in result["logins"]] == ["PLAINTEXT", "SSL", "SASL PLAIN", "SASL SCRAM-SHA-512"]
    assert all(r["logins"] == 5 and r["per_s"] > 0 for r in result["logins"])
    assert result["credential_read"]["reads"] == 5 and result["pbkdf2_ms"] > 0
    assert [r["acls"] for r in result["decisions"]] == [0, 100]
    text = "\n".join(format_report(result))
    assert "| produce | sasl-scram |" in text and "| SASL SCRAM-SHA-512 |" in text
    assert list(tmp_path.iterdir()) == []  # clusters and certificates deleted after a successful run


def test_the_acl_mode_allows_its_grants_only(tmp_path):
    mode = start_mode("plaintext-acl", tmp_path, SecurityBenchOptions(acls=100), None)
    try:
        admin = AdminClient({"bootstrap.servers": mode.cluster.bootstrap_servers})
        admin.create_topics([NewTopic("bench-granted", 1, 1)])["bench-granted"].result(30)
        # an idempotent producer: InitProducerId without IdempotentWrite on the cluster is allowed by
        # Write on some topic (decide_any over the mix and the grants)
        producer = Producer({"bootstrap.servers": mode.cluster.bootstrap_servers, "enable.idempotence": True})
        errors = []
        for i in range(10):
            producer.produce("bench-granted", b"%d" % i, on_delivery=lambda err, _msg: errors.append(err))
        assert producer.flush(30) == 0 and errors == [None] * 10
        try:
            admin.create_topics([NewTopic("not-granted", 1, 1)])["not-granted"].result(30)
            raise AssertionError("ANONYMOUS created a topic outside its grants")
        except KafkaException as exc:
            assert exc.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"
    finally:
        mode.cluster.down()
