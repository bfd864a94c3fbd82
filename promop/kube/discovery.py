"""Aggregated discovery (`apidiscovery.k8s.io` v2 and v2beta1): media types, the conversion of a legacy
APIResourceList into aggregated resources, and the client's reading of an aggregated document.

Shared by the three parties that speak it, so they agree on one shape:
- a server (the adapter) answering `GET /apis` with `Accept: application/json;g=apidiscovery.k8s.io;
  v=v2;as=APIGroupDiscoveryList`, as every aggregated API server must for kube-aggregator to merge it;
- the sandbox's aggregation layer, merging built-in groups, CRDs and APIService backends;
- clients (the HPA path), which read group versions through discovery and skip `Stale` ones, as
  client-go does since v1.26.

Plain dicts in and out; no I/O beyond `server_groups`, which takes a client.
"""

from __future__ import annotations

from typing import Any

GROUP = "apidiscovery.k8s.io"
VERSIONS = ("v2", "v2beta1")
LIST_KIND = "APIGroupDiscoveryList"
CURRENT, STALE = "Current", "Stale"


def media_type(version: str) -> str:
    """The Content-Type of an aggregated document, e.g. `application/json;g=apidiscovery.k8s.io;v=v2;
    as=APIGroupDiscoveryList` (client-go decides by it whether `/apis` came back aggregated)."""
    return f"application/json;g={GROUP};v={version};as={LIST_KIND}"


# What kubectl 1.26+ and client-go send for /api and /apis: v2, then v2beta1, then the legacy document.
ACCEPT = f"{media_type('v2')},{media_type('v2beta1')},application/json"
LEGACY_JSON = ("application/json", "application/*", "*/*")


def _media_ranges(accept: str | None) -> list[tuple[str, dict[str, str]]]:
    out = []
    for media_range in (accept or "").split(","):
        parts = [p.strip() for p in media_range.split(";")]
        if not parts[0]:
            continue
        params = {}
        for p in parts[1:]:
            if "=" in p:
                k, v = p.split("=", 1)
                params[k.strip().lower()] = v.strip().strip('"')
        out.append((parts[0].lower(), params))
    return out


NOT_ACCEPTABLE = "not-acceptable"
LEGACY = "legacy"


def negotiate(accept: str | None, aggregated: bool = True) -> str:
    """What a discovery endpoint answers for this Accept header, in the client's order: `v2` or
    `v2beta1` (aggregated; only `/api` and `/apis` serve it, `aggregated`), `legacy` (APIGroupList,
    APIGroup, APIResourceList), or `not-acceptable` (406), as the apiserver's negotiation does.
    Protobuf ranges are skipped (we serve JSON only)."""
    if not accept or not accept.strip():
        return LEGACY
    for media, params in _media_ranges(accept):
        if media not in LEGACY_JSON:
            continue
        shape = params.get("as")
        if shape is None:
            return LEGACY
        if aggregated and shape == LIST_KIND and params.get("g") == GROUP and params.get("v") in VERSIONS:
            return params["v"]
    return NOT_ACCEPTABLE


def content_type_version(content_type: str | None) -> str | None:
    """`v2`/`v2beta1` when a Content-Type names an aggregated discovery document, else None."""
    for media, params in _media_ranges(content_type):
        if media == "application/json" and params.get("g") == GROUP and params.get("as") == LIST_KIND \
                and params.get("v") in VERSIONS:
            return params["v"]
    return None


class ScopeMismatch(ValueError):
    """A subresource whose scope differs from its parent's: apiserver's conversion refuses the list."""


def _gvk(r: dict) -> dict:
    return {"group": r.get("group") or "", "version": r.get("version") or "", "kind": r.get("kind") or ""}


def _scope(r: dict) -> str:
    return "Namespaced" if r.get("namespaced") else "Cluster"


