"""Freezing what the first syncs built (promop.operator.gcfreeze): only once leading, only once every
queue has drained with nothing in progress (twice in a row), never when stopped or never drained."""

from __future__ import annotations

import threading

from promop.operator.gcfreeze import freeze_after_first_syncs, queues_drained


class _Queue:
    """A stand-in work queue whose length and in-progress count follow a script, one step per check."""

    def __init__(self, script: list[tuple[int, int]]) -> None:
        self.script = list(script)
        self.checks = 0

    def _now(self) -> tuple[int, int]:
        return self.script[min(self.checks, len(self.script) - 1)]

    def __len__(self) -> int:  # asked first in every check: the check's step
        now = self._now()[0]
        self.checks += 1
        return now

    def processing(self) -> int:
        return self.script[min(self.checks - 1, len(self.script) - 1)][1]


def _leading() -> threading.Event:
    e = threading.Event()
    e.set()
    return e


def test_drained_needs_an_empty_queue_and_nothing_in_progress():
    assert queues_drained([_Queue([(0, 0)])])
    assert not queues_drained([_Queue([(1, 0)])])
    assert not queues_drained([_Queue([(0, 1)])])
    assert not queues_drained([_Queue([(0, 0)]), _Queue([(0, 1)])])


def test_freezes_once_drained_twice_in_a_row():
    frozen = []
    # busy, idle for one check only (an item in progress next), then idle for good
    q = _Queue([(3, 1), (0, 0), (0, 1), (0, 0), (0, 0)])
    assert freeze_after_first_syncs([q], _leading(), lambda: False, poll=0.001, freeze=lambda: frozen.append(q.checks))
    assert frozen == [5], "frozen after the second idle check in a row, not after the lone idle one"


def test_waits_for_leadership_and_gives_up_when_stopped():
    frozen = []
    stop = threading.Event()
    not_leading = threading.Event()
    calls = []

    def stopped() -> bool:
        calls.append(1)
        if len(calls) >= 3:
            stop.set()
        return stop.is_set()

    assert not freeze_after_first_syncs([_Queue([(0, 0)])], not_leading, stopped, poll=0.001,
                                        freeze=lambda: frozen.append(1))
    assert frozen == [], "a standby (not leading) has synced nothing: nothing to freeze"


def test_gives_up_when_never_drained():
    frozen = []
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    assert not freeze_after_first_syncs([_Queue([(1, 0)])], _leading(), lambda: False, timeout=10, poll=0.001,
                                        freeze=lambda: frozen.append(1), clock=clock)
    assert frozen == []
