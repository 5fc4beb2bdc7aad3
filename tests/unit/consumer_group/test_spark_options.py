"""consumer_group.spark.options and .source_options: the zkafka data source's options, checked like Spark's Kafka source
(KafkaSourceProvider) with every error naming its option."""
from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consumer_group.spark.options import OptionError, SinkOptions, parse_offsets_spec, parse_sink_options
from consumer_group.spark.source_options import SourceOptions, parse_source_options

BOOT = {"kafka.bootstrap.servers": "b1:9092,b2:9092"}


def src(streaming: bool = True, **opts: str) -> SourceOptions:
    return parse_source_options({**BOOT, "subscribe": "t", **opts}, streaming=streaming)


def err(options: dict[str, str], streaming: bool = True, option: str | None = None) -> str:
    with pytest.raises(OptionError) as info:
        parse_source_options(options, streaming=streaming)
    msg = str(info.value)
    assert msg.startswith("Option '"), msg
    if option is not None:
        assert msg.startswith(f"Option '{option}':"), msg
        assert info.value.option == option
    return msg


# ------------------------------------------------------------------------------------------- OptionError


def test_option_error_is_value_error_and_names_option():
    e = OptionError("startingOffsets", "bad")
    assert isinstance(e, ValueError)
    assert str(e) == "Option 'startingOffsets': bad"
    assert e.option == "startingOffsets"


# -------------------------------------------------------------------------------------------- defaults


def test_streaming_defaults():
    o = parse_source_options({**BOOT, "subscribe": "t"}, streaming=True)
    assert o == SourceOptions(
        bootstrap_servers="b1:9092,b2:9092", subscribe=("t",), subscribe_pattern=None, assign=None,
        starting_offsets="latest", ending_offsets="latest", starting_timestamp=None,
        starting_offsets_by_timestamp=None, ending_timestamp=None, ending_offsets_by_timestamp=None,
        max_offsets_per_trigger=None, min_partitions=None, fail_on_data_loss=True, include_headers=False,
        kafka_params={"bootstrap.servers": "b1:9092,b2:9092", "isolation.level": "read_uncommitted"})


def test_batch_defaults():
    o = parse_source_options({**BOOT, "subscribe": "t"}, streaming=False)
    assert o.starting_offsets == "earliest"
    assert o.ending_offsets == "latest"
    assert o.fail_on_data_loss is True
    assert o.include_headers is False


def test_source_options_frozen():
    o = src()
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.subscribe = ("x",)  # type: ignore[misc]


# -------------------------------------------------------------------------------------- kafka.* params


def test_bootstrap_servers_required():
    msg = err({"subscribe": "t"}, option="kafka.bootstrap.servers")
    assert "must be specified" in msg
    err({"subscribe": "t", "kafka.bootstrap.servers": "  "}, option="kafka.bootstrap.servers")
    err({"subscribe": "t", "kafka.client.id": "x"}, option="kafka.bootstrap.servers")


def test_kafka_params_prefix_removed_and_bootstrap_included():
    o = src(**{"kafka.security.protocol": "SSL", "kafka.group.id": "g", "kafka.fetch.max.bytes": "100"})
    assert o.kafka_params == {"bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SSL",
                              "group.id": "g", "fetch.max.bytes": "100", "isolation.level": "read_uncommitted"}


def test_kafka_param_keys_case_insensitive():
    o = parse_source_options({"KAFKA.Bootstrap.Servers": "h:1", "Subscribe": "t"}, streaming=True)
    assert o.bootstrap_servers == "h:1"
    assert o.kafka_params == {"bootstrap.servers": "h:1", "isolation.level": "read_uncommitted"}


def test_bootstrap_servers_trimmed():
    o = parse_source_options({"kafka.bootstrap.servers": " h:1 ", "subscribe": "t"}, streaming=True)
    assert o.bootstrap_servers == "h:1"
    assert o.kafka_params["bootstrap.servers"] == "h:1"


def test_empty_kafka_param_name():
    err({**BOOT, "subscribe": "t", "kafka.": "x"}, option="kafka.")


@pytest.mark.parametrize("param, hint", [
    ("kafka.auto.offset.reset", "startingOffsets"),
    ("kafka.key.deserializer", "deserialize the keys"),
    ("kafka.value.deserializer", "deserialize the values"),
    ("kafka.key.serializer", "byte arrays"),
    ("kafka.value.serializer", "byte arrays"),
    ("kafka.enable.auto.commit", "checkpoint"),
    ("kafka.interceptor.classes", "not safe"),
])
@pytest.mark.parametrize("streaming", [True, False])
def test_unsupported_kafka_params(param, hint, streaming):
    msg = err({**BOOT, "subscribe": "t", param: "x"}, streaming=streaming, option=param)
    assert "is not supported" in msg
    assert hint in msg


