"""The import-linter contracts of pyproject.toml can fail: each one is checked against the project's real
import graph with one offending import added, and must come out broken (a contract that cannot fail is not a
contract). The unmodified graph must keep every one of them (``make lint`` says the same, with reports).
"""
from __future__ import annotations

import copy
import functools
import pkgutil
from pathlib import Path

import grimp
import pytest
from importlinter import configuration
from importlinter.application import use_cases
from importlinter.domain.contract import registry

ROOT = Path(__file__).resolve().parents[2]

# contract id -> (importer, imported): one import that the contract forbids.
VIOLATIONS = {
    "kernel-layers": ("brokers.protocol.codec", "brokers.server.apis"),
    "below-the-listener": ("brokers.security.acls", "brokers.server.context"),
    "protocol-sans-io": ("brokers.protocol.framing", "asyncio"),
    "storage-plain-files": ("brokers.storage.log", "kazoo"),
    "quotas-pure": ("brokers.quotas.manager", "asyncio"),
    "kazoo": ("brokers.security.authorizer", "kazoo"),
    "aiohttp": ("coordinator.topic_changes", "aiohttp"),
    "prometheus": ("brokers.server.apis", "prometheus_client"),
    "uvloop": ("brokers.app.broker_server", "uvloop"),
    "docker": ("zkafka.testing.cluster", "docker"),
    "msgpack": ("brokers.server.apis", "msgpack"),
    "only-app-wires": ("brokers.admin.zk_admin", "coordinator.controller"),
    "pyspark": ("scripts.cli", "pyspark"),
    "confluent-kafka": ("coordinator.controller", "confluent_kafka"),
    "coordinators-independent": ("coordinator.controller", "consumer_group.coordinator.coordinator"),
    "coordinators-above-the-log": ("consumer_group.coordinator.coordinator", "brokers.replication.partition"),
    "txn-coordinator-own-ports": ("transactions.coordinator.ports", "brokers.server.context"),
    "soak-checker-pure": ("scripts.soak.checker.core", "confluent_kafka"),
    "product-never-imports-scripts": ("consumer_group.spark.source", "scripts.local.cluster"),
    "scripts-rooms": ("scripts.tools.kafka_acls", "scripts.bench.stats"),
    "public-api-stands-alone": ("zkafka.testing.cluster", "scripts.local.cluster"),
    "tools-independent": ("scripts.tools.kafka_acls", "scripts.tools.kafka_leader_election"),
    "configs-syntax": ("scripts.tools.kafka_configs.syntax", "scripts.tools.kafka_configs.command"),
    "mirror-pure": ("scripts.tools.kafka_mirror_maker.offset_sync", "confluent_kafka"),
    "no-cycles": ("brokers.protocol.record_batch", "brokers.protocol.record"),
    "config-leaf": ("brokers.config", "brokers.storage.log_config"),
    "app-steps": ("brokers.app.registration", "brokers.app.control_plane"),
    "controller-layers": ("coordinator.topic_deletion", "coordinator.controller"),
    "authorizer-behind-its-port": ("brokers.server.handlers.fetch", "brokers.security.authorizer"),
    "group-handlers-own-port": ("consumer_group.coordinator.handlers", "brokers.server.context"),
    "zk-client-parts": ("brokers.zk.client_topics", "brokers.zk.client_configs"),
    "config-schema-below-broker-config": ("brokers.config.schema", "brokers.config.broker_config"),
    "transactions-tool-pure": ("scripts.tools.kafka_transactions.tables", "scripts.tools.kafka_transactions.admin"),
    "consumer-groups-pure": ("scripts.tools.kafka_consumer_groups.tables", "confluent_kafka"),
    "verifiable-tools-pure": ("scripts.tools.verifiable.events", "confluent_kafka"),
    "perf-tools-pure": ("scripts.tools.perf_test.producer_stats", "confluent_kafka"),
    "consumer-groups-actions": ("scripts.tools.kafka_consumer_groups.delete", "scripts.tools.kafka_consumer_groups.describe"),
    "spark-options": ("consumer_group.spark.options", "consumer_group.spark.source_options"),
    "spark-options-pure": ("consumer_group.spark.source_options", "pyspark"),
}


@functools.cache
def _options():
    configuration.configure()  # what the lint-imports command does first: the readers of its config files
    return use_cases.read_user_options(str(ROOT / "pyproject.toml"))


@functools.cache
def _graph() -> grimp.ImportGraph:
    options = _options()  # the graph lint-imports builds, with the same options
    return grimp.build_graph(*options.session_options["root_packages"],
                             include_external_packages=bool(use_cases._get_include_external_packages(options)),
                             exclude_type_checking_imports=use_cases._get_exclude_type_checking_imports(options),
                             cache_dir=None)


def _contracts():
    use_cases._register_built_in_contract_types()
    options = _options()
    return {c["id"]: registry.get_contract_class(c["type"])(name=c["name"], session_options=options.session_options,
                                                             contract_options=c)
            for c in options.contracts_options}


def test_every_contract_has_a_violation_to_show_it_breaks():
    assert set(_contracts()) == set(VIOLATIONS)


@pytest.mark.parametrize("contract_id", sorted(VIOLATIONS))
def test_the_contract_is_kept_by_the_tree_and_broken_by_one_offending_import(contract_id):
    contract = _contracts()[contract_id]
    assert contract.check(copy.deepcopy(_graph()), verbose=False).kept, f"{contract.name}: broken by the tree itself"
    importer, imported = VIOLATIONS[contract_id]
    graph = copy.deepcopy(_graph())
    assert importer in graph.modules, importer
    graph.add_import(importer=importer, imported=imported, line_number=1, line_contents=f"import {imported}")
    assert not contract.check(graph, verbose=False).kept, f"{contract.name}: kept despite {importer} -> {imported}"


def test_only_app_wires_lists_every_other_part_of_brokers():
    """A package added to brokers later is held to "only brokers.app wires coordinator" from its first commit."""
    import brokers
    listed = set(next(c for c in _options().contracts_options if c["id"] == "only-app-wires")["source_modules"])
    parts = {f"brokers.{m.name}" for m in pkgutil.iter_modules(brokers.__path__)}
    assert parts - listed == {"brokers.app", "brokers.__main__"}
