import pytest

from zkafka.testing.properties import parse_properties, property_env


def entrypoint_key(name: str) -> str:
    """The image's entrypoint rule (zkafka-entrypoint): strip KAFKA_, lowercase, ___ -> -, __ -> _, _ -> ."""
    key = name.removeprefix("KAFKA_").lower()
    return key.replace("___", "-").replace("__", "\x01").replace("_", ".").replace("\x01", "_")


@pytest.mark.parametrize("key", ["broker.id", "log.retention.ms", "listener.security.protocol.map",
                                 "listener.name.internal.scram-sha-256.sasl.jaas.config", "some_key.with_underscores",
                                 "a-b_c.d"])
def test_property_env_is_the_inverse_of_the_entrypoint_rule(key):
    (name, value), = property_env({key: 5}).items()
    assert name.startswith("KAFKA_") and value == "5"
    assert entrypoint_key(name) == key


def test_values_are_strings_and_booleans_lowercase():
    assert property_env({"auto.create.topics.enable": False, "num.partitions": 3}) == {
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false", "KAFKA_NUM_PARTITIONS": "3"}


@pytest.mark.parametrize("key", ["", "a b", "a=b"])
def test_a_key_that_is_no_property_name_is_refused(key):
    with pytest.raises(ValueError, match="not a broker property name"):
        property_env({key: 1})


def test_parse_properties_reads_ini_lines():
    assert parse_properties(["num.partitions = 3", "", "# comment", "log.dirs=/a,/b"]) == {
        "num.partitions": "3", "log.dirs": "/a,/b"}


def test_parse_properties_names_a_line_without_equals():
    with pytest.raises(ValueError, match="'num.partitions 3'"):
        parse_properties(["num.partitions 3"])
