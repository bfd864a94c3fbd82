"""A minimal OpenAPI v3 surface for kubectl: one document per group-version whose PATCH
operations declare the `fieldValidation` query parameter and their GroupVersionKind.

That is what kubectl's apply/create validation checks before it trusts the server to validate
fields; with it, plain `kubectl apply` works without `--validate=false`. The documents carry no
schemas, so kubectl falls back to its compiled-in types (strategic merge) or JSON merge patch."""

from __future__ import annotations

import hashlib
import json

from promop.sandbox.discovery import Registry
from promop.sandbox.resources import ResourceType

_QUERY = {"in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _item_path(rt: ResourceType) -> str:
    base = "/" + _gv_path(rt.group, rt.version)
    if rt.namespaced:
        return f"{base}/namespaces/{{namespace}}/{rt.plural}/{{name}}"
    return f"{base}/{rt.plural}/{{name}}"


def group_version_document(registry: Registry, group: str, version: str) -> dict | None:
    types = [rt for rt in list(registry.types.values())
             if rt.group == group and rt.version == version]
    if not types:
        return None
    paths = {}
    for rt in sorted(types, key=lambda r: r.plural):
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        operation = {
            "operationId": f"patch{rt.kind}",
            "parameters": [dict(_QUERY, name=name) for name in
                           ("dryRun", "fieldManager", "fieldValidation", "force")],
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": gvk,
        }
        paths[_item_path(rt)] = {"patch": operation}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": {}}}


def _hash(document: dict) -> str:
    return hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest()[:64]


def root_document(registry: Registry) -> dict:
    paths = {}
    for group, versions in sorted(registry.group_versions().items()):
        for version in versions:
            document = group_version_document(registry, group, version)
            path = _gv_path(group, version)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={_hash(document)}"}
    return {"paths": paths}


def document_for_path(registry: Registry, path: str) -> dict | None:
    """`/openapi/v3` or `/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`."""
    parts = path.strip("/").split("/")[2:]
    if not parts:
        return root_document(registry)
    if parts[0] == "api" and len(parts) == 2:
        return group_version_document(registry, "", parts[1])
    if parts[0] == "apis" and len(parts) == 3:
        return group_version_document(registry, parts[1], parts[2])
    return None
