"""The admission webhook's ClusterRole: KEDA's ownership rules read the namespace's ScaledObjects and HPAs."""

from __future__ import annotations


def cluster_role_rules() -> list[dict]:
    return [{"apiGroups": ["keda.sh"], "resources": ["scaledobjects"], "verbs": ["list"]},
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["list"]}]
