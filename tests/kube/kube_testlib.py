"""Helpers shared by the runtime's tests (a uniquely named module: tests/kube is a package)."""

from __future__ import annotations

import time
import uuid
from typing import Callable

from deadlines import scaled


def wait_until(predicate: Callable[[], object], what: str = "condition", timeout: float = 10.0,
               interval: float = 0.005) -> None:
    """Poll `predicate` until it is true; fail with `what` after `timeout` seconds.

    `timeout` is a quiet machine's deadline, times PROMOP_TEST_TIMEOUT_SCALE (deadlines.py);
    a passing test returns as soon as the condition holds.
    """
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def tag(api_client) -> str:
    """Give `api_client` a User-Agent of its own and return it. Sandboxes bind free ports,
    which get reused: a client left running by another test in the same worker can reach
    this test's sandbox, so tests that count API requests count only their own."""
    api_client.user_agent = f"promop-test/{uuid.uuid4().hex}"
    return api_client.user_agent


def own_requests(sandbox, api_client) -> list:
    """The sandbox's request log, only the requests `api_client` (tagged) made."""
    return [r for r in sandbox.requests if r.user_agent == api_client.user_agent]