def test_unsupported_kafka_param_case_insensitive():
    err({**BOOT, "subscribe": "t", "Kafka.Auto.Offset.Reset": "earliest"}, option="kafka.auto.offset.reset")


def test_auto_offset_reset_points_to_starting_offsets():
    msg = err({**BOOT, "subscribe": "t", "kafka.auto.offset.reset": "earliest"})
    assert "'startingOffsets'" in msg and "'earliest' or 'latest'" in msg


# ---------------------------------------------------------------------------------------- unknown keys


@pytest.mark.parametrize("typo", ["startingOffset", "subscribePatern", "path", "kafka", "topic"])
def test_unknown_option_lists_known_options(typo):
    msg = err({**BOOT, "subscribe": "t", typo: "x"}, option=typo)
    assert "unknown option" in msg
    for known in ("startingOffsets", "subscribePattern", "assign", "maxOffsetsPerTrigger", "kafka."):
        assert known in msg


@pytest.mark.parametrize("name", ["minOffsetsPerTrigger", "maxTriggerDelay", "groupIdPrefix",
                                  "kafkaConsumer.pollTimeoutMs", "maxRecordsPerPartition"])
def test_spark_options_not_supported_by_zkafka(name):
    msg = err({**BOOT, "subscribe": "t", name.lower(): "1"}, option=name)
    assert "does not support" in msg


def test_same_option_twice_in_different_case():
    msg = err({**BOOT, "subscribe": "t", "SUBSCRIBE": "u"}, option="SUBSCRIBE")
    assert "more than once" in msg


def test_all_option_names_case_insensitive():
    o = parse_source_options({
        "KAFKA.BOOTSTRAP.SERVERS": "h:1", "SUBSCRIBEPATTERN": "t.*", "STARTINGOFFSETS": "EARLIEST",
        "MAXOFFSETSPERTRIGGER": "5", "MINPARTITIONS": "3", "FAILONDATALOSS": "FALSE", "INCLUDEHEADERS": "True",
    }, streaming=True)
    assert (o.subscribe_pattern, o.starting_offsets, o.max_offsets_per_trigger, o.min_partitions,
            o.fail_on_data_loss, o.include_headers) == ("t.*", "earliest", 5, 3, False, True)


# ------------------------------------------------------------------------------------------ strategies


def test_no_strategy():
    msg = err(dict(BOOT))
    assert "one of the following options must be specified" in msg
    for s in ("subscribe", "subscribePattern", "assign"):
        assert s in msg


@pytest.mark.parametrize("extra", [
    {"subscribePattern": "t.*"},
    {"assign": '{"t":[0]}'},
])
def test_more_than_one_strategy(extra):
    msg = err({**BOOT, "subscribe": "t", **extra}, option="subscribe")
    assert "only one of the following options" in msg
    for s in ("subscribe", "subscribePattern", "assign"):
        assert s in msg


def test_pattern_and_assign_conflict():
    msg = err({**BOOT, "subscribePattern": "x", "assign": '{"t":[0]}'}, option="subscribePattern")
    assert "assign" in msg


def test_subscribe_comma_list():
    assert src(subscribe=" a, b ,,c,a ,").subscribe == ("a", "b", "c")
    assert src(subscribe="only").subscribe == ("only",)


@pytest.mark.parametrize("value", ["", " ", ",", " , ,"])
def test_subscribe_empty(value):
    msg = err({**BOOT, "subscribe": value}, option="subscribe")
    assert "no topics to subscribe" in msg


def test_subscribe_pattern():
    o = parse_source_options({**BOOT, "subscribePattern": " topic-.* "}, streaming=True)
    assert o.subscribe_pattern == "topic-.*"
    assert o.subscribe is None and o.assign is None


def test_subscribe_pattern_empty_or_invalid():
    assert "empty" in err({**BOOT, "subscribePattern": "  "}, option="subscribePattern")
    assert "regular expression" in err({**BOOT, "subscribePattern": "t(["}, option="subscribePattern")


