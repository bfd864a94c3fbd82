"""Names, labels and metadata of the objects a ThanosRuler owns (upstream's naming)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.model import MONITORING_GROUP, MONITORING_VERSION, RenderOptions

KIND = "ThanosRuler"
GOVERNING_SERVICE_NAME = "thanos-ruler-operated"
MANAGED_BY = {"managed-by": "prometheus-operator", "app.kubernetes.io/managed-by": "prometheus-operator"}


def prefixed_name(ruler: Mapping[str, Any]) -> str:
    """`thanos-ruler-<name>`: the StatefulSet's name and the base of every other object's."""
    return f"thanos-ruler-{ruler['metadata']['name']}"


def owner_reference(ruler: Mapping[str, Any], controller: bool = True) -> dict:
    md = ruler["metadata"]
    return {"apiVersion": f"{MONITORING_GROUP}/{MONITORING_VERSION}", "kind": KIND, "name": md["name"],
            "uid": md.get("uid", ""), "controller": controller, "blockOwnerDeletion": True}


def managed_metadata(ruler: Mapping[str, Any], name: str, options: RenderOptions,
                     labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None) -> dict:
    """metadata of an owned object: managed-by labels, --labels/--annotations, the controller ownerRef."""
    all_labels = {**MANAGED_BY, **(labels or {}), **options.labels}
    all_annotations = {**(annotations or {}), **options.annotations}
    md: dict = {"name": name, "namespace": ruler["metadata"].get("namespace", ""),
                "labels": dict(sorted(all_labels.items())), "ownerReferences": [owner_reference(ruler)]}
    if all_annotations:
        md["annotations"] = dict(sorted(all_annotations.items()))
    return md


def selector_labels(ruler: Mapping[str, Any], options: RenderOptions) -> dict[str, str]:
    """The StatefulSet's selector, as upstream: podMetadata labels and --labels under the managed ones."""
    name = ruler["metadata"]["name"]
    pod_labels = ((ruler.get("spec") or {}).get("podMetadata") or {}).get("labels") or {}
    return {**pod_labels, **options.labels, "thanos-ruler": name, "app.kubernetes.io/instance": name,
            "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": "thanos-ruler"}
