"""The developers' layering, for the parts the aggregation work touches: the sandbox imports no
controller (it once imported promop.adapter.certs), and promop/kube imports nothing of promop but
itself (and the package root, for its version)."""

from __future__ import annotations

import ast
from pathlib import Path

import promop

ROOT = Path(promop.__file__).parent
CONTROLLERS = ("promop.operator", "promop.adapter", "promop.autoscaler", "promop.recommender")


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_sandbox_imports_no_controller() -> None:
    files = sorted((ROOT / "sandbox").glob("*.py"))
    assert files
    bad = {f.name: sorted(m for m in _imports(f) if m.startswith(CONTROLLERS)) for f in files}
    assert {k: v for k, v in bad.items() if v} == {}


def test_kube_runtime_imports_only_itself() -> None:
    bad = {f.name: sorted(m for m in _imports(f) if m.startswith("promop.") and not m.startswith("promop.kube"))
           for f in sorted((ROOT / "kube").glob("*.py"))}
    assert {k: v for k, v in bad.items() if v} == {}
