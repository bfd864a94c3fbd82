"""The API permissions `promop run` needs: the single source for the install bundle's ClusterRole.

A test runs the operator against the sandbox, collects every (group, resource,
verb) it requested, and checks this table is exactly that: no missing verb (the
operator would fail in a cluster), no extra one (least privilege).
"""

from __future__ import annotations

MONITORING = "monitoring.coreos.com"
READ = ("get", "list", "watch")
OWN = ("get", "list", "watch", "create", "update", "delete")

# (apiGroup, resource, verbs)
PERMISSIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (MONITORING, "prometheuses", ("get", "list", "watch")),  # get: is it still there before a create
    (MONITORING, "prometheuses/status", ("update",)),
    (MONITORING, "servicemonitors", ("list", "watch")),
    (MONITORING, "servicemonitors/status", ("update",)),
    (MONITORING, "podmonitors", ("list", "watch")),
    (MONITORING, "podmonitors/status", ("update",)),
    (MONITORING, "prometheusrules", ("list", "watch")),
    (MONITORING, "prometheusrules/status", ("update",)),
    (MONITORING, "probes", ("list", "watch")),
    (MONITORING, "probes/status", ("update",)),
    (MONITORING, "scrapeconfigs", ("list", "watch")),
    (MONITORING, "scrapeconfigs/status", ("update",)),
    ("", "secrets", OWN),
    ("", "configmaps", OWN),
    ("", "services", ("get", "create", "update")),
    ("", "namespaces", ("list", "watch")),
    ("", "events", ("create",)),
    ("apps", "statefulsets", ("list", "watch", "create", "update", "delete")),
    ("coordination.k8s.io", "leases", ("get", "create", "update")),
    # the Alertmanager controller (promop/operator/alertmanager)
    (MONITORING, "alertmanagers", ("get", "list", "watch")),
    (MONITORING, "alertmanagers/status", ("update",)),
    (MONITORING, "alertmanagerconfigs", ("list", "watch")),
    (MONITORING, "alertmanagerconfigs/status", ("update",)),
    # the ThanosRuler controller (promop/operator/thanos)
    (MONITORING, "thanosrulers", ("get", "list", "watch")),
    (MONITORING, "thanosrulers/status", ("update",)),
    # the PrometheusAgent controller (promop/operator/agent)
    (MONITORING, "prometheusagents", ("list", "watch")),
    (MONITORING, "prometheusagents/status", ("update",)),
    ("apps", "daemonsets", ("list", "watch", "create", "update", "delete")),
    # fast reload: a Role per Prometheus letting its pods read their own config objects
    ("rbac.authorization.k8s.io", "roles", ("get", "create", "update", "delete")),
    ("rbac.authorization.k8s.io", "rolebindings", ("get", "create", "update", "delete")),
)
# Only with `--manage-crds` (`promop manifests --manage-crds`).
MANAGE_CRDS_PERMISSIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("apiextensions.k8s.io", "customresourcedefinitions", ("get", "create", "update")),
)
# Only with `--kubelet-service` (`promop manifests --kubelet-service=NS/NAME`).
KUBELET_PERMISSIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "nodes", ("list", "watch")),
    ("", "endpoints", ("get", "create", "update")),
    ("discovery.k8s.io", "endpointslices", ("list", "create", "update", "delete")),
)

# Only with `--repair-policy-for-statefulsets` (`promop manifests --repair-policy-for-statefulsets=...`): the
# stuck pods are listed, then deleted or evicted (the Eviction subresource honours PodDisruptionBudgets).
REPAIR_PERMISSIONS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "none": (),
    "delete": (("", "pods", ("list", "delete")),),
    "evict": (("", "pods", ("list",)), ("", "pods/eviction", ("create",))),
}


def _table(manage_crds: bool = False, kubelet: bool = False, repair: str = "none") -> tuple:
    return (*PERMISSIONS, *(MANAGE_CRDS_PERMISSIONS if manage_crds else ()), *(KUBELET_PERMISSIONS if kubelet else ()),
            *REPAIR_PERMISSIONS[repair])


def cluster_role_rules(manage_crds: bool = False, kubelet: bool = False, repair: str = "none") -> list[dict]:
    """PolicyRules grouped per API group and verb set, in a stable order."""
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for group, resource, verbs in _table(manage_crds, kubelet, repair):
        grouped.setdefault((group, tuple(sorted(verbs))), []).append(resource)
    return [{"apiGroups": [group], "resources": resources, "verbs": list(verbs)}
            for (group, verbs), resources in grouped.items()]


def granted(manage_crds: bool = False, kubelet: bool = False, repair: str = "none") -> set[tuple[str, str, str]]:
    """Every (group, resource[/subresource], verb) the ClusterRole grants."""
    return {(g, r, v) for g, r, verbs in _table(manage_crds, kubelet, repair) for v in verbs}