def test_assign():
    o = parse_source_options({**BOOT, "assign": '{"topicA":[0,1],"topicB":[4,2,2]}'}, streaming=True)
    assert o.assign == {"topicA": (0, 1), "topicB": (2, 4)}
    assert o.subscribe is None and o.subscribe_pattern is None


@pytest.mark.parametrize("value", [
    "topicA", "", "[]", "{", "{}", '{"t":[]}', '{"t":0}', '{"t":["0"]}', '{"t":[-1]}', '{"t":[true]}',
    '{"t":[1.0]}', '{"":[0]}', '{"t":{"0":1}}',
])
def test_assign_invalid(value):
    err({**BOOT, "assign": value}, option="assign")


def test_assign_not_json_message():
    assert "no topic partitions to assign" in err({**BOOT, "assign": "topicA"})


# ------------------------------------------------------------------------------------ starting offsets


@pytest.mark.parametrize("value, expected", [("earliest", "earliest"), ("latest", "latest"),
                                             (" LATEST ", "latest"), ("Earliest", "earliest")])
def test_starting_offsets_keywords_streaming(value, expected):
    assert src(startingOffsets=value).starting_offsets == expected


def test_starting_offsets_json():
    o = src(startingOffsets='{"topicA":{"0":23,"1":-2},"topicB":{"0":-1}}')
    assert o.starting_offsets == {"topicA": {0: 23, 1: -2}, "topicB": {0: -1}}


@pytest.mark.parametrize("value", [
    "middle", "{", "[]", "{}", '{"t":{}}', '{"t":[0]}', '{"t":{"x":1}}', '{"t":{"-1":1}}',
    '{"t":{"0":"1"}}', '{"t":{"0":1.5}}', '{"t":{"0":true}}', '{"t":{"0":-3}}', '{"t":{"0":null}}',
    '{"":{"0":1}}', '{"t":{" 0":1}}',
])
def test_starting_offsets_invalid(value):
    err({**BOOT, "subscribe": "t", "startingOffsets": value}, option="startingOffsets")


def test_starting_offsets_invalid_json_shows_example():
    msg = err({**BOOT, "subscribe": "t", "startingOffsets": "middle"})
    assert '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}' in msg


def test_parse_offsets_spec_directly():
    assert parse_offsets_spec("endingOffsets", "latest") == "latest"
    assert parse_offsets_spec("endingOffsets", '{"t":{"10":5,"2":1}}') == {"t": {10: 5, 2: 1}}
    with pytest.raises(OptionError, match="^Option 'endingOffsets':"):
        parse_offsets_spec("endingOffsets", "nope")


def test_batch_starting_offsets_latest_rejected():
    msg = err({**BOOT, "subscribe": "t", "startingOffsets": "latest"}, streaming=False, option="startingOffsets")
    assert "starting offset can't be latest for batch queries on Kafka" in msg


def test_batch_starting_offsets_json_latest_rejected():
    msg = err({**BOOT, "subscribe": "t", "startingOffsets": '{"t":{"0":5,"1":-1}}'}, streaming=False,
              option="startingOffsets")
    assert "t-1" in msg and "can't be latest for batch queries" in msg


def test_batch_starting_offsets_json_earliest_allowed():
    o = src(streaming=False, startingOffsets='{"t":{"0":-2,"1":7}}')
    assert o.starting_offsets == {"t": {0: -2, 1: 7}}


def test_streaming_starting_offsets_json_latest_allowed():
    assert src(startingOffsets='{"t":{"0":-1}}').starting_offsets == {"t": {0: -1}}


# -------------------------------------------------------------------------------------- ending offsets


@pytest.mark.parametrize("name", ["endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"])
def test_ending_options_rejected_in_streaming(name):
    msg = err({**BOOT, "subscribe": "t", name: "latest"}, streaming=True, option=name)
    assert "not valid in streaming queries" in msg


def test_batch_ending_offsets():
    assert src(streaming=False, endingOffsets="latest").ending_offsets == "latest"
    assert src(streaming=False, endingOffsets='{"t":{"0":9,"1":-1}}').ending_offsets == {"t": {0: 9, 1: -1}}


def test_batch_ending_offsets_earliest_rejected():
    msg = err({**BOOT, "subscribe": "t", "endingOffsets": "earliest"}, streaming=False, option="endingOffsets")
    assert "ending offset can't be earliest for batch queries on Kafka" in msg