def to_discovery_resources(api_resources: list[dict], *, strict: bool = True) -> list[dict]:
    """An APIResourceList's `resources` as aggregated `APIResourceDiscovery` entries, the way
    k8s.io/apiserver's ConvertGroupVersionIntoToDiscovery does it (kube-aggregator applies it to a
    backend's legacy answer): `a/b` entries become subresource `b` of `a` (a parent with an empty
    responseKind is made up when `a` is not listed itself), and a subresource whose scope differs
    from its parent's raises ScopeMismatch, unless `strict` is False (then it joins the parent)."""
    out: list[dict] = []
    parents: dict[str, dict] = {}
    for r in api_resources:
        name = r.get("name") or ""
        if "/" in name:
            continue
        entry = {"resource": name, "responseKind": _gvk(r), "scope": _scope(r),
                 "singularResource": r.get("singularName") or "", "verbs": list(r.get("verbs") or [])}
        for key, field in (("shortNames", "shortNames"), ("categories", "categories")):
            if r.get(key):
                entry[field] = list(r[key])
        out.append(entry)
        parents[name] = entry
    for r in api_resources:
        name = r.get("name") or ""
        if "/" not in name:
            continue
        parent_name, sub = name.split("/", 1)
        parent = parents.get(parent_name)
        if parent is None:
            parent = {"resource": parent_name, "responseKind": {"group": "", "version": "", "kind": ""},
                      "scope": _scope(r), "singularResource": "", "verbs": []}
            out.append(parent)
            parents[parent_name] = parent
        if parent["scope"] != _scope(r) and strict:
            raise ScopeMismatch(f"parent {parent_name} (scope: {parent['scope']}) and subresource {sub} "
                                f"(scope: {_scope(r)}) scope do not match")
        parent.setdefault("subresources", []).append(
            {"subresource": sub, "responseKind": _gvk(r), "verbs": list(r.get("verbs") or [])})
    return out


def group_entry(name: str, versions: list[dict]) -> dict:
    """One APIGroupDiscovery: the versions in preference order (the first is the preferred one)."""
    return {"metadata": {"name": name, "creationTimestamp": None}, "versions": versions}


def version_entry(version: str, resources: list[dict], freshness: str = CURRENT) -> dict:
    return {"version": version, "resources": resources, "freshness": freshness}


def discovery_list(version: str, groups: list[dict]) -> dict:
    return {"kind": LIST_KIND, "apiVersion": f"{GROUP}/{version}", "metadata": {}, "items": groups}


def is_discovery_list(doc: Any) -> bool:
    """Whether a decoded body is an APIGroupDiscoveryList (what a universal decoder would accept)."""
    return (isinstance(doc, dict) and doc.get("kind") == LIST_KIND
            and doc.get("apiVersion") in tuple(f"{GROUP}/{v}" for v in VERSIONS)
            and isinstance(doc.get("items") or [], list))


# -- the client side ------------------------------------------------------------------------------

def api_groups(doc: dict) -> list[dict]:
    """APIGroup entries ({name, versions, preferredVersion}) from a discovery document, legacy
    APIGroupList or aggregated, as client-go's ServerGroups converts it: aggregated versions marked
    `Stale` are left out and the preferred version is the first one left; a group whose versions are
    all stale stays, with no versions and an empty preferredVersion (so the HPA's custom-metrics client
    says "no known available metric versions found" and kubectl top "Metrics API not available")."""
    if doc.get("kind") == "APIGroupList":
        return list(doc.get("groups") or [])
    out = []
    for item in doc.get("items") or []:
        name = (item.get("metadata") or {}).get("name", "")
        versions = [{"groupVersion": f"{name}/{v['version']}" if name else v["version"], "version": v["version"]}
                    for v in item.get("versions") or [] if v.get("freshness") != STALE and v.get("version")]
        out.append({"name": name, "versions": versions,
                    "preferredVersion": versions[0] if versions else {"groupVersion": "", "version": ""}})
    return out


def server_groups(client: Any) -> list[dict]:
    """`GET /apis` asking for aggregated discovery first, as client-go's ServerGroups does; the groups
    a client can use (stale versions left out)."""
    doc = client._request("GET", "/apis", endpoint="/apis", accept=ACCEPT)
    return api_groups(doc)
