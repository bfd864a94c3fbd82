"""When `promop run` releases the feedback it held during the first syncs
(promop.operator.first_syncs): once leading and drained twice in a row, or at the cap, or stopped."""

from __future__ import annotations

import threading

from promop.operator.first_syncs import wait_first_syncs


class _Queue:
    """A work queue whose (queued, in progress) counts follow a script, one step per check."""

    def __init__(self, script: list[tuple[int, int]]) -> None:
        self.script, self.checks = list(script), 0

    def __len__(self) -> int:
        now = self.script[min(self.checks, len(self.script) - 1)][0]
        self.checks += 1
        return now

    def processing(self) -> int:
        return self.script[min(self.checks - 1, len(self.script) - 1)][1]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _leading() -> threading.Event:
    e = threading.Event()
    e.set()
    return e


def test_released_after_two_idle_checks_in_a_row():
    clock = _Clock()
    q = _Queue([(5, 1), (0, 0), (0, 1), (0, 0), (0, 0), (9, 9)])
    assert wait_first_syncs([q], _leading(), lambda: False, clock=clock, sleep=clock.sleep) == "drained"
    assert q.checks == 5, "not after the lone idle check, not later than the second"


def test_a_queue_that_never_drains_is_released_at_the_cap():
    clock = _Clock()
    q = _Queue([(1, 1)])
    assert wait_first_syncs([q], _leading(), lambda: False, cap=30.0, poll=0.2, clock=clock,
                            sleep=clock.sleep) == "cap"
    assert 30.0 <= clock.now < 30.5


def test_the_cap_counts_from_leading_and_stopping_ends_the_wait():
    leading = threading.Event()
    stops = iter([False, False, True])
    assert wait_first_syncs([_Queue([(1, 0)])], leading, lambda: next(stops), poll=0.001) == "stopped"

    clock = _Clock()

    class LeadsLate:
        """Leads after 100 s of waiting: the cap starts then."""

        def wait(self, timeout: float) -> bool:
            clock.sleep(timeout)
            return clock.now >= 100.0

    q = _Queue([(1, 0)] * 100 + [(0, 0)])  # drains 20 s after leading (100 checks of 0.2 s)
    assert wait_first_syncs([q], LeadsLate(), lambda: False, cap=30.0, poll=0.2, clock=clock,
                            sleep=clock.sleep) == "drained"
    assert 120.0 <= clock.now < 121.0
