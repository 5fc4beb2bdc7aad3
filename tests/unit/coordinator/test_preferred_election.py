"""coordinator.preferred_election's pure decisions: the ElectLeaders/znode triage and the auto leader
rebalance, each against a brute-force reference written from Kafka 2.8's controller, exhaustively over
a small universe (assignments of {1, 2, 3} for two partitions, every leader incl. none, every ISR,
every live set, every imbalance percentage that matters, deletion and reassignment flags)."""
from __future__ import annotations

from itertools import combinations, permutations, product

import pytest

from brokers.model import NO_LEADER, TopicPartition
from brokers.protocol.errors import ErrorCode
from coordinator.preferred_election import (
    PREFERRED,
    UNCLEAN,
    auto_rebalance_candidates,
    failure_outcome,
    is_imbalanced,
    leader_imbalance,
    triage,
)

BROKERS = (1, 2, 3)
A, B = TopicPartition("a", 0), TopicPartition("b", 0)
ASSIGNMENTS = [p for p in permutations(BROKERS, 2)] + [(1,)]
LEADERS = (NO_LEADER, 1, 2, 3)
LIVE_SETS = [frozenset(c) for k in range(4) for c in combinations(BROKERS, k)]
ISRS = [tuple(c) for k in range(1, 4) for c in combinations(BROKERS, k)]


# -- triage ---------------------------------------------------------------------------------------------

def ref_triage(election_type, tp, assignments, leaders, live, deleting):
    if tp not in assignments:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if tp.topic in deleting:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    leader = leaders.get(tp, NO_LEADER)
    if election_type == PREFERRED and leader == assignments[tp][0]:
        return ErrorCode.ELECTION_NOT_NEEDED
    if election_type == UNCLEAN and leader != NO_LEADER and leader in live:
        return ErrorCode.ELECTION_NOT_NEEDED
    return None  # electable


@pytest.mark.parametrize("election_type", [PREFERRED, UNCLEAN])
def test_triage_every_case(election_type):
    unknown = TopicPartition("nope", 0)
    cases = 0
    for assignment, leader, live, deleting, with_state in product(ASSIGNMENTS, LEADERS, LIVE_SETS,
                                                                  ((), ("a",)), (True, False)):
        assignments = {A: list(assignment), B: [3, 1]}
        leaders = {A: leader, B: 3} if with_state else {B: 3}
        found = triage(election_type, [A, unknown, A, B], assignments, leaders, live, deleting)
        expected = {tp: ref_triage(election_type, tp, assignments, leaders, live, deleting) for tp in (A, B, unknown)}
        assert found.electable == sorted(tp for tp, code in expected.items() if code is None)
        assert {tp: code for tp, (code, _, _) in found.outcomes.items()} == {
            tp: code for tp, code in expected.items() if code is not None}
        cases += 1
    assert cases == len(ASSIGNMENTS) * len(LEADERS) * len(LIVE_SETS) * 4


def test_triage_messages_and_leaders():
    found = triage(PREFERRED, [A, B, TopicPartition("x", 1)], {A: [1, 2], B: [2, 1]}, {A: 1, B: 1}, {1, 2}, ())
    assert found.outcomes[TopicPartition("x", 1)] == (3, "The partition does not exist.", -1)
    assert found.outcomes[A] == (84, None, 1)  # ELECTION_NOT_NEEDED carries the current leader
    assert found.electable == [B]
    deleting = triage(PREFERRED, [A], {A: [1, 2]}, {A: 2}, {1, 2}, {"a"})
    assert deleting.outcomes[A] == (17, "The topic is being deleted", -1)


def test_failure_outcomes_name_kafkas_codes_and_strategy():
    assert failure_outcome(PREFERRED, A) == (
        80, "Failed to elect leader for partition a-0 under strategy PreferredReplicaPartitionLeaderElectionStrategy", -1)
    code, message, leader = failure_outcome(UNCLEAN, A)
    assert (code, leader) == (83, -1) and "OfflinePartitionLeaderElectionStrategy(true)" in message


