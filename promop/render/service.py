"""The governing Service `prometheus-operated` (the web-config Secret: render/webconfig.py).

One `prometheus-operated` Service per namespace serves every Prometheus there
(headless, selecting all Prometheus pods); each Prometheus adds itself as a
non-controller owner, so the Service lives as long as any of them (upstream
`BuildStatefulSetService`). The operator merges ownerReferences across objects.
"""

from __future__ import annotations

from promop.render.meta import MANAGED_BY_LABELS, owner_reference
from promop.render.model import RenderOptions
from promop.render.thanos.sidecar import service_ports as thanos_service_ports

GOVERNING_SERVICE_NAME = "prometheus-operated"


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


def build_web_config_secret(prometheus: dict, options: RenderOptions) -> dict:
    """Secret `prometheus-<name>-web-config` without web TLS (kept for callers of this module's old
    interface; render/webconfig.build_web_config_secret builds it with TLS)."""
    from promop.render.webconfig import build_web_config_secret as build  # webconfig sits above this module

    return build(prometheus, options)
