"""Pause CPython's cyclic garbage collector while a LIST page is decoded and transformed.

Why: decoding a page allocates thousands of dicts, none of them in a reference
cycle, so the collector can find nothing to free in them. Left on, it still
runs every 700 allocations and moves the half-built page, which is alive at
that moment, into the older generations; after enough of that it starts full
collections over the whole heap. With realistic objects (managedFields
included, which the informer drops right after decoding), more than half of
an informer's initial sync went into such collections (see bench/informer).
Paused, the page is decoded, transformed and the discarded parts freed by
reference counting before the collector looks at it; only what is kept is
ever scanned.

When the last pause ends, what was allocated meanwhile goes straight to the
oldest generation (`gc.freeze()` then `gc.unfreeze()`: two list splices).
Without that, every kept object of a page is scanned by a young collection
right after the pause and by a middle one a few pages later, only to reach
the oldest generation anyway: an informer's cache lives until replaced. That
was about a tenth of an initial sync. The price: a reference cycle that
another thread made garbage during the pause waits for the next full
collection instead of a young one. The promotion is skipped when the
application has frozen objects itself (unfreezing would undo its freeze).

The pause is process-wide (the collector is), so it is kept short: only the
CPU-bound decode of one page, never an HTTP wait. Nested and concurrent
pauses share one count; the collector is re-enabled when the last one ends,
and only if it was enabled when the first began.
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
                if gc.get_freeze_count() == 0:
                    gc.freeze()  # every tracked object to the permanent generation...
                    gc.unfreeze()  # ...and back into the oldest one
                gc.enable()
