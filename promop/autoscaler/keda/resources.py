"""The API resources the ScaledObject controller reads and writes."""

from __future__ import annotations

from promop.kube.resources import Resource

GROUP = "keda.sh"
SCALEDOBJECTS = Resource(GROUP, "v1alpha1", "scaledobjects", kind="ScaledObject")
SCALEDJOBS = Resource(GROUP, "v1alpha1", "scaledjobs", kind="ScaledJob")
TRIGGERAUTHENTICATIONS = Resource(GROUP, "v1alpha1", "triggerauthentications", kind="TriggerAuthentication")
CLUSTERTRIGGERAUTHENTICATIONS = Resource(GROUP, "v1alpha1", "clustertriggerauthentications", namespaced=False,
                                         kind="ClusterTriggerAuthentication")
HPAS = Resource("autoscaling", "v2", "horizontalpodautoscalers", kind="HorizontalPodAutoscaler")
DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment")
STATEFULSETS = Resource("apps", "v1", "statefulsets", kind="StatefulSet")
JOBS = Resource("batch", "v1", "jobs", kind="Job")
CACHED_TARGETS = {("apps", "Deployment"): DEPLOYMENTS, ("apps", "StatefulSet"): STATEFULSETS}
COMPONENT = "keda-operator"      # Events' source, as KEDA's (dashboards filter on it)


def plural(kind: str) -> str:
    """The resource name of a kind by the API's naming convention (Ingress -> ingresses)."""
    low = kind.lower()
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return low + "es"
    if low.endswith("y") and low[-2:-1] not in ("a", "e", "i", "o", "u"):
        return low[:-1] + "ies"
    return low + "s"


def target_resource(api_version: str, kind: str) -> Resource:
    """The scale target's resource from scaleTargetRef's apiVersion and kind."""
    group, _, version = (api_version or "apps/v1").rpartition("/")
    cached = CACHED_TARGETS.get((group, kind))
    if cached is not None and version == "v1":
        return cached
    return Resource(group, version, plural(kind), kind=kind)
