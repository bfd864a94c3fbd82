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


def _gc_calls(calls: list) -> dict:
    """pause/resume/collect stand-ins that record their order in `calls`."""
    return {"pause": lambda: calls.append("pause"), "resume": lambda: calls.append("resume"),
            "collect": lambda: calls.append("collect")}


def test_freezes_once_drained_twice_in_a_row():
    frozen = []
    calls: list = []
    # busy, idle for one check only (an item in progress next), then idle for good
    q = _Queue([(3, 1), (0, 0), (0, 1), (0, 0), (0, 0)])
    assert freeze_after_first_syncs([q], _leading(), lambda: False, poll=0.001,
                                    freeze=lambda: (frozen.append(q.checks), calls.append("freeze")), **_gc_calls(calls))
    assert frozen == [5], "frozen after the second idle check in a row, not after the lone idle one"
    # the collector paused for the first syncs; their garbage collected before the freeze, not frozen
    assert calls == ["pause", "collect", "freeze", "resume"]


def test_the_collector_is_paused_only_while_the_first_syncs_run():
    """Paused once leading, while the queue is busy; resumed when the first syncs are done."""
    import gc

    assert gc.isenabled()
    seen = []
    q = _Queue([(2, 1), (1, 1), (0, 0), (0, 0)])

    class Observed:
        def __len__(self) -> int:
            seen.append(gc.isenabled())
            return len(q)

        def processing(self) -> int:
            return q.processing()

    wrapper = Observed()
    try:
        assert freeze_after_first_syncs([wrapper], _leading(), lambda: False, poll=0.001, freeze=lambda: None)
    finally:
        gc.enable()
    assert seen and not any(seen), "the collector ran during the first syncs"
    assert gc.isenabled(), "the collector was not resumed"


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

    gc_calls: list = []
    assert not freeze_after_first_syncs([_Queue([(0, 0)])], not_leading, stopped, poll=0.001,
                                        freeze=lambda: frozen.append(1), **_gc_calls(gc_calls))
    assert frozen == [], "a standby (not leading) has synced nothing: nothing to freeze"
    assert gc_calls == [], "a standby keeps its collector running"


def test_gives_up_when_never_drained():
    frozen = []
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    gc_calls: list = []
    assert not freeze_after_first_syncs([_Queue([(1, 0)])], _leading(), lambda: False, timeout=10, poll=0.001,
                                        freeze=lambda: frozen.append(1), clock=clock, **_gc_calls(gc_calls))
    assert frozen == []
    assert gc_calls == ["pause", "resume"], "a busy operator gets its collector back when the wait gives up"


def test_the_collector_comes_back_after_pause_for_even_if_never_drained():
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    calls: list = []
    q = _Queue([(1, 0)] * 8 + [(0, 0)])
    assert freeze_after_first_syncs([q], _leading(), lambda: False, timeout=100, poll=0.001, pause_for=3,
                                    freeze=lambda: calls.append("freeze"), clock=clock, **_gc_calls(calls))
    assert calls == ["pause", "resume", "collect", "freeze"], "resumed once, after pause_for, not again at the end"
