"""The pure parts of zkafka's ready-made Spark jobs (consumer_group.spark.jobs): when a streaming copy has read up
to its target offsets, and the jobs' command line."""
from __future__ import annotations

import json

import pytest

from consumer_group.spark.jobs import parse_args, reached

TARGET = {"0": 10, "1": 4}


def progress(end_offset) -> dict:
    return {"batchId": 3, "numInputRows": 5, "sources": [{"description": "zkafka", "startOffset": None,
                                                          "endOffset": end_offset}]}


# ------------------------------------------------------------------------------------------------ reached


def test_nothing_is_reached_before_a_micro_batch_with_a_source():
    assert reached(None, TARGET) is False
    assert reached({"batchId": 0}, TARGET) is False
    assert reached({"batchId": 0, "sources": []}, TARGET) is False
    assert reached({"batchId": 0, "sources": None}, TARGET) is False


def test_nothing_is_reached_without_a_target():
    assert reached(progress({"t": {"0": 99}}), None) is False


@pytest.mark.parametrize("as_json", [True, False], ids=["json-string", "dict"])
@pytest.mark.parametrize("offsets, expected", [
    ({"0": 10, "1": 4}, True),   # exactly at the target
    ({"0": 12, "1": 9}, True),   # beyond it
    ({"0": 10, "1": 3}, False),  # one partition behind
    ({"0": 2, "1": 1}, False),   # all behind
    ({"0": 10}, False),          # a partition not read yet
    ({"0": 10, "1": 4, "2": 0}, True),  # a partition the target does not know
])
def test_every_partition_must_be_at_its_target_or_beyond(offsets, expected, as_json):
    end = {"clicks": offsets}
    assert reached(progress(json.dumps(end) if as_json else end), TARGET) is expected


def test_an_offset_given_as_text_counts_as_its_number():
    assert reached(progress({"t": {"0": "10", "1": "4"}}), TARGET) is True
    assert reached(progress({"t": {"0": "9", "1": "4"}}), TARGET) is False


@pytest.mark.parametrize("end", [None, {}, "{}"])
def test_a_source_without_end_offsets_has_reached_nothing(end):
    assert reached(progress(end), TARGET) is False


def test_an_empty_target_is_reached_by_the_first_micro_batch():
    assert reached(progress({"t": {}}), {}) is True
    assert reached(None, {}) is False


# --------------------------------------------------------------------------------------------- parse_args


def test_count_needs_the_brokers_and_the_topic(capsys):
    args = parse_args(["count", "--bootstrap-server", "b:9092", "--topic", "clicks"])
    assert (args.job, args.bootstrap_server, args.topic) == ("count", "b:9092", "clicks")
    for missing in (["count", "--topic", "t"], ["count", "--bootstrap-server", "b:9092"], []):
        with pytest.raises(SystemExit) as info:
            parse_args(missing)
        assert info.value.code == 2
    capsys.readouterr()


def test_copy_into_files_with_its_defaults():
    args = parse_args(["copy", "--bootstrap-server", "b:9092", "--topic", "t", "--checkpoint", "/ck",
                       "--output", "/out"])
    assert (args.output, args.output_topic, args.checkpoint) == ("/out", None, "/ck")
    assert (args.trigger, args.interval_s, args.max_offsets_per_trigger) == ("available-now", 1.0, 0)
    assert args.transactional_id_prefix is None


def test_copy_into_a_topic_with_transactions_and_a_processing_time_trigger():
    args = parse_args(["copy", "--bootstrap-server", "b:9092", "--topic", "t", "--checkpoint", "/ck",
                       "--output-topic", "copy", "--transactional-id-prefix", "job", "--trigger", "processing-time",
                       "--interval-s", "0.5", "--max-offsets-per-trigger", "100"])
    assert (args.output, args.output_topic, args.transactional_id_prefix) == (None, "copy", "job")
    assert (args.trigger, args.interval_s, args.max_offsets_per_trigger) == ("processing-time", 0.5, 100)


@pytest.mark.parametrize("outputs", [[], ["--output", "/out", "--output-topic", "copy"]], ids=["neither", "both"])
def test_copy_needs_exactly_one_output(capsys, outputs):
    with pytest.raises(SystemExit) as info:
        parse_args(["copy", "--bootstrap-server", "b:9092", "--topic", "t", "--checkpoint", "/ck", *outputs])
    assert info.value.code == 2
    assert "exactly one of --output and --output-topic" in capsys.readouterr().err


def test_copy_needs_a_checkpoint_and_a_known_trigger(capsys):
    base = ["copy", "--bootstrap-server", "b:9092", "--topic", "t", "--output", "/o"]
    with pytest.raises(SystemExit):
        parse_args(base)
    assert "--checkpoint" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args([*base, "--checkpoint", "/ck", "--trigger", "once"])
    assert "--trigger" in capsys.readouterr().err
