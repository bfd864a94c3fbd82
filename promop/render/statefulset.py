"""StatefulSets (one per shard) and the governing Service for a Prometheus.

STUB with the real signatures; the implementation follows.
"""

from __future__ import annotations

from promop.render.model import RenderOptions


def build_statefulsets(
    prometheus: dict,
    options: RenderOptions,
    rule_configmap_names: list[str],
    tls_secret_names: list[str],
    input_hash: str,
) -> list[dict]:
    return []


def build_service(prometheus: dict, options: RenderOptions) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "prometheus-operated",
            "namespace": prometheus["metadata"]["namespace"]}, "spec": {}}


def compute_input_hash(
    prometheus: dict, options: RenderOptions, rule_configmap_names: list[str], tls_secret_names: list[str]
) -> str:
    return "0"
