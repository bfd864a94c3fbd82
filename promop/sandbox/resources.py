"""The resource types the sandbox serves: the built-in table and those CRDs add."""

from __future__ import annotations

from dataclasses import dataclass, field

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass
class ResourceType:
    """One served group/version/resource. Custom resources share storage across versions."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    scale: dict | None = None  # {"specReplicasPath", "statusReplicasPath", "labelSelectorPath"}
    builtin: bool = True  # strategic merge patch is only for built-in kinds
    crd_name: str | None = None
    storage_version: str = ""
    # DELETE of a built-in kind answers with the object instead of a Status (pods do)
    delete_returns_object: bool = False
    generation: bool = False  # metadata.generation is maintained (workloads, CRDs, CRs)
    verbs: tuple[str, ...] = ALL_VERBS
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.singular = self.singular or self.kind.lower()
        self.storage_version = self.storage_version or self.version

    @property
    def key(self) -> tuple[str, str]:
        """Storage key: custom resources keep one store for all of their versions."""
        return (self.group, self.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _core(plural: str, kind: str, namespaced: bool = True, **kw) -> ResourceType:
    return ResourceType("", "v1", plural, kind, namespaced, **kw)


def builtin_types() -> list[ResourceType]:
    """Built-ins: what an operator and its tests touch, plus kubectl's everyday kinds."""
    from promop.sandbox.scale import with_scale  # /scale on workloads, ReplicaSets served

    return with_scale([
        _core("namespaces", "Namespace", False, short_names=("ns",), status_subresource=True),
        _core("configmaps", "ConfigMap", short_names=("cm",)),
        _core("secrets", "Secret"),
        _core("services", "Service", short_names=("svc",), status_subresource=True,
              categories=("all",)),
        _core("endpoints", "Endpoints", short_names=("ep",)),
        _core("pods", "Pod", short_names=("po",), status_subresource=True, categories=("all",),
              delete_returns_object=True, generation=True),
        _core("events", "Event", short_names=("ev",)),
        _core("serviceaccounts", "ServiceAccount", short_names=("sa",)),
        _core("persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",),
              status_subresource=True),
        _core("nodes", "Node", False, short_names=("no",), status_subresource=True),
        ResourceType("apps", "v1", "statefulsets", "StatefulSet", True, short_names=("sts",),
                     status_subresource=True, categories=("all",), generation=True,
                     scale={"specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector"}),
        ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, short_names=("ds",),
                     status_subresource=True, categories=("all",), generation=True),
        ResourceType("apps", "v1", "deployments", "Deployment", True, short_names=("deploy",),
                     status_subresource=True, categories=("all",), generation=True),
        ResourceType("batch", "v1", "jobs", "Job", True, status_subresource=True, categories=("all",),
                     generation=True),
        ResourceType("events.k8s.io", "v1", "events", "Event", True, short_names=("ev",)),
        ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, short_names=("pdb",),
                     status_subresource=True, generation=True),
        ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True),
        ResourceType("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
        ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
        ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
        ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        ResourceType("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                     "ClusterRoleBinding", False),
        ResourceType("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                     "ValidatingWebhookConfiguration", False, categories=("api-extensions",), generation=True),
        ResourceType("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                     "MutatingWebhookConfiguration", False, categories=("api-extensions",), generation=True),
        ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                     "CustomResourceDefinition", False, short_names=("crd", "crds"),
                     status_subresource=True, categories=("api-extensions",), generation=True),
    ])


def crd_types(crd: dict) -> list[ResourceType]:
    """The served versions of a (validated) CRD, one ResourceType each."""
    spec = crd["spec"]
    names = spec["names"]
    versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
    storage = next((v["name"] for v in spec.get("versions") or [] if v.get("storage")),
                   versions[0]["name"] if versions else "")
    types = []
    for version in versions:
        subresources = version.get("subresources") or {}
        types.append(ResourceType(
            group=spec["group"], version=version["name"], plural=names["plural"],
            kind=names["kind"], namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular", ""), short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            status_subresource="status" in subresources,
            scale=subresources.get("scale"), builtin=False, crd_name=crd["metadata"]["name"],
            storage_version=storage, generation=True,
            extra={"listKind": names.get("listKind") or names["kind"] + "List",
                   "printerColumns": version.get("additionalPrinterColumns") or [],
                   "schema": (version.get("schema") or {}).get("openAPIV3Schema")},
        ))
    return types