def test_batch_ending_offsets_json_earliest_rejected():
    msg = err({**BOOT, "subscribe": "t", "endingOffsets": '{"t":{"0":-2}}'}, streaming=False,
              option="endingOffsets")
    assert "t-0" in msg and "can't be earliest" in msg


def test_batch_start_and_end_json_must_name_same_partitions():
    msg = err({**BOOT, "subscribe": "t", "startingOffsets": '{"t":{"0":1}}',
               "endingOffsets": '{"t":{"0":5,"1":5}}'}, streaming=False, option="endingOffsets")
    assert "t-1" in msg


def test_batch_start_after_end_rejected():
    msg = err({**BOOT, "subscribe": "t", "startingOffsets": '{"t":{"0":10}}',
               "endingOffsets": '{"t":{"0":5}}'}, streaming=False, option="endingOffsets")
    assert "t-0" in msg and "greater" in msg


def test_batch_start_end_specials_not_compared():
    o = src(streaming=False, startingOffsets='{"t":{"0":-2,"1":3}}', endingOffsets='{"t":{"0":4,"1":-1}}')
    assert o.starting_offsets == {"t": {0: -2, 1: 3}}
    assert o.ending_offsets == {"t": {0: 4, 1: -1}}
    src(streaming=False, startingOffsets='{"t":{"0":5}}', endingOffsets='{"t":{"0":5}}')


# ------------------------------------------------------------------------------------------ timestamps


def test_starting_timestamp():
    o = src(startingTimestamp="1700000000000")
    assert o.starting_timestamp == 1700000000000
    assert o.starting_offsets == "latest"  # untouched default; the timestamp takes precedence
    assert src(streaming=False, startingTimestamp=" 0 ").starting_timestamp == 0


def test_starting_offsets_by_timestamp():
    o = src(startingOffsetsByTimestamp='{"t":{"0":1000,"1":2000}}')
    assert o.starting_offsets_by_timestamp == {"t": {0: 1000, 1: 2000}}
    assert o.starting_timestamp is None


@pytest.mark.parametrize("combo", [
    {"startingTimestamp": "1", "startingOffsetsByTimestamp": '{"t":{"0":1}}'},
    {"startingTimestamp": "1", "startingOffsets": "earliest"},
    {"startingOffsetsByTimestamp": '{"t":{"0":1}}', "startingOffsets": "earliest"},
    {"startingTimestamp": "1", "startingOffsetsByTimestamp": '{"t":{"0":1}}', "startingOffsets": "earliest"},
])
def test_starting_options_mutually_exclusive(combo):
    msg = err({**BOOT, "subscribe": "t", **combo}, streaming=False)
    assert "only one of" in msg
    for name in ("startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets"):
        assert f"'{name}'" in msg


@pytest.mark.parametrize("combo", [
    {"endingTimestamp": "1", "endingOffsetsByTimestamp": '{"t":{"0":1}}'},
    {"endingTimestamp": "1", "endingOffsets": "latest"},
    {"endingOffsetsByTimestamp": '{"t":{"0":1}}', "endingOffsets": "latest"},
])
def test_ending_options_mutually_exclusive(combo):
    assert "only one of" in err({**BOOT, "subscribe": "t", **combo}, streaming=False)


def test_batch_ending_timestamps():
    o = src(streaming=False, endingTimestamp="2000")
    assert o.ending_timestamp == 2000 and o.ending_offsets == "latest"
    o = src(streaming=False, endingOffsetsByTimestamp='{"t":{"0":5}}')
    assert o.ending_offsets_by_timestamp == {"t": {0: 5}}


def test_timestamp_with_offsets_on_other_side_allowed():
    o = src(streaming=False, startingTimestamp="10", endingOffsets='{"t":{"0":3}}')
    assert o.starting_timestamp == 10 and o.ending_offsets == {"t": {0: 3}}


def test_batch_start_timestamp_after_end_timestamp():
    err({**BOOT, "subscribe": "t", "startingTimestamp": "10", "endingTimestamp": "5"}, streaming=False,
        option="endingTimestamp")
    o = src(streaming=False, startingTimestamp="5", endingTimestamp="5")
    assert (o.starting_timestamp, o.ending_timestamp) == (5, 5)


def test_batch_by_timestamp_pairs_checked():
    err({**BOOT, "subscribe": "t", "startingOffsetsByTimestamp": '{"t":{"0":1}}',
         "endingOffsetsByTimestamp": '{"t":{"1":1}}'}, streaming=False, option="endingOffsetsByTimestamp")
    err({**BOOT, "subscribe": "t", "startingOffsetsByTimestamp": '{"t":{"0":9}}',
         "endingOffsetsByTimestamp": '{"t":{"0":1}}'}, streaming=False, option="endingOffsetsByTimestamp")


