"""Pipelined ZooKeeper calls: many requests in flight on the one session, collected in one thread hop.

ZooKeeper answers a session's requests in the order they were sent, so a batch costs about one round
trip per window instead of one per znode (Kafka 1.1's async ``ZooKeeperClient.handleRequests``,
KAFKA-5642). kazoo's ``*_async`` calls return an ``IAsyncResult`` at once; :func:`run_window` starts up to
``zookeeper.max.in.flight.requests`` of them, then waits for the oldest before starting the next, all on
one worker thread, and gives back each request's value or exception in input order.

:class:`BatchCalls` is the ``ZkGateway`` side: per-item outcomes in our types. Reads return None for an
absent znode (as ``get_or_none``) and are retried as a whole on a connection loss, like the single reads;
writes return, per item, the result or the ``ZkError`` it met (never retried blindly). Fenced multis keep
the fencing of ``fenced_multi``: each group is its own multi with the ``/controller_epoch`` version check
first, so a deposed controller changes nothing and the caller gets ControllerMovedError.
"""
from __future__ import annotations

import asyncio
import collections
import time
from typing import Any, Callable, Sequence

from brokers.zk.errors import ConnectionLossError, ControllerMovedError, MultiOpError, NoNodeError, ZkError
from brokers.zk.paths import ControllerEpochZNode

Start = Callable[[], Any]  # starts one kazoo request, returns its IAsyncResult


def run_window(starts: Sequence[Start], window: int) -> list[Any]:
    """Run ``starts`` with at most ``window`` in flight; each outcome is the value or the exception raised,
    in input order. Blocks (call it off the event loop)."""
    outcomes: list[Any] = []
    in_flight: collections.deque = collections.deque()
    for start in starts:
        if len(in_flight) >= window:
            outcomes.append(_outcome(in_flight.popleft()))
        try:
            in_flight.append(start())
        except Exception as exc:  # noqa: BLE001 - refused before it was sent: this item's outcome
            in_flight.append(_Failed(exc))
    while in_flight:
        outcomes.append(_outcome(in_flight.popleft()))
    return outcomes


class _Failed:
    def __init__(self, exc: BaseException):
        self.exc = exc

    def get(self) -> Any:
        raise self.exc


def _outcome(result: Any) -> Any:
    try:
        return result.get()
    except Exception as exc:  # noqa: BLE001 - the caller sorts outcomes
        return exc


FENCED_GROUPS_PER_MULTI = 100  # controller write groups per ZooKeeper multi (a partition state is ~150 bytes)


