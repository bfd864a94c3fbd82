"""Resources addressed by group/version/plural, and the URL paths to reach them.

The client is untyped: any resource, built-in or CRD, is a `Resource` value,
so adding a kind never needs generated code.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


def _seg(value: str) -> str:
    return quote(value, safe="")


@dataclass(frozen=True)
class Resource:
    """A Kubernetes API resource, e.g. `Resource("", "v1", "configmaps", kind="ConfigMap")`."""

    group: str
    version: str
    plural: str
    namespaced: bool = True
    kind: str = ""

    @property
    def api_version(self) -> str:
        """`v1` for the core group, else `group/version`."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    @property
    def label(self) -> str:
        """A short stable name for logs and metric labels: `configmaps`, `leases.coordination.k8s.io`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path, e.g. `/api/v1/namespaces/x/configmaps/y`.

        A namespaced resource without a namespace gives the all-namespaces
        collection; a cluster-scoped one ignores `namespace`.
        """
        return self._build(namespace and _seg(namespace), name and _seg(name), subresource)

    def endpoint(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The path with names replaced by placeholders: a bounded metric label."""
        return self._build(namespace and "{namespace}", name and "{name}", subresource)

    def _build(self, namespace: str | None, name: str | None, subresource: str | None) -> str:
        parts = [self.base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
        if subresource:
            if not name:
                raise ValueError(f"{self.label}: subresource {subresource!r} needs an object name")
            parts.append(subresource)
        return "/".join(parts)


NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")
SECRETS = Resource("", "v1", "secrets", kind="Secret")
SERVICES = Resource("", "v1", "services", kind="Service")
ENDPOINTS = Resource("", "v1", "endpoints", kind="Endpoints")
PODS = Resource("", "v1", "pods", kind="Pod")
EVENTS = Resource("", "v1", "events", kind="Event")
STATEFULSETS = Resource("apps", "v1", "statefulsets", kind="StatefulSet")
LEASES = Resource("coordination.k8s.io", "v1", "leases", kind="Lease")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", kind="Role")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", kind="RoleBinding")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False, kind="CustomResourceDefinition")

MONITORING_GROUP = "monitoring.coreos.com"
PROMETHEUSES = Resource(MONITORING_GROUP, "v1", "prometheuses", kind="Prometheus")
SERVICEMONITORS = Resource(MONITORING_GROUP, "v1", "servicemonitors", kind="ServiceMonitor")
PODMONITORS = Resource(MONITORING_GROUP, "v1", "podmonitors", kind="PodMonitor")
PROMETHEUSRULES = Resource(MONITORING_GROUP, "v1", "prometheusrules", kind="PrometheusRule")
PROBES = Resource(MONITORING_GROUP, "v1", "probes", kind="Probe")
SCRAPECONFIGS = Resource(MONITORING_GROUP, "v1alpha1", "scrapeconfigs", kind="ScrapeConfig")
