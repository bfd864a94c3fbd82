"""Helpers shared by the runtime's tests (a uniquely named module: tests/kube is a package)."""

from __future__ import annotations

import time
from typing import Callable


def wait_until(predicate: Callable[[], object], what: str = "condition", timeout: float = 10.0,
               interval: float = 0.005) -> None:
    """Poll `predicate` until it is true; fail with `what` after `timeout` seconds.

    The deadlines are generous (a loaded 2-core CI machine); a passing test
    returns as soon as the condition holds.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
