"""The controller's leader election strategies and the OfflineReplica ISR rule (pure).

Kafka's ``PartitionLeaderElectionAlgorithms`` plus the ISR each caller in
``PartitionStateMachine`` writes with the chosen leader (reference §3.2):

| strategy            | order scanned        | condition                               | new ISR                      |
|---------------------|----------------------|-----------------------------------------|------------------------------|
| offline             | assignment           | live and in ISR                         | old ISR filtered to live     |
| offline, unclean    | assignment           | live (only if no clean candidate)       | ``(leader,)``                |
| reassign            | target replicas      | live and in ISR                         | unchanged                    |
| preferred           | ``assignment[0]`` only | live and in ISR                       | unchanged                    |
| controlled shutdown | assignment           | live and in ISR and not shutting down   | ISR minus shutting-down      |

Every strategy picks the FIRST replica in the scanned order that satisfies the condition. When nothing
qualifies the result's ``leader`` is None and its ``isr`` is the input ISR unchanged: Kafka writes
nothing then; after an offline election the partition stays (or goes) Offline, after any other it
keeps its current leader (``PartitionLeadership.elect(..., mark_offline_if_none=False)``).

"Live" is whatever set the caller passes: for the offline, reassign and preferred strategies Kafka
passes brokers that are alive and not shutting down; for controlled shutdown it passes brokers alive
or shutting down, and ``shutting_down`` excludes the latter as leaders.

In ZooKeeper and on the wire "no leader" is ``-1`` (``brokers.model.NO_LEADER``, Kafka's
``LeaderAndIsr.NoLeader``); :func:`remove_replica_from_isr` uses it because its result is written
as is. The election functions use None instead, as Kafka's ``Option[Int]`` does.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from brokers.model import NO_LEADER


@dataclass(frozen=True, slots=True)
class ElectionResult:
    """The leader an election chose (None: nobody qualified) and the ISR to write with it."""

    leader: int | None
    isr: tuple[int, ...]

    @property
    def elected(self) -> bool:
        return self.leader is not None


def _first(candidates: Iterable[int], condition: Callable[[int], bool]) -> int | None:
    return next((replica for replica in candidates if condition(replica)), None)


def offline_election(assignment: Sequence[int], isr: Sequence[int], live: Collection[int],
                     unclean_allowed: bool) -> ElectionResult:
    """Leader for a partition whose leader is gone (broker failure, New/Offline after a restart).

    Clean: the first assigned replica that is live and in the ISR; the new ISR is the old ISR
    filtered to live brokers (order kept). Only when no clean candidate exists and
    ``unclean_allowed`` (``unclean.leader.election.enable``): the first live assigned replica even
    outside the ISR, with ISR ``(leader,)`` -- committed records it lacks are lost.
    """
    in_isr = set(isr)
    leader = _first(assignment, lambda r: r in live and r in in_isr)
    if leader is not None:
        return ElectionResult(leader, tuple(r for r in isr if r in live))
    if unclean_allowed:
        leader = _first(assignment, lambda r: r in live)
        if leader is not None:
            return ElectionResult(leader, (leader,))
    return ElectionResult(None, tuple(isr))


def reassign_election(target_replicas: Sequence[int], isr: Sequence[int], live: Collection[int]) -> ElectionResult:
    """Leader during a reassignment: the first target replica that is live and in the ISR; ISR unchanged."""
    in_isr = set(isr)
    leader = _first(target_replicas, lambda r: r in live and r in in_isr)
    return ElectionResult(leader, tuple(isr))


def preferred_election(assignment: Sequence[int], isr: Sequence[int], live: Collection[int]) -> ElectionResult:
    """Preferred replica election: ``assignment[0]`` if it is live and in the ISR, else nobody; ISR unchanged."""
    in_isr = set(isr)
    leader = _first(assignment[:1], lambda r: r in live and r in in_isr)
    return ElectionResult(leader, tuple(isr))


def controlled_shutdown_election(assignment: Sequence[int], isr: Sequence[int], live: Collection[int],
                                 shutting_down: Collection[int]) -> ElectionResult:
    """Leader when the current one shuts down cleanly.

    The first assigned replica that is live, in the ISR and not shutting down; the new ISR is the
    old ISR minus every shutting-down broker (order kept). Kafka computes that ISR regardless of the
    leader found, but writes it only with a leader; with none the input ISR is returned unchanged.
    """
    in_isr = set(isr)
    leader = _first(assignment, lambda r: r in live and r in in_isr and r not in shutting_down)
    if leader is None:
        return ElectionResult(None, tuple(isr))
    return ElectionResult(leader, tuple(r for r in isr if r not in shutting_down))


def remove_replica_from_isr(leader: int, isr: Sequence[int], replica: int) -> tuple[int, tuple[int, ...]]:
    """The OfflineReplica rule (reference §2.4): ``(new leader, new ISR)`` once ``replica`` goes offline.

    - ``replica`` not in the ISR: nothing changes (Kafka only rewrites partitions whose ISR holds it).
    - otherwise it leaves the ISR, and the leader becomes ``-1`` (``NO_LEADER``) if it was the leader;
    - EXCEPT that an ISR of exactly one member is left unchanged -- the last in-sync replica stays
      recorded even when dead, so a clean election can wait for it (pitfall 9: never empty the ISR).
      The leader still becomes ``-1`` if that member led.
    """
    current = tuple(isr)
    if replica not in current:
        return leader, current
    new_leader = NO_LEADER if replica == leader else leader
    new_isr = current if len(current) == 1 else tuple(r for r in current if r != replica)
    return new_leader, new_isr


__all__ = [
    "ElectionResult",
    "controlled_shutdown_election",
    "offline_election",
    "preferred_election",
    "reassign_election",
    "remove_replica_from_isr",
]
