"""The status of a workload object run by one StatefulSet (Alertmanager, ThanosRuler) (pure).

Replica counts come from the StatefulSet's status; Available says whether the pods are ready
(False with none, Degraded with some), Reconciled whether the last sync succeeded. Both controllers
report exactly this, upstream's shape, so one function builds it for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.operator.status import AVAILABLE, RECONCILED, condition, keep_transition_times, statefulset_counts


def pod_selector(app: str, name: str) -> str:
    """The label selector of every pod of workload `name` (app `alertmanager`, `thanos-ruler`), for the
    scale subresource."""
    labels = {app: name, "app.kubernetes.io/instance": name,
              "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": app}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _available(sts_name: str, sts: Mapping[str, Any] | None, available: int, expected: int,
               generation: int, now: str) -> dict:
    if sts is None:
        return condition(AVAILABLE, "False", "StatefulSetNotFound", f"StatefulSet {sts_name} not found",
                         generation, now)
    if expected > 0 and available == 0:
        return condition(AVAILABLE, "False", "NoPodReady", f"0/{expected} pods ready", generation, now)
    if available < expected:
        return condition(AVAILABLE, "Degraded", "SomePodsNotReady", f"{available}/{expected} pods ready",
                         generation, now)
    return condition(AVAILABLE, "True", "", "", generation, now)


def statefulset_status(obj: Mapping[str, Any], sts: Mapping[str, Any] | None, *, app: str, expected: int,
                       error: str | None, reconciled_reason: str = "", reconciled_message: str = "",
                       now: str) -> dict:
    """What `obj`'s status should say, from its StatefulSet `<app>-<name>` (None: absent) expected to run
    `expected` pods: Reconciled False with `error` as the message after a failed sync."""
    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    generation = int(md.get("generation") or 0)
    counts = statefulset_counts(sts)
    avail = _available(f"{app}-{md.get('name')}", sts, counts["availableReplicas"], expected, generation, now)
    if error:
        rec = condition(RECONCILED, "False", "ReconciliationFailed", error, generation, now)
    else:
        rec = condition(RECONCILED, "True", reconciled_reason, reconciled_message, generation, now)
    old = ((obj.get("status") or {}).get("conditions")) or []
    return {
        "paused": bool(spec.get("paused", False)),
        **counts,
        "selector": pod_selector(app, md.get("name", "")),
        "conditions": keep_transition_times(old, [avail, rec]),
    }
