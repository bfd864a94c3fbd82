"""Which Kubernetes resources exist: the adapter's RESTMapper.

Labels name resources loosely (`pod`, `pods`, `Pod`, `deployment`,
`kube_apps_deployment`); upstream normalises them through the RESTMapper and
skips what it cannot resolve. This does the same from a table of built-in
resources, extended by the API server's discovery when one is reachable.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable

from promop.adapter.config import GroupResource

log = logging.getLogger("promop.adapter")


@dataclass(frozen=True)
class ResourceInfo:
    group: str
    version: str
    resource: str       # plural
    singular: str
    kind: str
    namespaced: bool

    @property
    def group_resource(self) -> GroupResource:
        return GroupResource(self.group, self.resource)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool = True) -> ResourceInfo:
    return ResourceInfo(group, version, plural, kind.lower(), kind, namespaced)


BUILTIN = (
    _r("", "v1", "pods", "Pod"), _r("", "v1", "namespaces", "Namespace", False),
    _r("", "v1", "nodes", "Node", False), _r("", "v1", "services", "Service"),
    _r("", "v1", "endpoints", "Endpoints"), _r("", "v1", "configmaps", "ConfigMap"),
    _r("", "v1", "secrets", "Secret"), _r("", "v1", "serviceaccounts", "ServiceAccount"),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    _r("", "v1", "persistentvolumes", "PersistentVolume", False),
    _r("", "v1", "replicationcontrollers", "ReplicationController"), _r("", "v1", "events", "Event"),
    _r("", "v1", "limitranges", "LimitRange"), _r("", "v1", "resourcequotas", "ResourceQuota"),
    _r("apps", "v1", "deployments", "Deployment"), _r("apps", "v1", "statefulsets", "StatefulSet"),
    _r("apps", "v1", "daemonsets", "DaemonSet"), _r("apps", "v1", "replicasets", "ReplicaSet"),
    _r("apps", "v1", "controllerrevisions", "ControllerRevision"),
    _r("batch", "v1", "jobs", "Job"), _r("batch", "v1", "cronjobs", "CronJob"),
    _r("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
    _r("networking.k8s.io", "v1", "ingresses", "Ingress"),
    _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"),
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"),
    _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    _r("coordination.k8s.io", "v1", "leases", "Lease"),
    _r("events.k8s.io", "v1", "events", "Event"),
)


def sanitize_group(group: str) -> str:
    """How a group appears in a label template: `.` and `-` become `_`."""
    return group.replace(".", "_").replace("-", "_")


class ResourceMapper:
    """Resolve loose resource names to known resources, like a RESTMapper."""

    def __init__(self, infos: Iterable[ResourceInfo] = BUILTIN) -> None:
        self.infos: list[ResourceInfo] = []
        self._by_gr: dict[GroupResource, ResourceInfo] = {}
        self._normalized: dict[GroupResource, ResourceInfo | None] = {}   # every request resolves its resource
        self.add(infos)

    def add(self, infos: Iterable[ResourceInfo]) -> None:
        self._normalized = {}
        for info in infos:
            key = info.group_resource
            if key in self._by_gr:
                self.infos = [i for i in self.infos if i.group_resource != key]
            self._by_gr[key] = info
            self.infos.append(info)

    def normalize(self, gr: GroupResource) -> ResourceInfo | None:
        """The resource `gr` names (plural, singular or kind, any case), or None.

        An empty group matches any group, preferring the core group, then the
        first discovered. A group may be given sanitised (`networking_k8s_io`).
        """
        try:
            return self._normalized[gr]
        except KeyError:
            pass
        found_info = self._normalize(gr)
        if len(self._normalized) < 4096:   # requests name resources: keep a bound on what strangers can add
            self._normalized[gr] = found_info
        return found_info

    def _normalize(self, gr: GroupResource) -> ResourceInfo | None:
        name = gr.resource.lower()
        found = []
        for info in self.infos:
            if name not in (info.resource, info.singular, info.kind.lower()):
                continue
            if gr.group and gr.group != info.group and gr.group != sanitize_group(info.group):
                continue
            found.append(info)
        if not found:
            return None
        core = [i for i in found if i.group == ""]
        return (core or found)[0]

    def get(self, gr: GroupResource) -> ResourceInfo | None:
        return self._by_gr.get(gr) or self.normalize(gr)

    @classmethod
    def from_discovery(cls, get_json: Any) -> "ResourceMapper":
        """Built-ins plus everything the API server lists (preferred versions); `get_json(path)`."""
        mapper = cls()
        try:
            mapper.add(discover(get_json))
        except Exception as exc:  # discovery is a bonus; the built-ins still work
            log.warning("resource discovery failed, using built-in resources only: %s", exc)
        return mapper


def discover(get_json: Any) -> list[ResourceInfo]:
    """Resources from /api/v1 and each group's preferred version, via `get_json(path)`."""
    out: list[ResourceInfo] = []

    def add(group: str, version: str, doc: dict) -> None:
        for r in doc.get("resources") or ():
            name = r.get("name", "")
            if "/" in name:
                continue  # subresource
            kind = r.get("kind", "")
            out.append(ResourceInfo(group, version, name, r.get("singularName") or kind.lower(), kind,
                                    bool(r.get("namespaced"))))

    add("", "v1", get_json("/api/v1"))
    groups = get_json("/apis")
    for g in groups.get("groups") or ():
        pv = (g.get("preferredVersion") or {}).get("groupVersion") or ""
        if not pv or g.get("name", "").endswith("metrics.k8s.io"):
            continue
        try:
            add(g["name"], pv.split("/", 1)[1], get_json(f"/apis/{pv}"))
        except Exception as exc:
            log.info("discovery of %s failed: %s", pv, exc)
    return out
