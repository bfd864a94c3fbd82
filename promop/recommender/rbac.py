"""The recommender's ClusterRole: exactly what it reads and writes, nothing more (tested)."""

from __future__ import annotations


def cluster_role_rules() -> list[dict]:
    return [
        # VPAs: watch them, write their status (never the spec).
        {"apiGroups": ["autoscaling.k8s.io"], "resources": ["verticalpodautoscalers"],
         "verbs": ["list", "watch"]},
        {"apiGroups": ["autoscaling.k8s.io"], "resources": ["verticalpodautoscalers/status"],
         "verbs": ["patch"]},
        # Checkpoints: read at start, write every interval, garbage-collect.
        {"apiGroups": ["autoscaling.k8s.io"], "resources": ["verticalpodautoscalercheckpoints"],
         "verbs": ["list", "create", "patch", "delete"]},
        # Pods (labels, OOM kills in lastState); targets and the controllers of owner chains.
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "daemonsets", "replicasets"],
         "verbs": ["get"]},
        {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["replicationcontrollers"], "verbs": ["get"]},
        # Custom targets: their scale subresource's selector.
        {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["get"]},
        # --metrics-source=metrics-api
        {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["list"]},
        # --leader-elect
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
    ]
