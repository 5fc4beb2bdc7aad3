"""The pure parts of kafka-delete-records, kafka-get-offsets, kafka-broker-api-versions, kafka-cluster and the
tools' shared argument handling (scripts.tools.common.arguments)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException

from scripts.tools import broker_api_versions as bav
from scripts.tools.common.arguments import KafkaArgumentParser, host_port_list, partition_list
from scripts.tools.get_offsets import chosen_partitions, offset_lines
from scripts.tools.kafka_cluster import cluster_id_line
from scripts.tools.kafka_delete_records import OffsetJsonError, parse_offset_json, report_lines

KAFKA_2_8 = json.loads((Path(__file__).resolve().parents[2] / "golden" / "kafka-2.8.2-api-versions.json").read_text())["apis"]


# -- kafka-delete-records ------------------------------------------------------------------------------
def test_offset_json_of_kafkas_format():
    text = '{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}, {"topic": "foo", "partition": 0, "offset": -1}], "version": 1}'
    assert parse_offset_json(text) == [("foo", 1, 1), ("foo", 0, -1)]
    assert parse_offset_json('{"partitions": []}') == []  # version defaults to 1


@pytest.mark.parametrize("text, message", [
    ("{", "not JSON"),
    ("[]", "not a valid JSON"),
    ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
    ('{"version": 1}', "Missing partitions field"),
    ('{"partitions": [{"topic": "", "partition": 0, "offset": 1}]}', '"topic" must be a non-empty string'),
    ('{"partitions": [{"topic": "a", "partition": "0", "offset": 1}]}', '"partition" must be an integer'),
    ('{"partitions": [{"topic": "a", "partition": 0, "offset": true}]}', '"offset" must be an integer'),
    ('{"partitions": [3]}', "bad partition entry 3"),
    ('{"partitions": [{"topic": "a", "partition": 0, "offset": 1}, {"topic": "a", "partition": 0, "offset": 2}]}',
     "Offset json file contains duplicate topic partitions: a-0"),
])
def test_offset_json_errors(text, message):
    with pytest.raises(OffsetJsonError, match=message):
        parse_offset_json(text)


def test_report_lines_are_kafkas():
    error = KafkaException(KafkaError(KafkaError.OFFSET_OUT_OF_RANGE, "Broker: Offset out of range"))
    assert report_lines({("foo", 1): 5, ("foo", 0): error}) == [
        "Records delete operation completed:",
        "partition: foo-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: Broker: Offset out of range",
        "partition: foo-1\tlow_watermark: 5"]


# -- kafka-get-offsets ---------------------------------------------------------------------------------
def test_chosen_partitions_and_kafkas_error_lines():
    known = {0: 1, 1: -1, 2: 3}
    assert chosen_partitions("t", known, []) == ([0, 2], ["Error: partition 1 does not have a leader. Skip getting offsets"])
    assert chosen_partitions("t", known, [2, 9]) == ([2], ["Error: partition 9 does not exist"])


def test_offset_lines():
    assert offset_lines("t", {1: None, 0: 42, 2: -1}) == ["t:0:42", "t:1:", "t:2:"]


# -- kafka-broker-api-versions -------------------------------------------------------------------------
def test_the_client_table_is_kafka_2_8s_zk_broker_apis():
    expected = {int(key): (api["name"], *map(int, api["validVersions"].split("-")))
                if "-" in api["validVersions"] else (api["name"], int(api["validVersions"]), int(api["validVersions"]))
                for key, api in KAFKA_2_8.items() if "zkBroker" in api["listeners"]}
    assert bav.KAFKA_28_ZK_BROKER_APIS == expected


@pytest.mark.parametrize("key, lo, hi, line", [
    (0, 0, 9, "Produce(0): 0 to 9 [usable: 9]"),
    (0, 3, 11, "Produce(0): 3 to 11 [usable: 9]"),
    (60, 0, 0, "DescribeCluster(60): 0 [usable: 0]"),
    (45, 1, 2, "AlterPartitionReassignments(45): 1 to 2 [unusable: node too new]"),
    (99, 0, 3, "UNKNOWN(99): 0 to 3"),
])
def test_api_lines(key, lo, hi, line):
    assert bav.api_line(key, lo, hi) == line


def test_the_table_lists_every_zk_broker_api_in_key_order():
    text = bav.node_api_versions({18: (0, 3), 0: (0, 9), 99: (0, 0)})
    lines = text.split("\n")
    assert lines[0] == "(" and lines[-1] == ")"
    assert lines[1] == "\tProduce(0): 0 to 9 [usable: 9],"
    assert "\tFetch(1): UNSUPPORTED," in lines and "\tApiVersions(18): 0 to 3 [usable: 3]," in lines
    assert lines[-2] == "\tUNKNOWN(99): 0"
    assert len(lines) == len(bav.KAFKA_28_ZK_BROKER_APIS) + 1 + 2


def test_node_name_is_kafkas():
    assert bav.node_name("h", 9092, 3, None) == "h:9092 (id: 3 rack: null)"
    assert bav.node_name("h", 9092, 3, "r1") == "h:9092 (id: 3 rack: r1)"


# -- kafka-cluster -------------------------------------------------------------------------------------
def test_cluster_id_line():
    assert cluster_id_line("abc") == "Cluster ID: abc"
    assert cluster_id_line(None) == "No cluster ID found. The Kafka version is probably too old."


# -- common arguments ----------------------------------------------------------------------------------
def test_a_bad_flag_is_one_line_and_exit_1(capsys):
    parser = KafkaArgumentParser(prog="kafka-x")
    parser.add_argument("--n", type=int)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--nope"])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kafka-x: ") and "--nope" in err


@pytest.mark.parametrize("text, ok", [("h:1", True), ("h:1,g:65535", True), ("h", False), ("h:0", False),
                                      (":9", False), ("h:x", False), ("h:70000", False)])
def test_host_port_list(text, ok):
    if ok:
        assert host_port_list(text) == text
    else:
        with pytest.raises(Exception, match="is not host:port"):
            host_port_list(text)


def test_partition_list():
    assert partition_list("0,2, 5") == [0, 2, 5] and partition_list("") == []
    with pytest.raises(Exception, match="numeric partition ids"):
        partition_list("a,b")
    with pytest.raises(Exception, match=">= 0"):
        partition_list("-1")
