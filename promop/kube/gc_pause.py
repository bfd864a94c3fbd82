"""Pause CPython's cyclic garbage collector while one LIST page is decoded.

Why: decoding a page allocates thousands of dicts, none of them in a reference
cycle, so the collector can find nothing to free in them. Left on, it runs
every few hundred allocations and scans the half-built page, which is alive at
that moment; after enough of that it starts collections over the whole heap.
Paused, the page is decoded and transformed, and what the transform discards
is freed by reference counting, before the collector looks at it.
`python3 -m bench.informer` measures the pause against the collector left on,
on whichever Python runs it.

The pause is process-wide (the collector is), so it is kept short: only the
CPU-bound decode of one page, never an HTTP wait. Nested and concurrent pauses
share one count; the collector is re-enabled when the last one ends, and only
if it was enabled when the first began. Nothing else is touched: no freezing,
no generation moves.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_depth = 0
_we_disabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _we_disabled
    with _lock:
        if _depth == 0:
            _we_disabled = gc.isenabled()
            if _we_disabled:
                gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _we_disabled:
                _we_disabled = False
                gc.enable()
