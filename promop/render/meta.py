"""Metadata shared by every object the operator creates for a Prometheus."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.model import MONITORING_GROUP, MONITORING_VERSION, RenderOptions

MANAGED_BY_LABELS = {
    "managed-by": "prometheus-operator",
    "app.kubernetes.io/managed-by": "prometheus-operator",
}


AGENT_KIND = "PrometheusAgent"


def prefixed_name(prometheus: Mapping[str, Any]) -> str:
    """`prometheus-<name>` (`prom-agent-<name>` for a PrometheusAgent, as upstream): the base name of
    the config Secret and shard-0 StatefulSet."""
    prefix = "prom-agent" if prometheus.get("kind") == AGENT_KIND else "prometheus"
    return f"{prefix}-{prometheus['metadata']['name']}"


def owner_reference(prometheus: Mapping[str, Any]) -> dict:
    """The controller ownerReference that makes Kubernetes garbage-collect our objects."""
    md = prometheus["metadata"]
    agent = prometheus.get("kind") == AGENT_KIND
    return {
        "apiVersion": f"{MONITORING_GROUP}/{'v1alpha1' if agent else MONITORING_VERSION}",
        "kind": AGENT_KIND if agent else "Prometheus",
        "name": md["name"],
        "uid": md.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def managed_metadata(
    prometheus: Mapping[str, Any],
    name: str,
    options: RenderOptions,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict:
    """metadata for a managed object: managed-by labels, --labels/--annotations, ownerRef."""
    all_labels = {**MANAGED_BY_LABELS, **(labels or {}), **options.labels}
    all_annotations = {**(annotations or {}), **options.annotations}
    md: dict = {
        "name": name,
        "namespace": prometheus["metadata"]["namespace"],
        "labels": dict(sorted(all_labels.items())),
        "ownerReferences": [owner_reference(prometheus)],
    }
    if all_annotations:
        md["annotations"] = dict(sorted(all_annotations.items()))
    return md
