"""One factor for every test deadline (a uniquely named module on the tests/ path).

Deadlines only bound failures: a passing test returns as soon as its condition holds. So the
timeouts written in the tests are what a quiet machine needs, and they are stretched by
PROMOP_TEST_TIMEOUT_SCALE (default 3) for a loaded 2-core CI machine running `pytest -n 2` at a
load of 15 and more. A wait scaled this way still fails when the awaited thing never happens.
"""

from __future__ import annotations

import os

TIMEOUT_SCALE = float(os.environ.get("PROMOP_TEST_TIMEOUT_SCALE", "3"))


def scaled(seconds: float) -> float:
    """`seconds` as a deadline on this machine (times PROMOP_TEST_TIMEOUT_SCALE)."""
    return seconds * TIMEOUT_SCALE
