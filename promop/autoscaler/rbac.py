"""The API permissions `promop autoscaler` needs: the single source for its ClusterRole.

A test runs the controller against the sandbox, records every (group, resource,
verb) it requested and checks this table is exactly that (least privilege).
"""

from __future__ import annotations

GROUP = "autoscaling.promop.dev"

# (apiGroup, resource, verbs)
PERMISSIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (GROUP, "memhpas", ("list", "watch")),
    (GROUP, "memhpas/status", ("update",)),
    ("", "pods", ("list", "watch")),
    ("", "events", ("create",)),
    ("apps", "deployments", ("list", "watch")),
    ("apps", "statefulsets", ("list", "watch")),
    ("apps", "replicasets", ("list", "watch")),
    # the built-in workloads are read from the informers' caches; only the write goes through /scale.
    # Another kind with a scale subresource needs get and update on <resource>/scale in its group:
    # add a ClusterRole for it (docs/autoscaling.md).
    ("apps", "deployments/scale", ("update",)),
    ("apps", "statefulsets/scale", ("update",)),
    ("apps", "replicasets/scale", ("update",)),
    ("coordination.k8s.io", "leases", ("get", "create", "update")),
)


# --keda=auto asks whether the ScaledObject CRD is served with a `list` of scaledobjects: granted by the
# ScaledObject controller's table (promop.autoscaler.keda.rbac), which the ClusterRole merges in.
# The controller host's connectivity probe (promop.host.connect) lists one namespace before anything
# else runs: without this a real cluster refuses the autoscaler forever (403 on every retry). The
# in-process test harness passes its own client, so this is not in `granted()`'s exact check.
HOST_PERMISSIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (("", "namespaces", ("list",)),)


def cluster_role_rules() -> list[dict]:
    """PolicyRules grouped per API group and verb set, in a stable order: MemHpa's and the
    ScaledObject controller's (one process runs both)."""
    from promop.autoscaler.keda.rbac import PERMISSIONS as KEDA_PERMISSIONS

    merged: dict[tuple[str, str], set[str]] = {}
    for group, resource, verbs in (*PERMISSIONS, *HOST_PERMISSIONS, *KEDA_PERMISSIONS):
        merged.setdefault((group, resource), set()).update(verbs)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), verb_set in merged.items():
        verbs = tuple(sorted(verb_set))
        grouped.setdefault((group, tuple(sorted(verbs))), []).append(resource)
    return [{"apiGroups": [group], "resources": resources, "verbs": list(verbs)}
            for (group, verbs), resources in grouped.items()]


def granted() -> set[tuple[str, str, str]]:
    return {(g, r, v) for g, r, verbs in PERMISSIONS for v in verbs}
