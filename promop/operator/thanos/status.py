"""The ThanosRuler status (pure): replicas from its StatefulSet, Available and Reconciled conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.operator.workload import status as workload_status

APP = "thanos-ruler"


def pod_selector(name: str) -> str:
    return workload_status.pod_selector(APP, name)


def _expected(spec: Mapping[str, Any]) -> int:
    value = spec.get("replicas")
    return value if isinstance(value, int) and value >= 0 else 1


def ruler_status(ruler: Mapping[str, Any], sts: Mapping[str, Any] | None, *, error: str | None, now: str) -> dict:
    """What status should say: pods from the StatefulSet, Reconciled False with the reason on an error."""
    return workload_status.statefulset_status(ruler, sts, app=APP, expected=_expected(ruler.get("spec") or {}),
                                              error=error, now=now)
