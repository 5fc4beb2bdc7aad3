"""LongLivedHeap (brokers/app/long_lived_heap.py): a slow full collection freezes its survivors, fast ones and
young collections do not, and ``release`` gives frozen cyclic garbage back to the collector."""
from __future__ import annotations

import gc

import pytest

from brokers.app.long_lived_heap import LongLivedHeap


@pytest.fixture
def heap():
    heap = LongLivedHeap(slow_ms=0.0).install()
    try:
        yield heap
    finally:
        heap.uninstall()
        gc.unfreeze()


class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the cyclic collector reclaims it


def test_a_slow_full_collection_freezes_what_survived_it(heap):
    kept = [Node() for _ in range(10_000)]
    gc.collect()
    assert heap.freezes >= 1 and gc.get_freeze_count() >= len(kept)
    assert all(gc.is_tracked(node) for node in kept)


def test_young_and_fast_collections_freeze_nothing():
    heap = LongLivedHeap(slow_ms=60_000.0).install()  # no full collection here takes a minute
    try:
        gc.collect(0)
        gc.collect(1)
        gc.collect()
        assert heap.freezes == 0 and gc.get_freeze_count() == 0
        assert heap.last_full_collection_ms > 0
    finally:
        heap.uninstall()


def test_young_collections_do_not_count_as_full_ones(heap):
    gc.collect(1)
    assert heap.freezes == 0 and gc.get_freeze_count() == 0


def test_release_lets_the_next_full_collection_reclaim_frozen_cycles(heap):
    doomed = [Node() for _ in range(1_000)]
    gc.collect()
    assert gc.get_freeze_count() >= 1_000
    del doomed  # now cyclic garbage, but frozen: a full collection does not look at it
    assert gc.collect() == 0
    heap.release("a test dropped its nodes")
    assert heap.releases == 1 and gc.get_freeze_count() == 0
    assert gc.collect() >= 1_000


def test_release_with_nothing_frozen_is_a_no_op(heap):
    heap.release("nothing frozen")
    assert heap.releases == 0


def test_install_is_idempotent_and_uninstall_removes_it():
    heap = LongLivedHeap()
    heap.install().install()
    assert gc.callbacks.count(heap._on_collection) == 1
    heap.uninstall()
    assert heap._on_collection not in gc.callbacks