# -- the imbalance ratio ----------------------------------------------------------------------------------

@pytest.mark.parametrize("total", range(0, 21))
def test_is_imbalanced_is_the_exact_ratio_strictly_above_the_percentage(total):
    for not_preferred, percentage in product(range(total + 1), range(0, 101)):
        expected = total > 0 and (not_preferred / total) > (percentage / 100)
        if total > 0 and not_preferred * 100 == percentage * total:
            expected = False  # exactly at the threshold is balanced (Kafka: ratio > percentage/100)
        assert is_imbalanced(not_preferred, total, percentage) is expected, (not_preferred, total, percentage)


def test_leader_imbalance_groups_by_preferred_replica():
    t = [TopicPartition("t", p) for p in range(6)]
    assignments = {t[0]: [1, 2], t[1]: [1, 3], t[2]: [2, 1], t[3]: [1, 2], t[4]: [3, 1], t[5]: []}
    leaders = {t[0]: 2, t[1]: 1, t[2]: 2, t[4]: NO_LEADER}  # t3 has no state: counted, not "led by another"
    assert leader_imbalance(assignments, leaders) == {1: ([t[0]], 3), 2: ([], 1), 3: ([t[4]], 1)}
    assert leader_imbalance(assignments, leaders, topics_to_delete={"t"}) == {}


# -- the auto rebalance against a reference ------------------------------------------------------------------

def ref_candidates(assignments, leadership, live, percentage, deleting, reassigning):
    groups = {}
    for tp, replicas in assignments.items():
        if tp.topic in deleting or not replicas:
            continue
        groups.setdefault(replicas[0], []).append(tp)
    out = []
    for broker, tps in groups.items():
        off = [tp for tp in tps if tp in leadership and leadership[tp][0] != broker]
        if len(off) / len(tps) <= percentage / 100 or (len(off) * 100 == percentage * len(tps)):
            continue
        out += [tp for tp in off if broker in live and not reassigning and broker in leadership[tp][1]]
    return sorted(out)


def test_auto_rebalance_candidates_every_case():
    cases = 0
    for (ra, rb), (la, lb), isr_a, live, percentage, deleting, reassigning in product(
            [(x, y) for x in ASSIGNMENTS for y in ((2, 1), (1, 3))], [(1, 2), (2, 2), (NO_LEADER, 1), (3, 3)],
            ISRS, LIVE_SETS, (0, 10, 49, 50, 100), ((), ("b",)), (False, True)):
        assignments = {A: list(ra), B: list(rb)}
        leadership = {A: (la, isr_a), B: (lb, (1, 2, 3))}
        got = auto_rebalance_candidates(assignments, leadership, live, percentage, deleting, reassigning)
        assert got == ref_candidates(assignments, leadership, live, percentage, deleting, reassigning), (
            assignments, leadership, live, percentage, deleting, reassigning)
        cases += 1
    assert cases > 10_000


def test_a_drifted_broker_gets_its_partitions_back_only_above_the_threshold():
    # broker 1 prefers 10 partitions; it leads 9 of them -> ratio 0.1, not above 10 %
    tps = [TopicPartition("t", p) for p in range(10)]
    assignments = {tp: [1, 2, 3] for tp in tps}
    leadership = {tp: (1, (1, 2, 3)) for tp in tps}
    leadership[tps[0]] = (2, (1, 2, 3))
    assert auto_rebalance_candidates(assignments, leadership, {1, 2, 3}, 10) == []
    assert auto_rebalance_candidates(assignments, leadership, {1, 2, 3}, 9) == [tps[0]]
    leadership[tps[1]] = (3, (3, 2))  # 0.2 now, but broker 1 is not in t-1's ISR yet
    assert auto_rebalance_candidates(assignments, leadership, {1, 2, 3}, 10) == [tps[0]]
    assert auto_rebalance_candidates(assignments, leadership, {2, 3}, 10) == []  # broker 1 not live
    assert auto_rebalance_candidates(assignments, leadership, {1, 2, 3}, 10, reassignment_in_progress=True) == []
