"""The served resource registry and the discovery documents built from it
(/api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>, /version), legacy and aggregated
(apidiscovery.k8s.io v2/v2beta1, what kubectl 1.26+ asks /api and /apis for first)."""

from __future__ import annotations

import re
import threading

from promop.kube import discovery as disco
from promop.sandbox.resources import ResourceType, builtin_types

VERSION_INFO = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.0-promop-sandbox",
    "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
    "buildDate": "2026-11-22T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
    "platform": "linux/amd64",
}


_KUBE_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")


def kube_aware_version_key(version: str) -> tuple:
    """Sort key of apimachinery's CompareKubeAwareVersionStrings: GA, then beta, then alpha, each by
    major then minor number descending; versions not of that form after them, by name."""
    m = _KUBE_VERSION.match(version)
    if m is None:
        return (1, 0, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (0, stage, -int(m.group(1)), -int(m.group(3) or 0), version)


class Registry:
    """Resource types by (group, version, plural); CRDs add and remove theirs at runtime."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.types: dict[tuple[str, str, str], ResourceType] = {}
        for rt in builtin_types():
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        with self.lock:
            self.types[(rt.group, rt.version, rt.plural)] = rt

    def remove_crd(self, crd_name: str) -> list[ResourceType]:
        with self.lock:
            gone = [k for k, rt in self.types.items() if rt.crd_name == crd_name]
            return [self.types.pop(k) for k in gone]

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.types.get((group, version, plural))

    def group_versions(self) -> dict[str, list[str]]:
        """group -> served versions, preferred first, in Kubernetes' version priority: as the
        apiextensions discovery controller orders a group that several CRDs share (v1 before v1beta1
        before v1alpha1, whatever version a CRD stores), so clients resolve kinds the same way."""
        groups: dict[str, list[str]] = {}
        types = list(self.types.values())
        for rt in types:
            versions = groups.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        for versions in groups.values():
            versions.sort(key=kube_aware_version_key)
        return groups

    # -- documents -----------------------------------------------------------------------------
    def api_versions(self, server_address: str) -> dict:
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": server_address}]}

    def _group_doc(self, group: str, versions: list[str]) -> dict:
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def api_group_list(self) -> dict:
        groups = [self._group_doc(g, vs) for g, vs in sorted(self.group_versions().items()) if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_group(self, group: str) -> dict | None:
        versions = self.group_versions().get(group)
        if not group or not versions:
            return None
        return dict(self._group_doc(group, versions), kind="APIGroup", apiVersion="v1")

    def resource_list(self, group: str, version: str) -> dict | None:
        types = sorted((rt for rt in list(self.types.values())
                        if rt.group == group and rt.version == version), key=lambda r: r.plural)
        if not types:
            return None
        resources = []
        for rt in types:
            entry = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                     "kind": rt.kind, "verbs": list(rt.verbs)}
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            resources.append(entry)
            if rt.status_subresource:
                resources.append({"name": f"{rt.plural}/status", "singularName": "",
                                  "namespaced": rt.namespaced, "kind": rt.kind,
                                  "verbs": ["get", "patch", "update"]})
            if rt.key == ("", "serviceaccounts"):
                resources.append({"name": "serviceaccounts/token", "singularName": "",
                                  "namespaced": True, "kind": "TokenRequest",
                                  "group": "authentication.k8s.io", "version": "v1",
                                  "verbs": ["create"]})
            resources.extend(dict(e) for e in rt.extra.get("subresources") or ())  # pods/eviction
            if rt.scale is not None:
                resources.append({"name": f"{rt.plural}/scale", "singularName": "",
                                  "namespaced": rt.namespaced, "kind": "Scale",
                                  "group": "autoscaling", "version": "v1",
                                  "verbs": ["get", "patch", "update"]})
        group_version = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                "resources": resources}

    def aggregated_groups(self, core: bool) -> list[dict]:
        """APIGroupDiscovery items of the built-in groups and CRDs: the core group alone for `/api`,
        the named groups for `/apis`; resources as the apiserver converts its own resource lists."""
        items = []
        for group, versions in sorted(self.group_versions().items()):
            if (group == "") != core:
                continue
            entries = []
            for v in versions:
                doc = self.resource_list(group, v)
                if doc is not None:
                    entries.append(disco.version_entry(v, disco.to_discovery_resources(doc["resources"])))
            if entries:
                items.append(disco.group_entry(group, entries))
        return items
