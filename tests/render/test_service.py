"""The governing Service prometheus-operated and the web-config Secret."""

from __future__ import annotations

from promop.render.model import RenderOptions
from promop.render.service import build_service
from promop.render.webconfig import build_web_config_secret


def prom(spec=None) -> dict:
    return {"kind": "Prometheus", "metadata": {"name": "main", "namespace": "mon", "uid": "u1"}, "spec": spec or {}}


def test_headless_service_selecting_all_prometheus_pods():
    svc = build_service(prom(), RenderOptions(labels={"env": "prod"}))
    assert svc["metadata"]["name"] == "prometheus-operated"
    assert svc["metadata"]["namespace"] == "mon"
    assert svc["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "prometheus-operator", "env": "prod",
                                         "managed-by": "prometheus-operator", "operated-prometheus": "true"}
    assert svc["spec"] == {"clusterIP": "None",
                           "ports": [{"name": "web", "port": 9090, "protocol": "TCP", "targetPort": "web"}],
                           "selector": {"app.kubernetes.io/name": "prometheus"}}


def test_owner_reference_is_not_a_controller_reference():
    # several Prometheus objects in one namespace share the Service: none of them controls it
    (ref,) = build_service(prom(), RenderOptions())["metadata"]["ownerReferences"]
    assert ref == {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "name": "main", "uid": "u1",
                   "controller": False, "blockOwnerDeletion": True}


def test_port_name_from_spec():
    svc = build_service(prom({"portName": "http", "serviceName": "my-svc"}), RenderOptions())
    assert svc["metadata"]["name"] == "prometheus-operated"
    assert svc["spec"]["ports"][0]["name"] == svc["spec"]["ports"][0]["targetPort"] == "http"


def test_web_config_secret_matches_the_statefulset_mount():
    secret = build_web_config_secret(prom(), RenderOptions())
    assert secret["metadata"]["name"] == "prometheus-main-web-config"
    assert secret["data"] == {"web-config.yaml": ""}  # empty file: no web TLS or HTTP settings
    assert secret["metadata"]["ownerReferences"][0]["controller"] is True