@pytest.mark.parametrize("name", ["startingTimestamp", "endingTimestamp"])
@pytest.mark.parametrize("value", ["abc", "1.5", "", "-1", "1e3", "0x10", "1_000"])
def test_timestamp_must_be_non_negative_integer(name, value):
    err({**BOOT, "subscribe": "t", name: value}, streaming=False, option=name)


@pytest.mark.parametrize("value", ['{"t":{"0":-1}}', '{"t":{"0":-2}}', '{"t":{"0":"1"}}', "earliest", "{}"])
def test_offsets_by_timestamp_invalid(value):
    err({**BOOT, "subscribe": "t", "startingOffsetsByTimestamp": value}, option="startingOffsetsByTimestamp")


# ----------------------------------------------------------------------------------- assign + offsets


ASSIGN = {**BOOT, "assign": '{"a":[0,1],"b":[2]}'}


def test_assign_offsets_must_match_assigned_partitions():
    o = parse_source_options({**ASSIGN, "startingOffsets": '{"a":{"0":1,"1":-2},"b":{"2":-1}}'}, streaming=True)
    assert o.starting_offsets == {"a": {0: 1, 1: -2}, "b": {2: -1}}


@pytest.mark.parametrize("offsets", [
    '{"a":{"0":1,"1":-2}}',                          # missing b-2
    '{"a":{"0":1,"1":-2},"b":{"2":-1,"3":0}}',       # extra b-3
    '{"a":{"0":1,"1":-2},"c":{"2":-1}}',             # wrong topic
])
def test_assign_offsets_mismatch(offsets):
    msg = err({**ASSIGN, "startingOffsets": offsets}, option="startingOffsets")
    assert "assigned" in msg


def test_assign_ending_offsets_mismatch():
    err({**ASSIGN, "endingOffsets": '{"a":{"0":5}}'}, streaming=False, option="endingOffsets")


def test_assign_offsets_by_timestamp_mismatch():
    err({**ASSIGN, "startingOffsetsByTimestamp": '{"a":{"0":5}}'}, option="startingOffsetsByTimestamp")


def test_assign_with_keyword_offsets():
    o = parse_source_options({**ASSIGN, "startingOffsets": "earliest"}, streaming=True)
    assert o.starting_offsets == "earliest"


# ------------------------------------------------------------------------------- numbers and booleans


@pytest.mark.parametrize("name, field", [("maxOffsetsPerTrigger", "max_offsets_per_trigger"),
                                         ("minPartitions", "min_partitions")])
def test_positive_integers(name, field):
    assert getattr(src(**{name: "10"}), field) == 10
    assert getattr(src(**{name: " 1 "}), field) == 1
    assert getattr(src(streaming=False, **{name: "7"}), field) == 7
    for bad in ("0", "-5"):
        assert "must be positive" in err({**BOOT, "subscribe": "t", name: bad}, option=name)
    for bad in ("ten", "1.0", "", "+1", "1_0", "٣"):
        assert "expected an integer" in err({**BOOT, "subscribe": "t", name: bad}, option=name)


@pytest.mark.parametrize("name, field, default", [("failOnDataLoss", "fail_on_data_loss", True),
                                                  ("includeHeaders", "include_headers", False)])
def test_booleans(name, field, default):
    assert getattr(src(), field) is default
    for text, value in (("true", True), ("TRUE", True), ("True", True), ("false", False), ("FaLsE", False)):
        assert getattr(src(**{name: text}), field) is value
    for bad in ("yes", "1", "0", "", "no"):
        assert "'true' or 'false'" in err({**BOOT, "subscribe": "t", name: bad}, option=name)


# ------------------------------------------------------------------------------------------ hypothesis


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text("abcdefgh.-_", min_size=1, max_size=6),
                       st.dictionaries(st.integers(0, 500), st.integers(-2, 2**62), min_size=1, max_size=5),
                       min_size=1, max_size=4))
def test_offsets_json_round_trip(spec):
    text = json.dumps({t: {str(p): o for p, o in parts.items()} for t, parts in spec.items()})
    assert src(startingOffsets=text).starting_offsets == spec


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["subscribe", "startingOffsets", "failOnDataLoss", "minPartitions",
                                        "kafka.bootstrap.servers", "kafka.client.id"]),
                       st.just(None), min_size=1),
       st.data())
