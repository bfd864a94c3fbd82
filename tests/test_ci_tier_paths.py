"""Every test marked for the real-cluster tier is on the tier's path list in .ci/run.

Why: the tier runs `pytest -m "real_node or real_apiserver" PATHS`, and a marked test outside PATHS
is skipped by the main suites (no PROMOP_REAL_TIER) and never selected by the tier: it would never
run in CI. Two KEDA tests were once left out that way.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"pytest\.mark\.(real_node|real_apiserver)\b|\"(real_node|real_apiserver)\"")


def tier_paths() -> list[Path]:
    text = (ROOT / ".ci" / "run").read_text()
    match = re.search(r"^\s*for p in (.+); do$", text.split("tier_paths=()", 1)[1], re.M)
    assert match, "the tier's `for p in ...; do` line is not in .ci/run"
    paths: list[Path] = []
    for word in match.group(1).split():
        paths.extend(sorted(ROOT.glob(word)) if any(c in word for c in "*?[") else [ROOT / word])
    return paths


def covered(path: Path, paths: list[Path]) -> bool:
    return any(path == p or p in path.parents for p in paths)


def test_every_marked_test_file_is_on_the_tier_path():
    paths = tier_paths()
    # a conftest.py that marks its directory's tests counts as the directory
    marked = [p.parent if p.name == "conftest.py" else p for p in sorted((ROOT / "tests").rglob("*.py"))
              if p.name != Path(__file__).name and MARKER.search(p.read_text())]
    assert {ROOT / "tests" / "e2e_real", ROOT / "tests" / "real_api"} <= set(marked), marked
    missing = [str(p.relative_to(ROOT)) for p in marked if not covered(p, paths)]
    assert not missing, f"marked for the real tier but not on .ci/run's tier paths: {missing}"
