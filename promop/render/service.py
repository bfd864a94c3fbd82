"""The governing Service `prometheus-operated` and the web-config Secret the pods mount.

One `prometheus-operated` Service per namespace serves every Prometheus there
(headless, selecting all Prometheus pods); each Prometheus adds itself as a
non-controller owner, so the Service lives as long as any of them (upstream
`BuildStatefulSetService`). The operator merges ownerReferences across objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.meta import MANAGED_BY_LABELS, managed_metadata, owner_reference, prefixed_name
from promop.render.model import RenderOptions
from promop.render.thanos.sidecar import service_ports as thanos_service_ports

GOVERNING_SERVICE_NAME = "prometheus-operated"
WEB_CONFIG_KEY = "web-config.yaml"


def build_service(prometheus: dict, options: RenderOptions) -> dict:
    """Headless Service `prometheus-operated` with port web 9090 -> the pods' web port."""
    spec = prometheus.get("spec") or {}
    port_name = spec.get("portName") or "web"
    labels = {**MANAGED_BY_LABELS, "operated-prometheus": "true", **options.labels}
    md: dict = {
        "name": GOVERNING_SERVICE_NAME,  # spec.serviceName names a user-made Service the StatefulSet uses
        "namespace": prometheus["metadata"]["namespace"],
        "labels": dict(sorted(labels.items())),
        "ownerReferences": [{**owner_reference(prometheus), "controller": False}],
    }
    if options.annotations:
        md["annotations"] = dict(sorted(options.annotations.items()))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": md,
        "spec": {
            "clusterIP": "None",
            "ports": [{"name": port_name, "port": 9090, "protocol": "TCP", "targetPort": port_name},
                      *thanos_service_ports(spec)],
            "selector": {"app.kubernetes.io/name": "prometheus"},
        },
    }


def build_web_config_secret(prometheus: Mapping[str, Any], options: RenderOptions) -> dict:
    """Secret `prometheus-<name>-web-config`: the (empty: no web TLS or auth) --web.config.file."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": managed_metadata(prometheus, f"{prefixed_name(prometheus)}-web-config", options),
        "stringData": {WEB_CONFIG_KEY: ""},
    }
