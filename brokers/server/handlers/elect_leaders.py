"""ElectLeaders (api 43, v0-v2; v2 is flexible; v0 has no election type and means PREFERRED).

As Kafka 2.8's ``KafkaApis.handleElectReplicaLeader`` + ``ReplicaManager.electLeaders``:

- ``topic_partitions`` null means every partition this broker's metadata cache knows; the answer then
  leaves out the partitions that needed no election (ELECTION_NOT_NEEDED). A partition named twice
  counts once.
- The controller's elections run on its event queue (``context.elect_leaders``); a broker that is not
  the active controller answers NOT_CONTROLLER for every partition (clients send ElectLeaders to the
  controller named in Metadata and retry there).
- Per partition: NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION (topic being deleted),
  ELECTION_NOT_NEEDED (84: PREFERRED and the preferred replica already leads; UNCLEAN and the leader
  is live), PREFERRED_LEADER_NOT_AVAILABLE (80: the preferred replica is not live or not in the ISR;
  the partition keeps its leader), ELIGIBLE_LEADERS_NOT_AVAILABLE (83: UNCLEAN found no live replica).
  An election type other than 0/1 is INVALID_REQUEST for every partition.
- Like Kafka's DelayedElectLeader, an elected partition answers NONE once this broker's metadata cache
  shows the new leader; partitions that do not within ``timeout_ms`` answer REQUEST_TIMED_OUT (the
  election itself stands).
"""
from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from brokers.model import NO_LEADER, TopicPartition
from brokers.security.acls import ALTER
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.server.context import ServerContext
from brokers.server.handlers import response, timeout_seconds, wait_for_metadata

PREFERRED, UNCLEAN = 0, 1
Outcome = tuple[int, "str | None", int]


def requested_partitions(context: ServerContext, request: Any) -> list[TopicPartition]:
    """The partitions named (deduplicated), or every partition the metadata cache knows when null."""
    if request.topic_partitions is None:
        return sorted(context.metadata_cache.partitions)
    return sorted({TopicPartition(t.topic, int(p)) for t in request.topic_partitions for p in t.partitions})


async def _outcomes(context: ServerContext, election_type: int, partitions: list[TopicPartition],
                    timeout: float) -> dict[TopicPartition, Outcome]:
    if election_type not in (PREFERRED, UNCLEAN):
        message = f"Unknown election type {election_type} (0 = PREFERRED, 1 = UNCLEAN)"
        return {tp: (int(ErrorCode.INVALID_REQUEST), message, NO_LEADER) for tp in partitions}
    if context.elect_leaders is None:
        return {tp: (int(ErrorCode.NOT_CONTROLLER), None, NO_LEADER) for tp in partitions}
    try:
        return await asyncio.wait_for(context.elect_leaders(election_type, partitions), max(timeout, 0.001))
    except asyncio.TimeoutError:
        return {tp: (int(ErrorCode.REQUEST_TIMED_OUT), None, NO_LEADER) for tp in partitions}


async def _await_metadata(context: ServerContext, outcomes: dict[TopicPartition, Outcome], deadline: float) -> None:
    """Replace each elected partition's outcome by REQUEST_TIMED_OUT unless the metadata cache shows
    its new leader by ``deadline`` (loop time)."""
    cache = context.metadata_cache
    elected = {tp: leader for tp, (code, _, leader) in outcomes.items() if code == ErrorCode.NONE}

    def shown(tp: TopicPartition) -> bool:
        state = cache.partitions.get(tp)
        return state is not None and state.leader == elected[tp]

    remaining = deadline - asyncio.get_running_loop().time()
    await wait_for_metadata(lambda: all(shown(tp) for tp in elected), max(remaining, 0.0))
    for tp in elected:
        if not shown(tp):
            outcomes[tp] = (int(ErrorCode.REQUEST_TIMED_OUT), None, NO_LEADER)


async def handle_elect_leaders(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    election_type = int(getattr(request, "election_type", PREFERRED))  # v0 has no election type
    if not context.authorized_on_cluster(ALTER):  # Kafka: Alter on the cluster, for every partition
        denied: dict[str, list[dict]] = defaultdict(list)
        for tp in requested_partitions(context, request):
            denied[tp.topic].append({"partition_id": tp.partition, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                     "error_message": "Cluster authorization failed."})
        return response(header,
                           error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                           replica_election_results=[{"topic": t, "partition_result": e} for t, e in denied.items()])
    timeout = timeout_seconds(request.timeout)
    deadline = asyncio.get_running_loop().time() + timeout
    partitions = requested_partitions(context, request)
    outcomes = dict(await _outcomes(context, election_type, partitions, timeout))
    await _await_metadata(context, outcomes, deadline)
    if request.topic_partitions is None:  # "all partitions": only those elected or failed
        outcomes = {tp: o for tp, o in outcomes.items() if o[0] != ErrorCode.ELECTION_NOT_NEEDED}
    by_topic: dict[str, list[dict]] = defaultdict(list)
    for tp, (code, message, _) in sorted(outcomes.items()):
        by_topic[tp.topic].append({"partition_id": tp.partition, "error_code": code, "error_message": message})
    results = [{"topic": topic, "partition_result": entries} for topic, entries in by_topic.items()]
    return response(header,
                       error_code=ErrorCode.NONE, replica_election_results=results)
