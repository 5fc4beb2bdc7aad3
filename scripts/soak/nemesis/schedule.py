"""The nemesis' fault schedule: pure, reproducible from a seed.

``make_schedule(seed, minutes, kinds, mean_interval_s)`` returns ``FaultSpec``s sorted by ``at_s`` (seconds
from the nemesis' start). Invariants (unit-tested):

- The same arguments give the same schedule; every fault starts after a warm-up and is healed
  (``at_s + duration_s``) before the run ends (the last one is shortened to fit, never below its kind's
  floor).
- Faults come one at a time: a fault starts at least ``MIN_QUIET_S`` after the previous one healed (more
  after a fault whose heal restarts brokers), and the starts are spaced by exponential-ish gaps around
  ``mean_interval_s`` (an exponential draw clamped to [0.4, 1.6] x the mean: with the
  faults' own durations the starts come about one mean apart).
- Some slots are quiet windows (``QUIET_PROBABILITY``, never two in a row): 0.5-1.5 x the mean with no
  fault.
- Some slots are compound (``COMPOUND_PROBABILITY``, when ``kinds`` allows): a background fault that
  degrades the network or cuts a broker or the clients off (``BACKGROUND``), and inside its window a
  crash, a stop or a pause (``FOREGROUND``) that starts at least 1 s after it and heals at least 2 s
  before it does. These are the only overlapping faults.
- Kinds are dealt from a deck: each cycle of ``len(kinds)`` plain faults deals every kind once, in a
  shuffled order, so every kind is reached in any run long enough for one cycle.

Durations (the fault's start to its heal): a pause outlasts the ZooKeeper session timeout of the brokers
(``SESSION_TIMEOUT_MS``) by 2-8 s (a zombie leader or controller); a kill is followed by the restart after
1 s to twice the session timeout, so the broker comes back sometimes before its dead session expired and
sometimes after; partitions, degraded networks and disk faults last 20-60 s on a run of 10 minutes or
more, proportionally less on shorter runs (down to 25 %); ``preferred-election`` is instantaneous, and a
``reassign`` heals by waiting for the move to finish.

``target`` is a role resolved when the fault starts (by ``faults``): ``leader`` (of the hot partition),
``controller``, ``random`` (a broker), ``zk-leader``, ``random-zk``, ``all`` (every broker, or every node),
``small-log-dir`` (the broker with the small log dir), ``hot-partition``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from zkafka.testing.defaults import SESSION_TIMEOUT_MS

SESSION_S = SESSION_TIMEOUT_MS / 1000

KINDS: tuple[str, ...] = (
    "kill-broker", "kill-leader", "kill-controller", "kill-all-brokers", "kill-zookeeper", "kill-zookeeper-leader",
    "term-leader", "term-controller", "pause-broker", "pause-controller",
    "partition-broker", "partition-controller-zk", "partition-minority", "partition-ring", "partition-clients",
    "degrade-network", "disk-unwritable", "disk-full", "reassign", "preferred-election",
)

TARGETS: dict[str, tuple[str, ...]] = {
    "kill-broker": ("random",), "kill-leader": ("leader",), "kill-controller": ("controller",),
    "kill-all-brokers": ("all",), "kill-zookeeper": ("random-zk",), "kill-zookeeper-leader": ("zk-leader",),
    "term-leader": ("leader",), "term-controller": ("controller",),
    "pause-broker": ("leader", "random"), "pause-controller": ("controller",),
    "partition-broker": ("leader", "random", "controller"), "partition-controller-zk": ("controller",),
    "partition-minority": ("leader", "controller", "random"), "partition-ring": ("all",),
    "partition-clients": ("all",), "degrade-network": ("all",),
    "disk-unwritable": ("small-log-dir",), "disk-full": ("small-log-dir",),
    "reassign": ("hot-partition",), "preferred-election": ("all",),
}

# (low, high, scaled by the run's length, floor) in seconds; None: computed in _duration
DURATIONS: dict[str, tuple[float, float, bool, float]] = {
    "kill-broker": (1.0, 2 * SESSION_S, False, 1.0), "kill-leader": (1.0, 2 * SESSION_S, False, 1.0),
    "kill-controller": (1.0, 2 * SESSION_S, False, 1.0), "kill-all-brokers": (2.0, 2 * SESSION_S + 3, False, 2.0),
    "kill-zookeeper": (5.0, 30.0, True, 4.0), "kill-zookeeper-leader": (5.0, 30.0, True, 4.0),
    "term-leader": (1.0, 10.0, False, 1.0), "term-controller": (1.0, 10.0, False, 1.0),
    "pause-broker": (SESSION_S + 2, SESSION_S + 8, False, SESSION_S + 2),
    "pause-controller": (SESSION_S + 2, SESSION_S + 8, False, SESSION_S + 2),
    "partition-broker": (20.0, 60.0, True, SESSION_S + 2), "partition-controller-zk": (20.0, 60.0, True, SESSION_S + 2),
    "partition-minority": (20.0, 60.0, True, SESSION_S + 2), "partition-ring": (20.0, 60.0, True, SESSION_S + 2),
    "partition-clients": (20.0, 60.0, True, 6.0), "degrade-network": (20.0, 60.0, True, 6.0),
    "disk-unwritable": (10.0, 30.0, True, 6.0), "disk-full": (10.0, 30.0, True, 6.0),
    "reassign": (10.0, 30.0, True, 6.0), "preferred-election": (0.0, 0.0, False, 0.0),
}

BACKGROUND = ("degrade-network", "partition-broker", "partition-clients")
FOREGROUND = ("kill-broker", "kill-leader", "kill-controller", "term-leader", "pause-broker")
RESTARTING = frozenset({"kill-all-brokers", "disk-unwritable", "disk-full"})  # heal restarts brokers

MIN_QUIET_S = 2.0
RESTART_QUIET_S = 8.0
QUIET_PROBABILITY = 0.08
COMPOUND_PROBABILITY = 0.15
MIN_SCALE, FULL_SCALE_MINUTES = 0.25, 10.0


@dataclass(frozen=True)
class FaultSpec:
    at_s: float
    kind: str
    duration_s: float
    target: str

    @property
    def heal_s(self) -> float:
        return self.at_s + self.duration_s


def make_schedule(seed: int, minutes: float, kinds: list[str], mean_interval_s: float = 12.0) -> list[FaultSpec]:
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown fault kinds {unknown}; known: {', '.join(KINDS)}")
    if mean_interval_s <= 0:
        raise ValueError("mean_interval_s must be positive")
    rng = random.Random(seed)
    run_s = minutes * 60
    scale = min(1.0, max(MIN_SCALE, minutes / FULL_SCALE_MINUTES))
    background = [k for k in BACKGROUND if k in kinds]
    foreground = [k for k in FOREGROUND if k in kinds]
    deck: list[str] = []
    specs: list[FaultSpec] = []
    t = min(10.0, 0.1 * run_s)
    quiet_before = True  # the warm-up is quiet already
    while kinds:
        if not quiet_before and rng.random() < QUIET_PROBABILITY:
            t += rng.uniform(0.5, 1.5) * mean_interval_s
            quiet_before = True
            continue
        quiet_before = False
        if background and foreground and rng.random() < COMPOUND_PROBABILITY:
            slot = _compound(rng, t, scale, rng.choice(background), rng.choice(foreground))
        else:
            if not deck:
                deck = list(kinds)
                rng.shuffle(deck)
            kind = deck.pop()
            duration = min(_duration(rng, kind, scale), round(run_s - t, 3))  # the last one ends with the run
            slot = [FaultSpec(round(t, 3), kind, duration, rng.choice(TARGETS[kind]))]
        end = max(s.heal_s for s in slot)
        if end > run_s or any(s.duration_s < DURATIONS[s.kind][3] for s in slot):
            break
        specs.extend(slot)
        quiet = RESTART_QUIET_S if any(s.kind in RESTARTING for s in slot) else MIN_QUIET_S
        t = max(end + quiet, t + _gap(rng, mean_interval_s))
    return sorted(specs, key=lambda s: s.at_s)


def _duration(rng: random.Random, kind: str, scale: float) -> float:
    low, high, scaled, floor = DURATIONS[kind]
    value = rng.uniform(low, high) * (scale if scaled else 1.0)
    return round(max(floor, value), 3)


def _gap(rng: random.Random, mean_interval_s: float) -> float:
    return mean_interval_s * min(1.6, max(0.4, rng.expovariate(1.0)))


def _compound(rng: random.Random, t: float, scale: float, outer: str, inner: str) -> list[FaultSpec]:
    """A background fault and, inside its window, a foreground one (1 s after its start at least, healed
    2 s before its heal at least)."""
    inner_duration = _duration(rng, inner, scale)
    lead = round(rng.uniform(1.0, 4.0), 3)
    outer_duration = max(_duration(rng, outer, scale), round(lead + inner_duration + 2.0, 3))
    return [FaultSpec(round(t, 3), outer, outer_duration, rng.choice(TARGETS[outer])),
            FaultSpec(round(t + lead, 3), inner, inner_duration, rng.choice(TARGETS[inner]))]
