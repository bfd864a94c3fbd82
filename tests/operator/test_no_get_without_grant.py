"""The ClusterRole grants no `get` on StatefulSets and DaemonSets (promop/operator/rbac.py: they are
read from the informers' caches), so no write of one may fall back to a GET after a conflict.

Why a test of the source: the GET happens only after a 409, a race the RBAC scenario test
(test_operator_rbac.py) hits only under load: it once saw the ThanosRuler's StatefulSet create
refetch (`refetch=current is None`), which on a real cluster is a 403 and a failed sync.
"""

from __future__ import annotations

import ast
from pathlib import Path

from promop.operator.rbac import PERMISSIONS

OPERATOR = Path(__file__).resolve().parents[2] / "promop" / "operator"
CACHE_FED = {"STATEFULSETS": ("apps", "statefulsets"), "DAEMONSETS": ("apps", "daemonsets")}


def _apply_calls() -> list[tuple[str, int, str, ast.Call]]:
    found = []
    for path in sorted(OPERATOR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "apply"
                    and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in CACHE_FED):
                found.append((str(path.relative_to(OPERATOR)), node.lineno, node.args[0].id, node))
    return found


def test_the_role_grants_no_get_on_the_cache_fed_workloads():
    granted = {(group, resource): verbs for group, resource, verbs in PERMISSIONS}
    for group_resource in CACHE_FED.values():
        assert "get" not in granted[group_resource], group_resource


def test_no_statefulset_or_daemonset_write_refetches_after_a_conflict():
    calls = _apply_calls()
    assert any(name == "STATEFULSETS" for _, _, name, _ in calls), "no StatefulSet apply found: the test is stale"
    for where, line, name, call in calls:
        refetch = next((k.value for k in call.keywords if k.arg == "refetch"), None)
        assert isinstance(refetch, ast.Constant) and refetch.value is False, (
            f"{where}:{line}: apply({name}, ...) must pass refetch=False (a GET the ClusterRole does not grant)")
