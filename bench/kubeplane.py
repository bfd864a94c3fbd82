"""The kit's control plane for the benchmarks: tests/realkube.py's, not a copy of it.

Why not a class of our own: starting a control plane on a busy machine has failure modes that
took real runs to learn (start.sh picks a free port, and another process may take it before the
bind: CI failed on it once), and tests/realkube.py retries them and puts start.sh's own error in
the exception. The benchmarks are run as `python -m bench.NAME` from the repository's root, so
tests/ is put on the path here, once.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def realkube() -> ModuleType:
    """tests/realkube.py as a module (the same one the test tiers import)."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import realkube as module  # noqa: PLC0415 - on the path only now
    return module


def kit_present() -> bool:
    return realkube().kit_dir() is not None


def start_plane(**kwargs: object) -> tuple[object, float]:
    """A started realkube.ControlPlane (kwargs as its constructor's) and the seconds it took."""
    started = time.monotonic()
    plane = realkube().ControlPlane(**kwargs).start()
    return plane, time.monotonic() - started
