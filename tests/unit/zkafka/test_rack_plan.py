"""zkafka.testing.rack_plan: the pure address plan of a racked cluster (which node in which rack, the subnets,
addresses, routes, hosts files and the router's scripts), for RackedCluster's default racks and other layouts."""
from __future__ import annotations

import ipaddress
from itertools import islice

import pytest

from zkafka.testing import rack_plan as plan

DEFAULT_RACKS = {"a": 2, "b": 1, "c": 1}  # RackedCluster's default (zkafka.testing.racks, which needs Docker)
net = ipaddress.ip_network


@pytest.fixture
def default():
    layout = plan.rack_layout(DEFAULT_RACKS, 3)
    subnets = dict(zip(layout.racks, plan.candidate_subnets([])))
    return layout, subnets, layout.addresses(subnets)


# -------------------------------------------------------------------------------------------- the layout


def test_default_layout_numbers_brokers_rack_by_rack_and_spreads_zookeepers(default):
    layout, _, _ = default
    assert layout.racks == ("a", "b", "c")
    assert layout.broker_rack == {1: "a", 2: "a", 3: "b", 4: "c"}
    assert layout.zookeeper_rack == {1: "a", 2: "b", 3: "c"}  # one per rack: losing a rack keeps a quorum
    assert [layout.nodes_in(r) for r in layout.racks] == [["zk1", "broker1", "broker2"], ["zk2", "broker3"],
                                                          ["zk3", "broker4"]]
    assert [layout.rack_of(n) for n in ("zk1", "zk2", "zk3", "broker1", "broker2", "broker3", "broker4")] == \
        ["a", "b", "c", "a", "a", "b", "c"]


@pytest.mark.parametrize("node", ["zk4", "zk0", "broker5", "broker0", "broker", "zk", "kafka1", "zkx", "broker-1", ""])
def test_rack_of_an_unknown_node_raises(default, node):
    with pytest.raises(ValueError, match="no node"):
        default[0].rack_of(node)


def test_nodes_in_an_unknown_rack_raises(default):
    with pytest.raises(ValueError, match="no rack 'd'"):
        default[0].nodes_in("d")


def test_custom_layout_keeps_the_order_given_and_allows_a_rack_without_brokers():
    layout = plan.rack_layout({"zone-2": 0, "zone-1": 3}, 1)
    assert layout.racks == ("zone-2", "zone-1")
    assert layout.broker_rack == {1: "zone-1", 2: "zone-1", 3: "zone-1"}
    assert layout.zookeeper_rack == {1: "zone-2"}
    assert layout.nodes_in("zone-2") == ["zk1"] and layout.nodes_in("zone-1") == ["broker1", "broker2", "broker3"]


def test_zookeepers_go_round_robin_over_the_racks():
    layout = plan.rack_layout({"x": 1, "y": 1}, 5)
    assert layout.zookeeper_rack == {1: "x", 2: "y", 3: "x", 4: "y", 5: "x"}
    assert layout.nodes_in("x") == ["zk1", "zk3", "zk5", "broker1"]
    assert plan.rack_layout({"x": 2}, 0).zookeeper_rack == {}


@pytest.mark.parametrize("racks, match", [
    ({}, "at least one rack"),
    ({"a": 0, "b": 0}, "at least one broker"),
    ({"A": 1}, "rack name"),
    ({"a_b": 1}, "rack name"),
    ({"-a": 1}, "rack name"),
    ({"a b": 1}, "rack name"),
    ({"": 1}, "rack name"),
    ({"r" * 25: 1}, "rack name"),
    ({1: 1}, "rack name"),
    ({"a": -1}, "number of brokers"),
    ({"a": 1.0}, "number of brokers"),
    ({"a": "2"}, "number of brokers"),
    ({"a": None}, "number of brokers"),
])
def test_invalid_layouts_raise(racks, match):
    with pytest.raises(ValueError, match=match):
        plan.rack_layout(racks, 1)


def test_the_longest_rack_name_is_24_characters():
    assert plan.rack_layout({"r" * 24: 1}, 1).racks == ("r" * 24,)


# ------------------------------------------------------------------------------------------------ subnets


def test_subnets_are_the_pools_24s_in_order():
    assert plan.SUBNET_POOL == net("10.231.0.0/16")
    subnets = list(plan.candidate_subnets([]))
    assert len(subnets) == 256 and subnets[:2] == [net("10.231.0.0/24"), net("10.231.1.0/24")]
    assert subnets[-1] == net("10.231.255.0/24") and all(s.prefixlen == 24 for s in subnets)


def test_subnets_in_use_are_skipped_and_ipv6_ones_ignored():
    taken = ["10.231.0.0/24", "10.231.2.0/23", "172.17.0.0/16", "fd00:1::/64", "10.231.5.128/25"]
    assert list(islice(plan.candidate_subnets(taken), 3)) == [net("10.231.1.0/24"), net("10.231.4.0/24"),
                                                              net("10.231.6.0/24")]
    assert list(plan.candidate_subnets(["10.0.0.0/8"])) == []
    assert list(plan.candidate_subnets(["10.231.0.0/16"])) == []


def test_subnets_start_anywhere_and_wrap_around():
    assert list(islice(plan.candidate_subnets(["10.231.0.0/24"], start=254), 3)) == [
        net("10.231.254.0/24"), net("10.231.255.0/24"), net("10.231.1.0/24")]
    assert len(list(plan.candidate_subnets([], start=100))) == 256


