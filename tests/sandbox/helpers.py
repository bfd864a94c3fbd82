"""Small builders shared by the sandbox tests."""

from __future__ import annotations

import json
import shutil

import yaml

KUBECTL = shutil.which("kubectl")


def crd_body(group="example.com", plural="widgets", kind="Widget", scope="Namespaced",
             status=True, scale=False, versions=("v1",)) -> dict:
    subresources = {}
    if status:
        subresources["status"] = {}
    if scale:
        subresources["scale"] = {"specReplicasPath": ".spec.replicas",
                                 "statusReplicasPath": ".status.replicas"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group, "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                      "listKind": f"{kind}List", "shortNames": [plural[:2]]},
            "versions": [{"name": v, "served": True, "storage": n == 0,
                          "subresources": subresources,
                          "schema": {"openAPIV3Schema": {
                              "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
                         for n, v in enumerate(versions)],
        },
    }


def raw(response) -> dict:
    """Decode a `_preload_content=False` response."""
    return json.loads(response.data)


def configmap(name: str, labels: dict | None = None, **data) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data}


def write(path, obj) -> str:
    """Dump `obj` as YAML to `path` (a pathlib.Path); returns the path as a string."""
    path.write_text(yaml.safe_dump(obj))
    return str(path)
