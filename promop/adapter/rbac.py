"""The adapter's ClusterRole: read (never write) the objects its metrics describe.

`*` requests list objects of the resource asked about, metrics.k8s.io lists pods and
nodes, and series labels may name namespaces, services and workloads. Discovery
(/api, /apis) is allowed to every authenticated user by the default roles. TokenReviews
and SubjectAccessReviews come from `system:auth-delegator`, bound separately.
"""

from __future__ import annotations

_READ = ["get", "list", "watch"]


def cluster_role_rules() -> list[dict]:
    return [
        {"apiGroups": [""], "resources": ["namespaces", "nodes", "pods", "services", "endpoints",
                                          "persistentvolumeclaims", "persistentvolumes"], "verbs": _READ},
        {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "daemonsets", "replicasets"],
         "verbs": _READ},
        {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": _READ},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": _READ},
    ]