class BatchCalls:
    """The batch calls of ``ZkGateway`` (mixed into it): what it must provide is listed below."""

    _client: Any
    latency: Any
    session_timeout_ms: int
    max_in_flight_requests: int

    def _translate(self, exc: BaseException) -> ZkError:
        raise NotImplementedError

    def _stat_of(self, stat: Any) -> Any:
        raise NotImplementedError

    def _hop(self, callback: Any, path: str) -> Any:
        raise NotImplementedError

    def _acl(self, path: str) -> list | None:
        raise NotImplementedError

    def _transaction(self, ops: list) -> Any:
        raise NotImplementedError

    def _multi_results(self, results: list) -> list[Any] | MultiOpError:
        raise NotImplementedError

    async def _pipeline(self, starts: Sequence[Start]) -> list[Any]:
        """Outcomes of ``starts`` in our types: a value, or the ``ZkError`` the request met."""
        if not starts:
            return []
        began = time.perf_counter()
        try:
            outcomes = await asyncio.to_thread(run_window, starts, self.max_in_flight_requests)
        finally:
            self.latency.observe(time.perf_counter() - began)
        return [self._translate(o) if isinstance(o, Exception) else o for o in outcomes]

    async def _read_many(self, starts: Sequence[Start]) -> list[Any]:
        """A batch of reads: None for an absent znode; a connection loss retries the batch until the
        session timeout (reading twice is harmless), any other error raises."""
        loop = asyncio.get_running_loop()
        deadline, delay = loop.time() + self.session_timeout_ms / 1000, 0.05
        while True:
            outcomes = await self._pipeline(starts)
            lost = next((o for o in outcomes if isinstance(o, ConnectionLossError)), None)
            if lost is None:
                break
            if loop.time() + delay > deadline:
                raise lost
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
        failed = next((o for o in outcomes if isinstance(o, ZkError) and not isinstance(o, NoNodeError)), None)
        if failed is not None:
            raise failed
        return [None if isinstance(o, NoNodeError) else o for o in outcomes]

    # -- reads ---------------------------------------------------------------------------------
    async def get_many(self, paths: Sequence[str], watches: Sequence[Any] | None = None) -> list[Any]:
        """``(data, ZnodeStat)`` per path, None where the znode does not exist; ``watches[i]`` (optional)
        is a data watch on ``paths[i]`` (set only where the znode exists)."""
        hops = [self._hop(w, p) for w, p in zip(watches, paths)] if watches else [None] * len(paths)
        client = self._client
        outcomes = await self._read_many([lambda p=p, h=h: client.get_async(p, watch=h) for p, h in zip(paths, hops)])
        return [None if o is None else (o[0], self._stat_of(o[1])) for o in outcomes]

    async def get_children_many(self, paths: Sequence[str]) -> list[list[str] | None]:
        """The sorted children of each path, None where the znode does not exist."""
        client = self._client
        outcomes = await self._read_many([lambda p=p: client.get_children_async(p) for p in paths])
        return [None if o is None else sorted(o) for o in outcomes]

    async def exists_many(self, paths: Sequence[str]) -> list[Any]:
        """The ZnodeStat of each path, None where the znode does not exist."""
        client = self._client
        outcomes = await self._read_many([lambda p=p: client.exists_async(p) for p in paths])
        return [None if o is None else self._stat_of(o) for o in outcomes]

    # -- writes: per-item outcomes -------------------------------------------------------------
    async def create_many(self, ops: Sequence[Any]) -> list[str | ZkError]:
        """Create each ``CreateOp``; per op the created path or the ZkError it met (NodeExistsError...)."""
        client = self._client
        return await self._pipeline([
            lambda op=op: client.create_async(op.path, op.data, acl=self._acl(op.path), ephemeral=op.ephemeral,
                                              sequence=op.sequential) for op in ops])

    async def set_many(self, ops: Sequence[Any]) -> list[Any]:
        """Each ``SetDataOp`` (conditional on its version, -1 for any); per op the new ZnodeStat or the
        ZkError it met (BadVersionError, NoNodeError...)."""
        client = self._client
        outcomes = await self._pipeline([lambda op=op: client.set_async(op.path, op.data, version=op.version)
                                         for op in ops])
        return [o if isinstance(o, ZkError) else self._stat_of(o) for o in outcomes]

    async def multi_many(self, groups: Sequence[list]) -> list[list[Any] | MultiOpError | ZkError]:
        """Each group of ops as its own multi (atomic on its own), pipelined; per group its results (as
        ``multi``) or the MultiOpError naming its first failing op, or the ZkError the request met."""
        outcomes = await self._pipeline([lambda ops=ops: self._transaction(ops).commit_async() for ops in groups])
        return [o if isinstance(o, ZkError) else self._multi_results(o) for o in outcomes]

    async def fenced_multi_many(self, epoch_zk_version: int, groups: Sequence[list]) -> list[list[Any] | ZkError]:
        """Controller writes: each group is a ``fenced_multi`` (the ``/controller_epoch`` version check
        first), pipelined. Raises ControllerMovedError if any group failed its check (another controller
        was elected: nothing of that group was applied, and the caller resigns). Per group: its results
        without the check's, or the MultiOpError (index within the group) or ZkError it met.

        Up to ``FENCED_GROUPS_PER_MULTI`` groups share one multi: one ZooKeeper transaction (one write to
        its log) instead of one per group, which is what bounds a controller writing thousands of
        partition states. A shared multi that fails on a group's op applied nothing: its groups go again
        one multi each, so every group's outcome is its own, as if it had been alone."""
        chunks = [list(groups[i:i + FENCED_GROUPS_PER_MULTI]) for i in range(0, len(groups), FENCED_GROUPS_PER_MULTI)]
        merged = await self._fenced_multis(epoch_zk_version, [[op for group in chunk for op in group] for chunk in chunks])
        alone = [group for chunk, outcome in zip(chunks, merged) if len(chunk) > 1 and isinstance(outcome, MultiOpError)
                 for group in chunk]
        retried = iter(await self._fenced_multis(epoch_zk_version, alone))
        out: list[list[Any] | ZkError] = []
        for chunk, outcome in zip(chunks, merged):
            if len(chunk) > 1 and isinstance(outcome, MultiOpError):
                out.extend(next(retried) for _ in chunk)
            elif isinstance(outcome, ZkError):
                out.extend(outcome for _ in chunk)
            else:
                start = 0
                for group in chunk:
                    out.append(outcome[start:start + len(group)])
                    start += len(group)
        return out

    async def _fenced_multis(self, epoch_zk_version: int, multis: Sequence[list]) -> list[list[Any] | ZkError]:
        check = self._check_op(ControllerEpochZNode.PATH, epoch_zk_version)
        outcomes = await self.multi_many([[check, *ops] for ops in multis])
        fenced: list[list[Any] | ZkError] = []
        for outcome in outcomes:
            if isinstance(outcome, MultiOpError):
                if outcome.index == 0:
                    raise ControllerMovedError(f"/controller_epoch is no longer at version {epoch_zk_version}: "
                                               "another controller was elected") from outcome
                fenced.append(MultiOpError(outcome.index - 1, outcome.cause))
            else:
                fenced.append(outcome if isinstance(outcome, ZkError) else outcome[1:])
        return fenced

    def _check_op(self, path: str, version: int) -> Any:
        raise NotImplementedError
