"""ISR maintenance, the high watermark, acks=all and follower truncation, as pure decisions.

Reference: kafka-zk-classic.md §3.3-§3.6 and §7 pitfalls 2, 3, 4 and 9. Everything here is a function of
its arguments: no I/O, no event loop, no clock (time is always a parameter, in milliseconds). The
Partition that owns a replica applies the decisions (writes the ISR to ZooKeeper, truncates its Log,
completes parked produces).

Vocabulary is Kafka's:

- LEO: a replica's log end offset (the next offset it would write). On the leader, a follower's LEO is
  the ``fetch_offset`` of its latest Fetch; ``UNKNOWN_OFFSET`` (-1) until the first one.
- HW: high watermark, the first offset not known to be on every in-sync replica; consumers read below it.
- ISR: in-sync replicas, always including the leader and never empty.
- lastCaughtUpTimeMs: the last time a follower was known to have everything the leader had.
- Leader epoch entries: a replica's leader-epoch cache as plain ``(epoch, start_offset)`` pairs, strictly
  increasing in both (brokers.storage.leader_epoch_cache.LeaderEpochCache.entries, as tuples).
"""
from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from brokers.protocol.errors import ErrorCode
from brokers.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET

UNKNOWN_OFFSET = -1
"""A follower LEO the leader has not learned yet (Kafka's Log.UnknownOffset)."""

BEFORE_APPEND: Literal["before_append"] = "before_append"
AFTER_APPEND: Literal["after_append"] = "after_append"


# --------------------------------------------------------------------------------------------------
# Follower bookkeeping on the leader (§3.3)


@dataclass(frozen=True, slots=True)
class FollowerState:
    """What the leader knows about one follower (Kafka's ``Replica`` on the leader side).

    Defaults are Kafka's initial values: LEO unknown, every time and the previous-fetch leader LEO 0.
    """

    replica_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = 0
    last_fetch_time_ms: int = 0


def update_follower_fetch(state: FollowerState, fetch_offset: int, fetch_time_ms: int,
                          leader_log_end_offset: int) -> FollowerState:
    """Record a follower Fetch at ``fetch_offset`` (§3.3, Kafka's Replica.updateFetchState).

    - The follower's LEO becomes ``fetch_offset`` (even if lower than before: it truncated).
    - If ``fetch_offset`` >= the leader's LEO at this fetch, the follower is caught up now:
      lastCaughtUpTimeMs = ``fetch_time_ms``.
    - Else if ``fetch_offset`` >= the leader's LEO as of the *previous* fetch, the follower was caught up
      at the previous fetch: lastCaughtUpTimeMs = the previous fetch time.
    - lastCaughtUpTimeMs never moves backwards (Kafka takes the max).
    - ``leader_log_end_offset`` and ``fetch_time_ms`` are remembered as the "previous fetch" for next time.
    """
    caught_up = state.last_caught_up_time_ms
    if fetch_offset >= leader_log_end_offset:
        caught_up = max(caught_up, fetch_time_ms)
    elif fetch_offset >= state.last_fetch_leader_log_end_offset:
        caught_up = max(caught_up, state.last_fetch_time_ms)
    # positional, not dataclasses.replace: this runs for every session partition of every follower Fetch
    return FollowerState(state.replica_id, fetch_offset, caught_up, leader_log_end_offset, fetch_time_ms)


def caught_up_while_quiet(state: FollowerState, fetch_time_ms: int) -> FollowerState:
    """The follower fetched again at ``fetch_time_ms`` from the offset it had, while the leader's log end
    was that offset: what :func:`update_follower_fetch` would record for that fetch, told afterwards.

    A fetch session skips a partition that has not changed since its follower reached the log end
    (``brokers.replication.fetch_session``: a quiet partition). When the partition changes, the leader
    records the skipped fetches with this before anything compares times, so the follower is not out of
    sync for the fetches it was not asked about. A time not after the last recorded fetch, or a follower
    that was not at the leader's log end at its last recorded fetch, changes nothing.
    """
    if fetch_time_ms <= state.last_fetch_time_ms or state.log_end_offset != state.last_fetch_leader_log_end_offset:
        return state
    offset = state.log_end_offset
    return FollowerState(state.replica_id, offset, max(state.last_caught_up_time_ms, fetch_time_ms), offset,
                         fetch_time_ms)


def follower_state_on_become_leader(replica_id: int, in_isr: bool, leader_log_end_offset: int,
                                    now_ms: int) -> FollowerState:
    """A follower's state when this broker becomes leader (§3.7 become-leader steps).

    The follower's LEO is unknown until it fetches; a follower in the ISR is treated as caught up now
    (so it is not evicted before it had a chance to fetch), any other at time 0. The previous-fetch
    point is (leader LEO = the new epoch's start offset, now).
    """
    return FollowerState(replica_id, UNKNOWN_OFFSET, now_ms if in_isr else 0, leader_log_end_offset, now_ms)


