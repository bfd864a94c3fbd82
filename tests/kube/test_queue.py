"""The basic and delaying queue: client-go semantics, scenario by scenario."""

from __future__ import annotations

import threading
import time

import pytest

from promop.kube.workqueue import DelayingQueue, FakeClock, Queue
from deadlines import scaled
from kube.kube_testlib import wait_until

DEADLINE = scaled(5.0)  # bounds only a failure


def start(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_fifo_order_and_dedup_of_waiting_items():
    q = Queue()
    for item in ["a", "b", "a", "c", "b"]:
        q.add(item)
    assert len(q) == 3
    assert [q.get()[0] for _ in range(3)] == ["a", "b", "c"]
    assert len(q) == 0


def test_add_while_processing_gives_exactly_one_more_run():
    q = Queue()
    q.add("a")
    item, _ = q.get()
    for _ in range(5):
        q.add("a")
    assert len(q) == 0, "an item being processed must not be handed out twice"
    q.done(item)
    assert len(q) == 1
    assert q.get(timeout=0) == ("a", False)
    q.done("a")
    assert q.get(timeout=0) == (None, False)


def test_done_without_readd_does_not_requeue():
    q = Queue()
    q.add("a")
    q.done(q.get()[0])
    assert len(q) == 0 and q.processing() == 0


def test_get_blocks_until_an_item_arrives():
    q = Queue()
    got = []
    thread = start(lambda: got.append(q.get()))
    time.sleep(0.02)  # give the getter a chance to (wrongly) return; not synchronisation
    assert got == []
    q.add("x")
    thread.join(DEADLINE)
    assert got == [("x", False)]


def test_get_timeout_returns_none_false():
    q = Queue()
    started = time.monotonic()
    assert q.get(timeout=0.05) == (None, False)
    assert time.monotonic() - started >= 0.05


def test_shutdown_drains_backlog_then_reports_shutdown():
    q = Queue()
    q.add("a")
    q.add("b")
    q.shutdown()
    q.add("c")  # ignored after shutdown
    assert q.shutting_down()
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    assert q.get() == (None, True)


def test_shutdown_wakes_every_blocked_getter():
    q = Queue()
    results = []
    threads = [start(lambda: results.append(q.get())) for _ in range(4)]
    wait_until(lambda: all(t.is_alive() for t in threads), "getters to block")
    q.shutdown()
    for thread in threads:
        thread.join(DEADLINE)
    assert results == [(None, True)] * 4


def test_shutdown_with_drain_waits_for_in_flight_items_only():
    q = Queue()
    for item in "abc":
        q.add(item)
    item, _ = q.get()  # 'a' in flight; 'b', 'c' are backlog
    drained = threading.Event()
    start(lambda: (q.shutdown_with_drain(), drained.set()))
    wait_until(q.shutting_down, "shutdown to begin")
    assert not drained.wait(0.05), "drain returned while an item was in flight"
    q.done(item)
    assert drained.wait(DEADLINE), "drain did not return after the in-flight item was done"
    assert len(q) == 2, "the backlog is not waited for, and is not dropped"


def test_shutdown_with_drain_requeues_item_dirtied_while_in_flight():
    q = Queue()
    q.add("a")
    item, _ = q.get()
    q.add("a")
    drained = threading.Event()
    start(lambda: (q.shutdown_with_drain(), drained.set()))
    wait_until(q.shutting_down, "shutdown to begin")
    q.done(item)
    assert drained.wait(DEADLINE)
    assert q.get(timeout=0) == ("a", False)


def test_later_shutdown_aborts_the_drain_wait():
    q = Queue()
    q.add("a")
    q.get()
    drained = threading.Event()
    start(lambda: (q.shutdown_with_drain(), drained.set()))
    wait_until(q.shutting_down, "shutdown to begin")
    q.shutdown()
    assert drained.wait(DEADLINE)


def test_shutdown_with_drain_returns_at_once_when_idle():
    q = Queue()
    q.add("a")
    q.shutdown_with_drain()
    assert q.get() == ("a", False)


# -- delaying queue ---------------------------------------------------------------------


def test_add_after_becomes_ready_at_its_time():
    clock = FakeClock()
    q = DelayingQueue(clock=clock)
    q.add_after("a", 1.0)
    assert len(q) == 0 and q.waiting() == 1
    clock.advance(0.999)
    assert q.get(timeout=0) == (None, False)
    clock.advance(0.001)
    assert q.get(timeout=0) == ("a", False)


def test_add_after_non_positive_delay_adds_now():
    q = DelayingQueue(clock=FakeClock())
    q.add_after("a", 0)
    q.add_after("b", -3)
    assert len(q) == 2


def test_repeated_add_after_only_moves_ready_time_earlier():
    clock = FakeClock()
    q = DelayingQueue(clock=clock)
    q.add_after("a", 5.0)
    q.add_after("a", 10.0)  # later: ignored
    clock.advance(5.0)
    assert len(q) == 1
    q.get()
    q.add_after("b", 5.0)
    q.add_after("b", 1.0)  # earlier: wins
    clock.advance(1.0)
    assert q.get(timeout=0) == ("b", False)
    assert q.waiting() == 0


def test_due_items_come_out_in_ready_time_order():
    clock = FakeClock()
    q = DelayingQueue(clock=clock)
    q.add_after("late", 3.0)
    q.add_after("early", 1.0)
    q.add_after("middle", 2.0)
    clock.advance(10.0)
    q.add("direct")  # added after the others became due: queued behind them
    assert [q.get()[0] for _ in range(4)] == ["early", "middle", "late", "direct"]


def test_blocked_get_wakes_when_a_delayed_item_becomes_due():
    clock = FakeClock()
    q = DelayingQueue(clock=clock)
    got = []
    thread = start(lambda: got.append(q.get()))
    q.add_after("a", 30.0)  # longer than the heartbeat would matter: fake time
    clock.advance(29.0)
    assert not got
    clock.advance(1.0)
    thread.join(DEADLINE)
    assert got == [("a", False)]


def test_blocked_get_with_real_clock_wakes_for_earlier_item():
    q = DelayingQueue()
    got = []
    q.add_after("slow", 60.0)
    thread = start(lambda: got.append(q.get()))
    started = time.monotonic()
    q.add_after("fast", 0.02)  # new earliest entry: the waiting getter must recompute its wait
    thread.join(DEADLINE)
    assert got == [("fast", False)]
    assert time.monotonic() - started < scaled(2.0)  # not the 60 s of the slow item


def test_shutdown_drops_waiting_items_but_keeps_due_ones():
    clock = FakeClock()
    q = DelayingQueue(clock=clock)
    q.add_after("due", 1.0)
    q.add_after("pending", 5.0)
    clock.advance(1.0)
    q.shutdown()
    q.add_after("ignored", 0)
    clock.advance(10.0)
    assert q.get() == ("due", False)
    assert q.get() == (None, True)


def test_fake_clock_refuses_to_go_backwards():
    with pytest.raises(ValueError, match="backwards"):
        FakeClock().advance(-1)


def test_unhashable_items_are_rejected():
    with pytest.raises(TypeError):
        Queue().add(["not", "hashable"])


def test_item_due_while_in_flight_runs_again_after_done_behind_items_due_meanwhile():
    clock = FakeClock()
    q = DelayingQueue(clock=clock)
    q.add("x")
    q.get()
    q.add_after("x", 1.0)  # due while x is being processed: one more run after done
    q.add_after("z", 2.0)
    clock.advance(5.0)
    q.done("x")
    assert [q.get(timeout=0)[0] for _ in range(2)] == ["z", "x"]
    assert q.get(timeout=0) == (None, False)
