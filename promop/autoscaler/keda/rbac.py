"""The API permissions of the ScaledObject controller (merged into `promop autoscaler`'s ClusterRole).

A sandbox test records every request the controller makes and checks each is granted here; a
real-cluster test runs it under the bundle's ServiceAccount token and checks no request is refused.
"""

from __future__ import annotations

GROUP = "keda.sh"

# (apiGroup, resource, verbs)
PERMISSIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (GROUP, "scaledobjects", ("list", "watch", "patch")),            # finalizer and label: a metadata patch
    (GROUP, "scaledobjects/status", ("patch",)),
    # an HPA owned by a ScaledObject (blockOwnerDeletion): OwnerReferencesPermissionEnforcement asks for this
    (GROUP, "scaledobjects/finalizers", ("update",)),
    (GROUP, "scaledjobs", ("list", "watch", "patch")),
    (GROUP, "scaledjobs/status", ("patch",)),
    (GROUP, "scaledjobs/finalizers", ("update",)),
    ("batch", "jobs", ("list", "watch", "create", "delete")),
    (GROUP, "triggerauthentications", ("list", "watch")),
    (GROUP, "clustertriggerauthentications", ("list", "watch")),
    (GROUP, "triggerauthentications/status", ("patch",)),           # status.scaledobjects
    (GROUP, "clustertriggerauthentications/status", ("patch",)),
    ("autoscaling", "horizontalpodautoscalers", ("list", "watch", "create", "update", "delete")),
    ("apps", "deployments", ("list", "watch")),
    ("apps", "statefulsets", ("list", "watch")),
    # any kind with a /scale subresource, as KEDA's ClusterRole grants (*/scale in every group)
    ("*", "*/scale", ("get", "update")),
    ("", "secrets", ("get",)),          # TriggerAuthentication secretTargetRef, read by name
    # fallback for a Value metric counts the target's ready pods; a ScaledJob's pending count watches
    # its Jobs' pods (label scaledjob.keda.sh/name)
    ("", "pods", ("list", "watch")),
    ("", "events", ("create",)),
)

# granted for the apiserver's admission or rare paths, not seen in a plain sandbox run
NOT_ALWAYS_USED = {(GROUP, "scaledobjects/finalizers", "update"), (GROUP, "scaledjobs/finalizers", "update"), ("", "pods", "list"),
                   ("", "pods", "watch"),
                   ("autoscaling", "horizontalpodautoscalers", "delete"), (GROUP, "triggerauthentications", "list"),
                   ("", "secrets", "get"), (GROUP, "clustertriggerauthentications/status", "patch")}


def granted() -> set[tuple[str, str, str]]:
    return {(g, r, v) for g, r, verbs in PERMISSIONS for v in verbs}
