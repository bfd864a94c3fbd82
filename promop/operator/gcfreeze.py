"""Freeze, once more, what the operator's first syncs built (`promop run` and `promop demo` only).

The caches are frozen once synced (Operator.after_sync): the objects they hold then live as long
as the process, and out of the cyclic collector's sight a full collection no longer walks them.
The first syncs then build as much again: every Prometheus's render cache (per monitor, its job
dicts and texts) and result. At 10,000 ServiceMonitors, measured on the real control plane
(bench.scale, a quiet machine), each full collection of the operator then walked those for ~400 ms
and found nothing to free, every 10-15 s while the first sync's status.bindings were written; an
edit whose sync met one waited for it (the p99 of edit -> Secret). These objects also live until
their monitor changes, so they are frozen too, once, when the first syncs are done: when the
Prometheus queue has been empty with nothing in progress for two checks in a row. Frozen objects
still free by reference count; only a reference cycle among them would outlive its last use.

The cyclic collector is also paused while those first syncs run (from the moment this replica
leads until they are done): their renders allocate millions of objects that live on, and each
full collection walks everything allocated so far. At 30,000 ServiceMonitors that was ~0.6 s of
a 4.3 s first render (measured in process, the caches already frozen). What they built that is
garbage (reference cycles among it) is collected once, just before the freeze, so none of it is
frozen; the collector runs again from then on, when the wait gives up (timeout, stop), or after
`pause_for` seconds of first syncs at most (an operator that never drains keeps its collector).
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any, Callable, Sequence


def queues_drained(queues: Sequence[Any]) -> bool:
    """Nothing queued (due) and nothing in progress in any of `queues`."""
    return all(len(q) == 0 and q.processing() == 0 for q in queues)


def freeze_after_first_syncs(queues: Sequence[Any], leading: threading.Event, stopped: Callable[[], bool], *,
                             timeout: float = 600.0, poll: float = 0.5,
                             freeze: Callable[[], None] = gc.freeze,
                             clock: Callable[[], float] = time.monotonic,
                             pause: Callable[[], None] = gc.disable, resume: Callable[[], None] = gc.enable,
                             collect: Callable[[], Any] = gc.collect, pause_for: float = 120.0) -> bool:
    """Once leading, pause the cyclic collector, wait for the first syncs to be done, then
    `collect()` and `freeze()`; True when it froze. The collector is resumed in every case.

    Gives up (False) when stopped, or `timeout` seconds after leading began without the queues
    ever draining (a constantly busy operator: its objects stay with the collector, as before).
    """
    while not leading.wait(poll):
        if stopped():
            return False
    pause()
    paused = True
    try:
        started = clock()
        deadline = started + timeout
        idle_checks = 0
        while clock() < deadline and not stopped():
            if paused and clock() - started > pause_for:
                resume()  # first syncs this long: the collector's pauses matter less than its absence
                paused = False
            idle_checks = idle_checks + 1 if queues_drained(queues) else 0
            if idle_checks >= 2:
                collect()  # the garbage cycles of the first syncs: freed, not frozen
                freeze()
                return True
            time.sleep(poll)  # polling the queues' counts: no event says "drained"
        return False
    finally:
        if paused:
            resume()
