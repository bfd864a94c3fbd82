"""Where upstream's reference lives (../shared), for the PrometheusAgent tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def shared_reference() -> Path:
    """../shared/reference of the checkout (or of the main checkout for a worktree); skip when absent."""
    candidates = [Path(os.environ["PROMOP_SHARED"]) / "reference"] if os.environ.get("PROMOP_SHARED") else []
    candidates += [ROOT.parent / "shared" / "reference", ROOT.parent.parent / "shared" / "reference"]
    for path in candidates:
        if (path / "upstream-tests").is_dir():
            return path
    pytest.skip("upstream reference (../shared/reference) not present: the goldens cannot be read")


def agent_golden(name: str) -> Path:
    return shared_reference() / "upstream-tests" / "pkg" / "prometheus" / "testdata" / name
