"""The `scale` subresource of the built-in workloads (Deployment, StatefulSet, ReplicaSet).

The apiserver serves `/scale` for them with the label selector taken from
`spec.selector` (as the string form `kubectl` and the HPA read from
`Scale.status.selector`); custom resources declare their own paths.
"""

from __future__ import annotations

SCALE_PATHS = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
               "labelSelectorPath": ".spec.selector"}
SCALABLE = {("apps", "deployments"), ("apps", "statefulsets"), ("apps", "replicasets")}


def with_scale(types: list) -> list:
    """The built-in types with `/scale` on every workload kind; ReplicaSets and autoscaling/v2
    HorizontalPodAutoscalers served."""
    cls = type(types[0])
    if not any((t.group, t.plural) == ("autoscaling", "horizontalpodautoscalers") for t in types):
        types.append(cls("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
                         short_names=("hpa",), status_subresource=True, categories=("all",), generation=True))
    if not any((t.group, t.plural) == ("apps", "replicasets") for t in types):
        types.append(cls("apps", "v1", "replicasets", "ReplicaSet", True, short_names=("rs",),
                         status_subresource=True, categories=("all",), generation=True))
    for t in types:
        if (t.group, t.plural) in SCALABLE:
            t.scale = dict(SCALE_PATHS)
    return types


def selector_text(selector: object) -> str:
    """A metav1.LabelSelector as its string form (`app=web,tier in (a,b)`); a string passes through."""
    if not isinstance(selector, dict):
        return str(selector or "")
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), sorted(e.get("values") or [])
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)
