"""Where ../shared/reference/upstream-tests is, from the main checkout or a worktree under wt/."""

from __future__ import annotations

from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]


def upstream_tests() -> Path:
    """../shared/reference/upstream-tests; skips the test (with the reason) when it is not checked out."""
    for base in (_ROOT.parent, _ROOT.parent.parent):
        path = base / "shared" / "reference" / "upstream-tests"
        if path.is_dir():
            return path
    pytest.skip("../shared/reference/upstream-tests not present (../shared is not checked out)")
    raise AssertionError("unreachable")
