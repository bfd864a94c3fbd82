"""When the first syncs are done: what `promop run` waits for before it writes the feedback held
back until then (Reporter.hold).

The first syncs are done when this replica leads and its controllers' queues have been empty,
with nothing in progress, for two checks in a row. A replica whose queues never drain (objects
that change all the time, a Prometheus whose sync keeps failing and is retried at once) does not
hold its feedback for ever: `cap` seconds after it began to lead, the wait ends all the same.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from promop.operator.gcfreeze import queues_drained


def wait_first_syncs(queues: Sequence[Any], leading: threading.Event, stopped: Callable[[], bool], *,
                     cap: float = 30.0, poll: float = 0.2,
                     clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep) -> str:
    """Block until the first syncs are done ("drained"), `cap` seconds of leading have passed
    ("cap"), or `stopped()` ("stopped")."""
    while not leading.wait(poll):
        if stopped():
            return "stopped"
    deadline = clock() + cap
    idle_checks = 0
    while not stopped():
        idle_checks = idle_checks + 1 if queues_drained(queues) else 0
        if idle_checks >= 2:
            return "drained"
        if clock() >= deadline:
            return "cap"
        sleep(poll)
    return "stopped"
