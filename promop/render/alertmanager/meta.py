"""Metadata of every object the operator writes for an Alertmanager: labels, ownerReference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.meta import MANAGED_BY_LABELS
from promop.render.model import MONITORING_GROUP, MONITORING_VERSION, RenderOptions


def prefixed_name(alertmanager: Mapping[str, Any]) -> str:
    """`alertmanager-<name>`: the StatefulSet's name and the prefix of every Secret."""
    return f"alertmanager-{alertmanager['metadata']['name']}"


def owner_reference(alertmanager: Mapping[str, Any], controller: bool = True) -> dict:
    md = alertmanager["metadata"]
    return {
        "apiVersion": f"{MONITORING_GROUP}/{MONITORING_VERSION}",
        "kind": "Alertmanager",
        "name": md["name"],
        "uid": md.get("uid", ""),
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def managed_metadata(alertmanager: Mapping[str, Any], name: str, options: RenderOptions,
                     labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None) -> dict:
    all_labels = {**MANAGED_BY_LABELS, **(labels or {}), **options.labels}
    all_annotations = {**(annotations or {}), **options.annotations}
    md: dict = {
        "name": name,
        "namespace": alertmanager["metadata"]["namespace"],
        "labels": dict(sorted(all_labels.items())),
        "ownerReferences": [owner_reference(alertmanager)],
    }
    if all_annotations:
        md["annotations"] = dict(sorted(all_annotations.items()))
    return md