# --------------------------------------------------------------------------------------------------
# ISR shrink and expand (§3.3, §7 pitfalls 3, 4, 9)


def is_follower_out_of_sync(state: FollowerState | None, leader_log_end_offset: int, now_ms: int,
                            replica_lag_time_max_ms: int) -> bool:
    """A follower is out of sync when its LEO != the leader's LEO **and**
    ``now - lastCaughtUpTimeMs > replica.lag.time.max.ms``.

    Time-only lag (KAFKA-1546: no message-count lag), and a follower whose LEO equals the leader's is
    never out of sync however long ago it last fetched (KAFKA-7152: idle partitions must not flap).
    A follower the leader has no state for is out of sync (Kafka: unknown replica -> out of sync).
    """
    if state is None:
        return True
    return (state.log_end_offset != leader_log_end_offset
            and now_ms - state.last_caught_up_time_ms > replica_lag_time_max_ms)


def out_of_sync_replicas(leader_id: int, leader_log_end_offset: int, isr: Iterable[int],
                         followers: Mapping[int, FollowerState], now_ms: int,
                         replica_lag_time_max_ms: int) -> set[int]:
    """ISR members to shrink away (§3.3 shrink): every ISR member except the leader for which
    :func:`is_follower_out_of_sync` holds. The leader is never a candidate.

    While an AlterIsr change is in flight Kafka computes nothing (the caller simply does not call).
    """
    return {replica for replica in isr if replica != leader_id
            and is_follower_out_of_sync(followers.get(replica), leader_log_end_offset, now_ms,
                                        replica_lag_time_max_ms)}


def shrink_isr(leader_id: int, isr: Sequence[int], out_of_sync: Iterable[int]) -> tuple[int, ...]:
    """The ISR without ``out_of_sync``, in the original order.

    Never removes the leader (even if listed) and so never empties the ISR (§7 pitfall 9). Raises
    ValueError if ``leader_id`` is not in ``isr``: a leader is always in its own ISR, so that is a bug
    in the caller, not a state to paper over.
    """
    if leader_id not in isr:
        raise ValueError(f"leader {leader_id} is not in its ISR {tuple(isr)}")
    removed = set(out_of_sync) - {leader_id}
    return tuple(replica for replica in isr if replica not in removed)


def should_expand_isr(follower_log_end_offset: int, high_watermark: int, leader_epoch_start_offset: int) -> bool:
    """A follower not in the ISR joins when its LEO >= the leader's HW **and** >= the start offset of
    the leader's current epoch (KAFKA-7128, §7 pitfall 3: right after a leader change the HW may lag,
    so LEO >= HW alone would admit a follower that lacks the new leader's data).

    Membership (the follower is assigned and not already in the ISR, no AlterIsr in flight) is the
    caller's check. A ``leader_epoch_start_offset`` < 0 (unknown: not leader) admits nobody.
    """
    if leader_epoch_start_offset < 0:
        return False
    return follower_log_end_offset >= high_watermark and follower_log_end_offset >= leader_epoch_start_offset


def expand_isr(isr: Sequence[int], replica_id: int) -> tuple[int, ...]:
    """The ISR with ``replica_id`` appended (unchanged if already a member)."""
    return tuple(isr) if replica_id in isr else (*isr, replica_id)


# --------------------------------------------------------------------------------------------------
# High watermark (§3.4)


def high_watermark(current_hw: int, leader_log_end_offset: int, isr: Iterable[int],
                   followers: Mapping[int, FollowerState], now_ms: int, replica_lag_time_max_ms: int) -> int:
    """The leader's new HW (§3.4, Kafka's Partition.maybeIncrementLeaderHW):

    ``HW = min(leader LEO, LEO of each follower that is in the ISR or caught up within
    replica.lag.time.max.ms)``, where "caught up within" is ``now - lastCaughtUpTimeMs <= lag max``
    (the complement of the shrink rule), and the HW only moves forward: the result is
    ``max(current_hw, that min)``.

    ``followers`` must hold every assigned replica other than the leader (Kafka's remote replicas; see
    :func:`follower_state_on_become_leader`): ISR ids without an entry, i.e. the leader itself, are
    skipped, and a follower whose LEO is still unknown (-1) holds the HW where it is. ``isr`` is the
    *maximal* ISR while an AlterIsr change is in flight. Raises ValueError if
    ``current_hw`` > ``leader_log_end_offset`` (a leader's HW never exceeds its LEO).
    """
    if current_hw > leader_log_end_offset:
        raise ValueError(f"high watermark {current_hw} above the leader's log end offset {leader_log_end_offset}")
    isr = set(isr)
    candidate = leader_log_end_offset
    for replica_id, state in followers.items():
        if replica_id in isr or now_ms - state.last_caught_up_time_ms <= replica_lag_time_max_ms:
            candidate = min(candidate, state.log_end_offset)
    return max(current_hw, candidate)


