"""Acks=all produces parked until the high watermark passes their last offset (Kafka's DelayedProduce).

One ``ProducePurgatory`` per led partition. The waiters are kept in required-offset order, so completing
them on a high-watermark advance pops from the front only (O(completed), never a scan of everything
parked). A leader appends in offset order, so a new produce almost always parks at the back. The
exception is a retried idempotent batch (a duplicate): it is answered with its original offsets and
waits for those, below produces parked after the original. It is inserted in order; that costs
O(parked), and happens only on retries.

Each waiter is a future resolved with the ErrorCode the producer must see: NONE or
NOT_ENOUGH_REPLICAS_AFTER_APPEND once the HW reaches it (decided by the caller, who knows the ISR),
NOT_LEADER_OR_FOLLOWER when leadership is lost. The request's own timeout (REQUEST_TIMED_OUT) is the
waiting handler's business: it stops waiting; the future is then dropped at the next completion.
"""
from __future__ import annotations

import asyncio
from bisect import bisect_right
from collections import deque
from operator import itemgetter

from brokers.protocol.errors import ErrorCode


class ProducePurgatory:
    __slots__ = ("_waiters",)

    def __init__(self) -> None:
        self._waiters: deque[tuple[int, asyncio.Future]] = deque()

    def __len__(self) -> int:
        return len(self._waiters)

    def park(self, required_offset: int) -> asyncio.Future:
        """A future resolved when the HW reaches ``required_offset`` (= last appended offset + 1)."""
        future = asyncio.get_running_loop().create_future()
        waiters = self._waiters
        if waiters and required_offset < waiters[-1][0]:  # a duplicate: its original's offsets
            waiters.insert(bisect_right(waiters, required_offset, key=itemgetter(0)), (required_offset, future))
        else:
            waiters.append((required_offset, future))
        return future

    def complete(self, high_watermark: int, outcome: ErrorCode) -> int:
        """Resolve every waiter whose required offset is <= ``high_watermark`` with ``outcome``."""
        done = 0
        waiters = self._waiters
        while waiters and waiters[0][0] <= high_watermark:
            future = waiters.popleft()[1]
            if not future.done():
                future.set_result(outcome)
                done += 1
        return done

    def fail_all(self, outcome: ErrorCode) -> int:
        """Resolve everything parked with ``outcome`` (leadership moved away, partition stopped)."""
        done = 0
        while self._waiters:
            future = self._waiters.popleft()[1]
            if not future.done():
                future.set_result(outcome)
                done += 1
        return done


class FetchWatchers:
    """Futures of parked Fetches waiting for a partition to change (Kafka's DelayedFetch watch list).

    ``wake`` resolves every watcher at once and starts a new list: a parked Fetch re-reads and, if it
    still has nothing to answer, parks again with a new future. One future may watch several
    partitions (a Fetch parks on all it asked for); whichever wakes first resolves it, the others skip
    it as done. Futures done elsewhere (the Fetch's own timeout, a cancelled request) are pruned when
    the list has doubled since the last prune, so an idle partition long-polled for hours stays small.
    """

    __slots__ = ("_futures", "_prune_at")
    PRUNE_MIN = 64

    def __init__(self) -> None:
        self._futures: list[asyncio.Future] = []
        self._prune_at = self.PRUNE_MIN

    def __len__(self) -> int:
        return len(self._futures)

    def watch(self, future: asyncio.Future) -> None:
        futures = self._futures
        futures.append(future)
        if len(futures) >= self._prune_at:
            futures[:] = [f for f in futures if not f.done()]
            self._prune_at = max(self.PRUNE_MIN, 2 * len(futures))

    def wake(self) -> int:
        """Resolve every watcher not yet done; returns how many were."""
        futures, self._futures = self._futures, []
        self._prune_at = self.PRUNE_MIN
        woken = 0
        for future in futures:
            if not future.done():
                future.set_result(None)
                woken += 1
        return woken
