"""The adapter's discovery documents, legacy and aggregated.

kube-aggregator asks every APIService backend for `GET /apis` with `Accept: application/json;
g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList` (v1.26-v1.29; `v=v2` first since v1.30).
It takes a 200 as an APIGroupDiscoveryList and falls back to `/apis/<group>/<version>` only on a 406:
a plain APIGroupList answered with 200 fails to decode and every group-version of the backend is
published as `freshness: Stale` with no resources, which the HPA's custom-metrics client and kubectl
(`kubectl top`) skip. So `/apis` answers aggregated discovery in the version asked for, with its
Content-Type; the other discovery paths refuse an Accept they cannot serve with 406.
"""

from __future__ import annotations

from typing import Callable

from promop.kube import discovery as disco


def group_doc(name: str, versions: tuple[str, ...]) -> dict:
    """The `versions`/`preferredVersion` part of an APIGroup (the first version is preferred)."""
    vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def group_list(groups: dict[str, tuple[str, ...]]) -> dict:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group_doc(g, vs) for g, vs in groups.items()]}


def aggregated(groups: dict[str, tuple[str, ...]], resource_list: Callable[[str, str], dict], version: str) -> dict:
    """The APIGroupDiscoveryList of every served group-version, built from the same APIResourceLists
    `/apis/<group>/<version>` answers (so both agree). One metric may be registered both namespaced and
    cluster-scoped (`services/x` from series with and without a namespace label); an aggregated parent
    has one scope, so it is Namespaced when any of its subresources is (the HPA reads namespaced
    metrics), instead of refusing the whole list as the legacy conversion would."""
    items = []
    for name, versions in groups.items():
        entries = []
        for v in versions:
            resources = sorted(resource_list(name, v).get("resources") or [],
                               key=lambda r: "/" in r.get("name", "") and not r.get("namespaced"))
            entries.append(disco.version_entry(v, disco.to_discovery_resources(resources, strict=False)))
        items.append(disco.group_entry(name, entries))
    return disco.discovery_list(version, items)
