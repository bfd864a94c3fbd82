"""One wheel of this checkout per test run, for the tests that check what an installed wheel carries (a uniquely
named module on the tests/ path, as deadlines.py).

Building the wheel takes seconds of pip on a loaded machine, and two tests need one: the first to ask builds it,
the others reuse it. A session fixture would not do under `pytest -n 2` (each worker has its own session), so the
wheel lives next to the workers' own temporary directories, in the directory pytest-xdist gives them in common,
and a file lock makes one worker build while another waits.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what a checkout holds besides the package: the build's own leftovers, and what the wheel must not need
NOT_COPIED = (".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "tests", "bench",
              "_shipped")


@dataclass(frozen=True)
class Built:
    """The wheel, or None with pip's output when it could not be built (e.g. no network for the build backend)."""

    wheel: Path | None
    output: str


def checkout_wheel(tmp_path_factory) -> Built:
    """The wheel built from a copy of this checkout (so that build/ and *.egg-info never land in the tree under
    test), once per test run."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    where = shared / "promop-checkout-wheel"
    with open(shared / "promop-checkout-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        result = where / "result.json"
        if not result.exists():
            _build(where, result)
        built = json.loads(result.read_text())
    return Built(Path(built["wheel"]) if built["wheel"] else None, built["output"])


def _build(where: Path, result: Path) -> None:
    shutil.rmtree(where, ignore_errors=True)  # a build interrupted before writing its result
    src, dist = where / "src", where / "dist"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*NOT_COPIED))
    # without build isolation when the machine can build wheels itself (nothing downloaded); otherwise pip
    # fetches the build backend pyproject.toml names, as it would for any user
    isolation = [] if importlib.util.find_spec("wheel") is None else ["--no-build-isolation"]
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(dist),
                           str(src)], capture_output=True, text=True, timeout=600)
    wheels = sorted(dist.glob("promop-*.whl")) if proc.returncode == 0 else []
    output = f"pip wheel exited {proc.returncode}, built {[w.name for w in wheels]}:\n{proc.stdout}{proc.stderr}"
    result.write_text(json.dumps({"wheel": str(wheels[0]) if len(wheels) == 1 else None, "output": output}))