def test_case_of_option_names_never_matters(keys, data):
    values = {"subscribe": "t", "startingOffsets": "earliest", "failOnDataLoss": "false", "minPartitions": "4",
              "kafka.bootstrap.servers": "h:1", "kafka.client.id": "c"}
    opts = {k: values[k] for k in keys}
    opts.setdefault("subscribe", "t")
    opts.setdefault("kafka.bootstrap.servers", "h:1")
    mangled = {"".join(c.upper() if data.draw(st.booleans()) else c.lower() for c in k): v
               for k, v in opts.items()}
    assert parse_source_options(mangled, streaming=True) == parse_source_options(opts, streaming=True)


# ------------------------------------------------------------------------------------------------- sink


def test_sink_minimal():
    assert parse_sink_options(BOOT) == SinkOptions(bootstrap_servers="b1:9092,b2:9092", topic=None,
                                                   kafka_params={"bootstrap.servers": "b1:9092,b2:9092"})


def test_sink_topic_and_params():
    o = parse_sink_options({**BOOT, "Topic": " out ", "kafka.acks": "all", "kafka.compression.type": "lz4"})
    assert o.topic == "out"
    assert o.kafka_params == {"bootstrap.servers": "b1:9092,b2:9092", "acks": "all", "compression.type": "lz4"}


def test_sink_allows_checkpoint_location():
    assert parse_sink_options({**BOOT, "checkpointLocation": "/tmp/cp"}).topic is None


def test_sink_bootstrap_required():
    with pytest.raises(OptionError, match="^Option 'kafka.bootstrap.servers':"):
        parse_sink_options({"topic": "t"})


def test_sink_empty_topic():
    with pytest.raises(OptionError, match="^Option 'topic':"):
        parse_sink_options({**BOOT, "topic": "  "})


@pytest.mark.parametrize("param", ["kafka.key.serializer", "kafka.value.serializer"])
def test_sink_serializers_rejected(param):
    with pytest.raises(OptionError, match=f"^Option '{param}':.*not supported"):
        parse_sink_options({**BOOT, param: "x"})


@pytest.mark.parametrize("typo", ["topics", "subscribe", "startingOffsets"])
def test_sink_unknown_option(typo):
    with pytest.raises(OptionError) as info:
        parse_sink_options({**BOOT, typo: "x"})
    msg = str(info.value)
    assert msg.startswith(f"Option '{typo}':")
    assert "unknown option for the zkafka sink" in msg and "topic" in msg and "kafka." in msg


def test_sink_accepts_what_spark_passes_along_with_a_streaming_query():
    sink = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t", "queryname": "page_counts",
                               "checkpointLocation": "/tmp/c", "path": "/tmp/p"})
    assert sink.topic == "t"


# -- transactions ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("streaming", [True, False])
def test_isolation_level_defaults_to_sparks_read_uncommitted(streaming):
    assert src(streaming).kafka_params["isolation.level"] == "read_uncommitted"
    assert src(streaming, **{"kafka.isolation.level": "read_committed"}).kafka_params["isolation.level"] == \
        "read_committed"
    assert src(streaming, **{"kafka.isolation.level": " READ_COMMITTED "}).kafka_params["isolation.level"] == \
        "read_committed"


def test_isolation_level_must_be_kafkas():
    msg = err({**BOOT, "subscribe": "t", "kafka.isolation.level": "serializable"}, option="kafka.isolation.level")
    assert "read_uncommitted, read_committed" in msg and "'serializable'" in msg


def test_sink_transactional_id_prefix_and_the_refused_shared_id():
    from consumer_group.spark.options import transactional_id
    o = parse_sink_options({**BOOT, "topic": "out", "TransactionalIdPrefix": " app "})
    assert o.transactional_id_prefix == "app" and "transactional.id" not in o.kafka_params
    assert transactional_id("app", 3) == "app-3"
    assert parse_sink_options({**BOOT, "topic": "out"}).transactional_id_prefix is None
    with pytest.raises(OptionError, match="^Option 'transactionalIdPrefix': must not be empty"):
        parse_sink_options({**BOOT, "topic": "out", "transactionalIdPrefix": " "})
    with pytest.raises(OptionError, match="^Option 'kafka.transactional.id':.*transactionalIdPrefix"):
        parse_sink_options({**BOOT, "topic": "out", "kafka.transactional.id": "x"})
