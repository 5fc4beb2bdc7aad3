"""The controller follows topic config changes: unclean.leader.election.enable is read per topic from
``ControllerContext.topic_configs``, which a TopicConfigChange event updates."""
from __future__ import annotations

import asyncio

from brokers.model import TopicPartition
from coordinator import events as ev
from coordinator.controller import ControllerConfig, KafkaController


def active_controller() -> KafkaController:
    controller = KafkaController(1, kzc=None, config=ControllerConfig(unclean_leader_election=False))
    controller.active_controller_id = 1
    controller.context.epoch_zk_version = 0
    controller.context.assignments[TopicPartition("t", 0)] = [1, 2]
    return controller


def test_a_topic_config_change_switches_unclean_election_for_that_topic():
    controller = active_controller()
    assert not controller.unclean_allowed("t")
    asyncio.run(controller._dispatch(ev.TopicConfigChange("t", {"unclean.leader.election.enable": "true"})))
    assert controller.unclean_allowed("t") and not controller.unclean_allowed("u")
    asyncio.run(controller._dispatch(ev.TopicConfigChange("t", {})))
    assert not controller.unclean_allowed("t")


def test_changes_for_unknown_topics_or_while_inactive_are_ignored():
    controller = active_controller()
    asyncio.run(controller._dispatch(ev.TopicConfigChange("ghost", {"unclean.leader.election.enable": "true"})))
    assert "ghost" not in controller.context.topic_configs
    controller.active_controller_id = 2
    asyncio.run(controller._dispatch(ev.TopicConfigChange("t", {"unclean.leader.election.enable": "true"})))
    assert not controller.unclean_allowed("t")


def test_on_topic_config_changed_enqueues_an_event():
    controller = active_controller()
    queued = []
    controller.events.put = queued.append
    controller.on_topic_config_changed("t", {"retention.ms": "5"})
    assert queued == [ev.TopicConfigChange("t", {"retention.ms": "5"})] and queued[0].config == {"retention.ms": "5"}