def follower_high_watermark(leader_high_watermark: int, follower_log_end_offset: int) -> int:
    """A follower's HW after a fetch response: ``min(leader's HW in the response, own LEO)`` (§3.4), so it
    lags the leader's by one fetch round; which is why truncating to it loses data (§7 pitfall 2)."""
    return min(leader_high_watermark, follower_log_end_offset)


# --------------------------------------------------------------------------------------------------
# acks=all and min.insync.replicas (§3.5)


def acks_all_satisfied(required_offset: int, high_watermark: int) -> bool:
    """An acks=all produce whose last record is at ``required_offset - 1`` completes when
    ``HW >= required_offset`` (= last appended offset + 1), i.e. every in-sync replica has it."""
    return high_watermark >= required_offset


def check_min_isr(isr_size: int, min_insync_replicas: int,
                  when: Literal["before_append", "after_append"]) -> ErrorCode | None:
    """The min.insync.replicas check for an acks=all produce (acks 0/1 never call this), §3.5:

    - ``when="before_append"`` with the current ISR size: size < min.insync.replicas ->
      ``NOT_ENOUGH_REPLICAS`` (19) and nothing is written;
    - ``when="after_append"`` with the (maximal) ISR size once the HW has reached the required offset:
      size < min.insync.replicas -> ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` (20); the data *is* written.

    None when the ISR is large enough.
    """
    if when == BEFORE_APPEND:
        error = ErrorCode.NOT_ENOUGH_REPLICAS
    elif when == AFTER_APPEND:
        error = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    else:
        raise ValueError(f"when must be {BEFORE_APPEND!r} or {AFTER_APPEND!r}, not {when!r}")
    return error if isr_size < min_insync_replicas else None


# --------------------------------------------------------------------------------------------------
# Leader epochs and follower truncation (§3.6, KIP-101 / KIP-279)

EpochEntries = Sequence[tuple[int, int]]


def _check_entries(entries: EpochEntries) -> None:
    for (epoch_a, start_a), (epoch_b, start_b) in itertools.pairwise(entries):
        if not (epoch_a < epoch_b and start_a < start_b):
            raise ValueError(f"leader epoch entries must strictly increase in epoch and start offset: {list(entries)}")


