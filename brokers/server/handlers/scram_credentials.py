"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), v0 (flexible), KIP-554, as
Kafka 2.8's ZooKeeper mode serves them: credentials are the ``SCRAM-SHA-*`` entries of
``/config/users/<user>`` (``brokers.protocol.scram`` format), each change written with a
``/config/changes`` notification. Salts and keys never leave the broker: Describe answers the
mechanism and iteration count only.

Mechanism bytes are Kafka's ScramMechanism types: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512. Per-user errors
(Kafka's messages): UNSUPPORTED_SASL_MECHANISM for another byte, UNACCEPTABLE_CREDENTIAL for iterations
outside 4096-16384 or an empty name/salt/password, DUPLICATE_RESOURCE for a (user, mechanism) altered
twice (or a user described twice), RESOURCE_NOT_FOUND for deleting or describing what does not exist.
A user with any error gets none of its changes applied. ``plan_alterations`` is the pure decision.
"""
from __future__ import annotations

from typing import Any

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.protocol.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramError,
    credential_from_salted_password,
)
from brokers.security.acls import ALTER, DESCRIBE
from brokers.server.context import ServerContext, UserConfigs

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
Result = tuple[int, str | None]


def _check_upsertion(upsertion: Any) -> Result | None:
    if upsertion.mechanism not in MECHANISMS:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if not upsertion.name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if upsertion.iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not upsertion.salt or not upsertion.salted_password:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Credential must have a salt and a salted password"
    return None


def plan_alterations(deletions: list[Any], upsertions: list[Any],
                     current: dict[str, dict[str, str]]) -> tuple[dict[str, Result], dict[str, dict[str, str]]]:
    """(result per user in request order, the new config of each user to write)."""
    results: dict[str, Result] = {}
    seen: set[tuple[str, int]] = set()
    for change in (*deletions, *upsertions):
        results.setdefault(change.name, (ErrorCode.NONE, None))
        if (change.name, change.mechanism) in seen:
            results[change.name] = (ErrorCode.DUPLICATE_RESOURCE,
                                    "A user credential cannot be altered twice in the same request")
        seen.add((change.name, change.mechanism))
    for deletion in deletions:
        mechanism = MECHANISMS.get(deletion.mechanism)
        if results[deletion.name][0] != ErrorCode.NONE:
            continue
        if mechanism is None:
            results[deletion.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif mechanism not in current.get(deletion.name, {}):
            results[deletion.name] = (ErrorCode.RESOURCE_NOT_FOUND,
                                      "Attempt to delete a user credential that does not exist")
    for upsertion in upsertions:
        if results[upsertion.name][0] == ErrorCode.NONE and (problem := _check_upsertion(upsertion)):
            results[upsertion.name] = problem
    configs: dict[str, dict[str, str]] = {}
    for deletion in deletions:
        if results[deletion.name][0] == ErrorCode.NONE:
            configs.setdefault(deletion.name, dict(current.get(deletion.name, {}))).pop(MECHANISMS[deletion.mechanism])
    for u in upsertions:
        if results[u.name][0] == ErrorCode.NONE:
            mechanism = MECHANISMS[u.mechanism]
            credential = credential_from_salted_password(mechanism, u.salt, u.salted_password, u.iterations)
            configs.setdefault(u.name, dict(current.get(u.name, {})))[mechanism] = credential.format()
    return results, configs


def describe(user: str, config: dict[str, str]) -> tuple[Result, list[tuple[int, int]]]:
    """(error, [(mechanism byte, iterations)]) of one user's stored credentials."""
    infos = []
    for byte, mechanism in MECHANISMS.items():
        if mechanism in config:
            try:
                infos.append((byte, ScramCredential.parse(config[mechanism]).iterations))
            except ScramError:
                continue
    if not infos:
        return (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist"), []
    return (ErrorCode.NONE, None), infos


async def handle_describe_user_scram_credentials(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    users: UserConfigs = context.user_configs
    cls = codec.response_class(header.api_key, header.api_version)
    if not context.authorized_on_cluster(DESCRIBE):
        return codec.build(cls, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    names = [u.name for u in request.users or ()]
    results = []
    if not names:  # all users with credentials
        for name in sorted(await users.user_names()):
            (code, _), infos = describe(name, await users.user_config(name))
            if code == ErrorCode.NONE:
                results.append(dict(user=name, error_code=code, credential_infos=_infos(infos)))
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            results.append(dict(user=name, error_code=ErrorCode.DUPLICATE_RESOURCE, error_message=(
                "Cannot describe SCRAM credentials for the same user twice in a single request")))
            continue
        (code, message), infos = describe(name, await users.user_config(name))
        results.append(dict(user=name, error_code=code, error_message=message, credential_infos=_infos(infos)))
    return codec.build(cls, error_code=ErrorCode.NONE, results=results)


def _infos(infos: list[tuple[int, int]]) -> list[dict[str, int]]:
    return [dict(mechanism=byte, iterations=iterations) for byte, iterations in infos]


async def handle_alter_user_scram_credentials(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    users: UserConfigs = context.user_configs
    cls = codec.response_class(header.api_key, header.api_version)
    if not context.authorized_on_cluster(ALTER):
        denied = dict.fromkeys(change.name for change in (*request.deletions, *request.upsertions))
        return codec.build(cls, results=[dict(user=name, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                              error_message=None) for name in denied])
    names = {change.name for change in (*request.deletions, *request.upsertions) if change.name}
    current = {name: await users.user_config(name) for name in names}
    results, configs = plan_alterations(list(request.deletions), list(request.upsertions), current)
    for name, config in configs.items():
        await users.set_user_config(name, config)
    return codec.build(cls, results=[dict(user=name, error_code=code, error_message=message)
                                     for name, (code, message) in results.items()])
