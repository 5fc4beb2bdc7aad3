"""One request recipe per API, for every version of the window: the request's fields and what its answer
must say: the error code expected (NONE for a valid request, a specific one where the recipe is
deliberately an error) and, where a version adds a field, that field's meaning. Each recipe spells out
its version differences. A recipe first makes the state it needs through ``WindowBroker`` (topics,
offsets, members, ACLs) at versions clients have long sent, so its own request is the one new thing.

``records``: Produce, Fetch, the offsets, Metadata, FindCoordinator, InitProducerId, ApiVersions;
``groups``: the group APIs and SASL; ``admin``: topics, partitions, configs, ACLs, SCRAM credentials;
``transactions``: the transaction APIs, from the producer's, the partition leader's and the operator's side."""
from __future__ import annotations

from tests.integration.api_recipes import admin, groups, records, transactions
from tests.integration.api_recipes.base import Recipe, RecipeMaker

RECIPES: dict = {**records.RECIPES, **groups.RECIPES, **admin.RECIPES, **transactions.RECIPES}

__all__ = ["RECIPES", "Recipe", "RecipeMaker"]
