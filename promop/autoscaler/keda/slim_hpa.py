"""What the ScaledObject controller keeps of an HPA in its informer cache.

At 10,000 ScaledObjects the HPA informer held 10,000 whole HPAs (status.currentMetrics, conditions with
timestamps, creationTimestamp, generation, ...). The controller reads only:

- metadata name/namespace (keys, the index, `_enqueue_hpa_owner`), uid, resourceVersion (the update's
  precondition), labels and annotations (`hpa_differs`, the update keeps the existing ones, the
  `validations.keda.sh/hpa-ownership` annotation), ownerReferences (`owned_by`, the owner enqueue,
  the webhook's ownership rule), deletionTimestamp;
- the whole spec (`hpa_differs` compares it to the desired one; the target index reads scaleTargetRef);
- status.conditions' type, status, reason and message (`hpa_active_condition`, `hpa_not_working`).

`promop keda explain` GETs the HPA itself, so it never reads this cache. A new reader of the cache
must add its field here: tests/keda/test_runtime_memory.py fails for a field kept that is not listed.

The strings are shared with the other cached HPAs and ScaledObjects (shared_strings.py).
"""

from __future__ import annotations

from promop.autoscaler.keda.shared_strings import shared_object

HPA_METADATA_KEPT = ("name", "namespace", "uid", "resourceVersion", "labels", "annotations",
                     "ownerReferences", "deletionTimestamp")
HPA_CONDITION_KEPT = ("type", "status", "reason", "message")


def slim_hpa(obj: dict) -> dict:
    """The HPA as the controller reads it (see the module docstring); fields absent stay absent."""
    meta = obj.get("metadata") or {}
    out: dict = {"metadata": {k: meta[k] for k in HPA_METADATA_KEPT if k in meta}}
    if "spec" in obj:
        out["spec"] = obj["spec"]
    conditions = (obj.get("status") or {}).get("conditions")
    if conditions:
        out["status"] = {"conditions": [{k: c[k] for k in HPA_CONDITION_KEPT if k in c}
                                        for c in conditions if isinstance(c, dict)]}
    return shared_object(out)
