"""promop.autoscaler.keda.fanout: a ScaledObject's triggers evaluated at once, results in spec order."""

from __future__ import annotations

import threading

import pytest

from deadlines import scaled
from promop.autoscaler.keda.fanout import Fanout


def test_results_keep_the_order_and_items_run_concurrently():
    fan = Fanout(4)
    started = threading.Barrier(3, timeout=scaled(10))   # all three must be running at once to pass it

    def work(i: int) -> int:
        started.wait()
        return i * 10

    try:
        assert fan.map(work, [3, 1, 2]) == [30, 10, 20]
    finally:
        fan.close()


def test_one_item_runs_in_the_calling_thread_and_makes_no_pool():
    fan = Fanout(2)
    assert fan.map(lambda _: threading.current_thread().name, ["x"]) == [threading.current_thread().name]
    assert fan._pool is None
    assert fan.map(lambda _: 1, []) == []


def test_an_exception_is_raised_as_by_a_comprehension():
    fan = Fanout(2)

    def work(i: int) -> int:
        if i == 2:
            raise ValueError("boom 2")
        return i

    try:
        with pytest.raises(ValueError, match="boom 2"):
            fan.map(work, [1, 2, 3])
    finally:
        fan.close()


def test_after_close_it_still_answers_sequentially():
    fan = Fanout(2)
    fan.close()
    assert fan.map(lambda i: i + 1, [1, 2]) == [2, 3]