def end_offset_for(entries: EpochEntries, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
    """OffsetsForLeaderEpoch over ``(epoch, start_offset)`` entries, exactly as
    LeaderEpochCache.end_offset_for / Kafka's LeaderEpochFileCache.endOffsetFor answer it (§3.6):

    - requested == the latest epoch -> (requested, ``log_end_offset``);
    - otherwise -> (largest epoch <= requested, start offset of the first epoch > requested);
    - requested below every known epoch -> (requested, start offset of the earliest epoch);
    - undefined requested epoch, no entries, or requested above the latest -> (-1, -1).

    Used for the leader's answer and for the follower's own "end offset for that epoch".
    """
    _check_entries(entries)
    if requested_epoch == UNDEFINED_EPOCH or not entries:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    if requested_epoch == entries[-1][0]:
        return requested_epoch, log_end_offset
    epochs = [epoch for epoch, _ in entries]
    higher = bisect.bisect_right(epochs, requested_epoch)
    if higher == len(entries):
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    floor_epoch = entries[higher - 1][0] if higher else requested_epoch
    return floor_epoch, entries[higher][1]


class TruncationDecision(NamedTuple):
    """What a follower does with a leader's (epoch, end offset) answer: a Fetch v12 ``diverging_epoch``
    (KIP-320) or an OffsetsForLeaderEpoch answer (a plain 2-tuple underneath).

    - ``(offset, None)``: truncate to ``offset`` and start fetching there; truncation is complete.
    - ``(offset, epoch)``: KIP-279 intermediate round: truncate to ``offset`` (after which the follower's
      latest epoch is ``epoch``) and ask the leader again with ``epoch`` (the next Fetch's
      ``last_fetched_epoch``).
    - ``(None, None)``: the answer was undefined; fall back to truncating to the follower's own HW
      (the pre-KIP-101 rule, the only thing left to go on).
    """

    offset: int | None
    next_epoch: int | None


def truncation_offset(follower_epoch_entries: EpochEntries, follower_log_end_offset: int,
                      leader_answer_epoch: int, leader_answer_end_offset: int) -> TruncationDecision:
    """Where a follower truncates given the leader's answer ``(leader_answer_epoch,
    leader_answer_end_offset)`` to its OffsetsForLeaderEpoch request (§3.6, Kafka's
    AbstractFetcherThread.getOffsetTruncationState). Return convention: :class:`TruncationDecision`.

    Rules, in order (the follower's "end offset for epoch E" is :func:`end_offset_for` over its own
    entries and LEO):

    1. End offset undefined (-1) -> ``(None, None)``: caller truncates to its HW.
    2. Epoch undefined but end offset defined (an answer from an old protocol version) ->
       ``(min(end offset, LEO), None)``.
    3. The follower has no end offset for the answered epoch (its cache is empty, or the epoch is above
       its latest, which a leader answering the follower's own latest epoch never returns) ->
       ``(min(end offset, LEO), None)``: the leader's offset is the only information.
    4. The follower's own answer for that epoch carries the same epoch (it knows the epoch, or the epoch
       is below all its entries) -> ``(min(answer end offset, own end offset for that epoch, LEO), None)``.
    5. Otherwise the follower does not know the answered epoch (KIP-279): its own answer is for the
       largest epoch F below it, ending where the follower's next epoch starts ->
       ``(min(own end offset, LEO), F)``: truncate there and ask again with F.

    Every returned offset is <= ``follower_log_end_offset``.
    """
    _check_entries(follower_epoch_entries)
    if leader_answer_end_offset == UNDEFINED_OFFSET:
        return TruncationDecision(None, None)
    if leader_answer_epoch == UNDEFINED_EPOCH:
        return TruncationDecision(min(leader_answer_end_offset, follower_log_end_offset), None)
    own_epoch, own_end_offset = end_offset_for(follower_epoch_entries, leader_answer_epoch, follower_log_end_offset)
    if own_end_offset == UNDEFINED_OFFSET:
        return TruncationDecision(min(leader_answer_end_offset, follower_log_end_offset), None)
    if own_epoch == leader_answer_epoch:
        return TruncationDecision(min(leader_answer_end_offset, own_end_offset, follower_log_end_offset), None)
    return TruncationDecision(min(own_end_offset, follower_log_end_offset), own_epoch)


class FetchDivergence(NamedTuple):
    """What a leader answers for a Fetch partition carrying ``last_fetched_epoch`` (KIP-320, Fetch v12).

    - ``(ErrorCode.NONE, None)``: no divergence known: read the log as usual;
    - ``(ErrorCode.NONE, (epoch, end_offset))``: the fetcher's log diverges from ours after
      ``end_offset`` of ``epoch``: answer no records and this ``diverging_epoch``;
    - ``(ErrorCode.OFFSET_OUT_OF_RANGE, None)``: the epoch's end cannot be determined, or the fetch
      offset is below our log start.
    """

    error: ErrorCode
    diverging_epoch: tuple[int, int] | None


NO_DIVERGENCE = FetchDivergence(ErrorCode.NONE, None)


def fetch_divergence(last_fetched_epoch: int, fetch_offset: int, log_start_offset: int,
                     leader_epoch_end: tuple[int, int]) -> FetchDivergence:
    """The leader's check of a Fetch's ``last_fetched_epoch`` (Kafka 2.8's Partition.readRecords).

    ``leader_epoch_end`` is the leader's own :func:`end_offset_for` answer for ``last_fetched_epoch``
    (over its epoch entries and its log end offset). Rules, in order:

    1. ``last_fetched_epoch`` < 0 (consumers, and fetchers with no epoch yet) -> no check;
    2. the answer is undefined (epoch or end offset -1: the epoch is above our latest, or we have no
       entries) -> OFFSET_OUT_OF_RANGE;
    3. ``fetch_offset`` < our log start -> OFFSET_OUT_OF_RANGE, whatever the epochs say;
    4. the answer's epoch is below ``last_fetched_epoch`` (we never had that epoch) or its end offset
       is below ``fetch_offset`` (the fetcher has records of that epoch we do not) -> diverging at
       the answer;
    5. otherwise no divergence.
    """
    if last_fetched_epoch < 0:
        return NO_DIVERGENCE
    epoch, end_offset = leader_epoch_end
    if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_OFFSET or fetch_offset < log_start_offset:
        return FetchDivergence(ErrorCode.OFFSET_OUT_OF_RANGE, None)
    if epoch < last_fetched_epoch or end_offset < fetch_offset:
        return FetchDivergence(ErrorCode.NONE, (epoch, end_offset))
    return NO_DIVERGENCE
