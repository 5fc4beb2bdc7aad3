"""Who drops whom in a partition, and the scripts that apply it in the nemesis' own chain."""
from __future__ import annotations

import pytest

from zkafka.testing import network as net
from scripts.soak.nemesis.faults import new_replicas

NODES = ["zk1", "zk2", "zk3", "broker1", "broker2", "broker3"]


def symmetric(grudge):
    return all(a in grudge.get(b, set()) or b in grudge.get(a, set()) for a in grudge for b in grudge[a])


def test_groups_each_node_drops_the_nodes_outside_its_group():
    grudge = net.grudge_from_groups([{"broker1", "zk1"}, set(NODES) - {"broker1", "zk1"}], NODES)
    assert grudge["broker1"] == grudge["zk1"] == {"zk2", "zk3", "broker2", "broker3"}
    assert grudge["broker3"] == {"broker1", "zk1"}
    assert symmetric(grudge)


def test_a_node_in_no_group_is_dropped_by_the_grouped_ones():
    grudge = net.grudge_from_groups([{"broker1"}], NODES)
    assert grudge == {"broker1": set(NODES) - {"broker1"}}


def test_groups_must_be_known_and_disjoint():
    with pytest.raises(ValueError, match="broker9"):
        net.grudge_from_groups([{"broker9"}], NODES)
    with pytest.raises(ValueError, match="two partition groups"):
        net.grudge_from_groups([{"broker1", "zk1"}, {"zk1"}], NODES)


def test_ring_each_node_reaches_only_its_neighbours():
    grudge = net.ring_grudge(NODES)
    reach = {n: set(NODES) - grudge[n] - {n} for n in NODES}
    assert reach["zk2"] == {"zk1", "zk3"}  # the ensemble keeps a quorum through zk2
    assert reach["broker2"] == {"broker1", "broker3"}  # cut from every ZooKeeper
    assert reach["zk1"] == {"broker3", "zk2"}
    assert all(len(r) == 2 for r in reach.values()) and symmetric(grudge)
    with pytest.raises(ValueError):
        net.ring_grudge(NODES[:3])


def test_drop_script_hooks_the_chain_once_and_drops_both_directions():
    script = net.drop_script(["10.0.0.3", "10.0.0.2"])
    assert "iptables -C INPUT -j ZKAFKA-NEMESIS" in script and "iptables -I OUTPUT 1 -j ZKAFKA-NEMESIS" in script
    assert script.index("-s 10.0.0.2 ") < script.index("-s 10.0.0.3 ")
    assert "-A ZKAFKA-NEMESIS -d 10.0.0.3 -j DROP" in script
    port = net.drop_script(["10.0.0.1"], port=9093)
    assert "-s 10.0.0.1 -p tcp --dport 9093 -j DROP" in port and "-d 10.0.0.1 -p tcp --sport 9093 -j DROP" in port


def test_healing_flushes_only_the_chain_and_never_fails():
    assert net.flush_script() == "iptables -F ZKAFKA-NEMESIS 2>/dev/null; true"
    assert "netem delay 100ms rate 3mbit" in net.netem_script() and "tbf rate 3mbit" in net.netem_script()
    assert net.clear_netem_script().endswith("true")


class FixedRandom:
    def __init__(self, value):
        self.value = value

    def random(self):
        return self.value

    def randrange(self, a, b):
        return a

    def choice(self, seq):
        return seq[0]


def test_reassign_moves_to_another_order_or_swaps_a_follower():
    assert new_replicas([1, 2, 3], [1, 2, 3], FixedRandom(0.0)) == [2, 3, 1]
    assert new_replicas([1, 2, 3], [1, 2, 3, 4], FixedRandom(0.0)) == [1, 4, 3]
    assert new_replicas([1, 2, 3], [1, 2, 3, 4], FixedRandom(0.9)) == [2, 3, 1]
    assert new_replicas([2], [1, 2], FixedRandom(0.0)) == [1]


def test_nemesis_timeline_heals_before_starts_at_a_tie_but_an_instant_fault_after_its_start():
    from scripts.soak.nemesis.nemesis import timeline
    from scripts.soak.nemesis.schedule import FaultSpec
    schedule = [FaultSpec(1.0, "kill-broker", 2.0, "random"), FaultSpec(3.0, "preferred-election", 0.0, "all"),
                FaultSpec(3.0, "pause-broker", 9.0, "leader")]
    assert timeline(schedule) == [(1.0, "start", 0), (3.0, "heal", 0), (3.0, "start", 1), (3.0, "start", 2),
                                  (3.0, "heal", 1), (12.0, "heal", 2)]
