"""What a recipe is: the request's fields (a superset; ``codec.build`` keeps what the version has), the
check of its answer, and the connection to send it on."""
from __future__ import annotations

import uuid
from typing import Any, Callable, NamedTuple

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from tests.integration.raw_client import RawConnection
from tests.integration.window_broker import WindowBroker

NO_UUID = uuid.UUID(int=0)


class Recipe(NamedTuple):
    fields: dict[str, Any]
    check: Callable[[Any], None]
    connection: RawConnection | None = None  # None: a new PLAINTEXT connection


RecipeMaker = Callable[[WindowBroker, int], Recipe]


def registry(recipes: dict[ApiKey, RecipeMaker]) -> Callable[[ApiKey], Callable[[RecipeMaker], RecipeMaker]]:
    """A decorator that files a recipe maker under its API in ``recipes``."""
    def recipe(key: ApiKey) -> Callable[[RecipeMaker], RecipeMaker]:
        def register(make: RecipeMaker) -> RecipeMaker:
            assert key not in recipes, f"two recipes for {key.api_name}"
            recipes[key] = make
            return make
        return register
    return recipe


def only(items):
    (item,) = items
    return item


def expect(code: int, expected: ErrorCode, what: Any) -> None:
    assert code == expected, f"{ErrorCode(int(code)).name} (expected {expected.name}): {what}"
