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
                             clock: Callable[[], float] = time.monotonic) -> bool:
    """Once leading, wait for the first syncs to be done, then `freeze()`; True when it froze.

    Gives up (False) when stopped, or `timeout` seconds after leading began without the queues
    ever draining (a constantly busy operator: its objects stay with the collector, as before).
    """
    while not leading.wait(poll):
        if stopped():
            return False
    deadline = clock() + timeout
    idle_checks = 0
    while clock() < deadline and not stopped():
        idle_checks = idle_checks + 1 if queues_drained(queues) else 0
        if idle_checks >= 2:
            freeze()
            return True
        time.sleep(poll)  # polling the queues' counts: no event says "drained"
    return False