def test_gateway_and_router_addresses():
    subnet = net("10.231.7.0/24")
    assert plan.gateway(subnet) == "10.231.7.1"
    assert plan.router_address(subnet) == "10.231.7.254"


# ---------------------------------------------------------------------------------------------- addresses


def test_default_addresses_start_at_10_zookeepers_first(default):
    _, _, addresses = default
    assert addresses == {"zk1": "10.231.0.10", "broker1": "10.231.0.11", "broker2": "10.231.0.12",
                         "zk2": "10.231.1.10", "broker3": "10.231.1.11",
                         "zk3": "10.231.2.10", "broker4": "10.231.2.11"}


def test_custom_addresses_follow_the_subnets_given():
    layout = plan.rack_layout({"east": 1, "west": 2}, 1)
    subnets = {"east": net("192.168.50.0/24"), "west": net("10.231.9.0/24")}
    assert layout.addresses(subnets) == {"zk1": "192.168.50.10", "broker1": "192.168.50.11",
                                         "broker2": "10.231.9.10", "broker3": "10.231.9.11"}


def test_addresses_never_take_the_gateway_or_the_router(default):
    _, subnets, addresses = default
    reserved = {plan.gateway(s) for s in subnets.values()} | {plan.router_address(s) for s in subnets.values()}
    assert len(set(addresses.values())) == len(addresses) and not reserved & set(addresses.values())
    for node, ip in addresses.items():
        assert ipaddress.ip_address(ip) in subnets[default[0].rack_of(node)]


# ------------------------------------------------------------------------------------- routes and hosts


def test_route_script_sends_every_other_rack_through_the_router_on_its_own_network(default):
    _, subnets, _ = default
    assert plan.route_script("a", subnets) == ("ip route replace 10.231.1.0/24 via 10.231.0.254 && "
                                               "ip route replace 10.231.2.0/24 via 10.231.0.254")
    assert plan.route_script("c", subnets) == ("ip route replace 10.231.0.0/24 via 10.231.2.254 && "
                                               "ip route replace 10.231.1.0/24 via 10.231.2.254")


def test_route_script_of_a_single_rack_does_nothing():
    assert plan.route_script("only", {"only": net("10.231.3.0/24")}) == "true"


def test_routed_command_runs_the_script_then_execs_the_entrypoint():
    command = plan.routed_command("ip route replace x via y", ["kafka-server-start", "/etc/kafka/server.properties"])
    assert command == ["sh", "-c", 'ip route replace x via y && exec "$@"', "routed", "zkafka-entrypoint",
                       "kafka-server-start", "/etc/kafka/server.properties"]


def test_hosts_lists_every_other_node(default):
    _, _, addresses = default
    entries = plan.hosts(addresses, "broker3")
    assert "broker3" not in entries and len(entries) == len(addresses) - 1
    assert entries == {n: ip for n, ip in addresses.items() if n != "broker3"}
    assert plan.hosts(addresses, "router") == addresses  # not a node: everyone


# ------------------------------------------------------------------------------------ the router's scripts


def test_cut_forwarding_script_drops_each_subnet_both_ways_in_the_nemesis_chain():
    script = plan.cut_forwarding_script([net("10.231.0.0/24"), net("10.231.2.0/24")])
    assert script.split(" && ") == [
        "(iptables -n -L ZKAFKA-NEMESIS >/dev/null 2>&1 || iptables -N ZKAFKA-NEMESIS)",
        "(iptables -C FORWARD -j ZKAFKA-NEMESIS 2>/dev/null || iptables -I FORWARD 1 -j ZKAFKA-NEMESIS)",
        "iptables -A ZKAFKA-NEMESIS -s 10.231.0.0/24 -j DROP",
        "iptables -A ZKAFKA-NEMESIS -d 10.231.0.0/24 -j DROP",
        "iptables -A ZKAFKA-NEMESIS -s 10.231.2.0/24 -j DROP",
        "iptables -A ZKAFKA-NEMESIS -d 10.231.2.0/24 -j DROP",
    ]
    assert len(plan.cut_forwarding_script([]).split(" && ")) == 2  # the chain and its hook only


def test_heal_forwarding_script_flushes_the_chain_and_never_fails():
    assert plan.heal_forwarding_script() == "iptables -F ZKAFKA-NEMESIS 2>/dev/null; true"


def test_reachable_script_quotes_the_host_and_takes_whole_numbers():
    assert plan.reachable_script("broker2", 9092) == "nc -z -w 1 broker2 9092"
    assert plan.reachable_script("a b;rm -rf /", 9092, timeout_s=2.9) == "nc -z -w 2 'a b;rm -rf /' 9092"


def test_a_boolean_is_not_a_number_of_brokers():
    with pytest.raises(ValueError, match="a number of brokers"):
        plan.rack_layout({"a": True}, 1)


def test_a_rack_with_more_nodes_than_its_subnet_holds_is_refused():
    with pytest.raises(ValueError, match="do not fit its /24"):
        plan.rack_layout({"a": 244, "b": 1}, 2)
    assert len(plan.rack_layout({"a": 243, "b": 1}, 2).broker_rack) == 244
