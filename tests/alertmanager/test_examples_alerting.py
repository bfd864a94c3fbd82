"""`spec.alerting` end to end on the examples: the kube-prometheus Prometheus sends alerts to the
`alertmanager-main` Service, and that Service fronts the pods of the Alertmanager promop renders.

Upstream (reference/prometheus-operator.md, `alerting`): one `alertmanagers` entry per
spec.alerting endpoint, Kubernetes SD with the Prometheus's serviceDiscoveryRole (endpoints or
endpointslice) restricted to the endpoint's namespace, then keep rules on the Service name and
on the port name.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _example(kind: str, name: str) -> dict:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == kind and doc["metadata"]["name"] == name:
                return doc
    raise AssertionError(f"{kind} {name} not in examples/")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("render") / "out"
    proc = subprocess.run([sys.executable, "-m", "promop", "render", "-f", str(EXAMPLES), "--out", str(out)],
                          capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return out


def test_examples_hold_the_kube_prometheus_alertmanager_service():
    svc = _example("Service", "alertmanager-main")
    assert svc["metadata"]["namespace"] == "monitoring"
    assert {p["name"]: (p["port"], p["targetPort"]) for p in svc["spec"]["ports"]} == {
        "web": (9093, "web"), "reloader-web": (8080, "reloader-web")}
    # the ServiceMonitor of kube-prometheus scrapes this Service on both ports
    smon = _example("ServiceMonitor", "alertmanager-main")
    assert smon["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert {e["port"] for e in smon["spec"]["endpoints"]} <= {p["name"] for p in svc["spec"]["ports"]}


def test_prometheus_alerting_selects_the_alertmanager_main_service(rendered):
    prom = _example("Prometheus", "k8s")
    svc = _example("Service", "alertmanager-main")
    (endpoint,) = prom["spec"]["alerting"]["alertmanagers"]
    assert (endpoint["namespace"], endpoint["name"]) == (svc["metadata"]["namespace"], svc["metadata"]["name"])

    config = yaml.safe_load((rendered / "monitoring" / "k8s" / "prometheus.yaml").read_text())
    (am,) = config["alerting"]["alertmanagers"]
    role = {"EndpointSlice": "endpointslice", "Endpoints": "endpoints"}[prom["spec"].get("serviceDiscoveryRole",
                                                                                       "Endpoints")]
    assert am["kubernetes_sd_configs"] == [{"role": role, "namespaces": {"names": [svc["metadata"]["namespace"]]}}]
    assert am["api_version"] == "v2"
    port_label = ("__meta_kubernetes_endpointslice_port_name" if role == "endpointslice"
                  else "__meta_kubernetes_endpoint_port_name")
    keeps = [r for r in am["relabel_configs"] if r["action"] == "keep"]
    assert keeps == [
        {"action": "keep", "source_labels": ["__meta_kubernetes_service_name"], "regex": svc["metadata"]["name"]},
        {"action": "keep", "source_labels": [port_label], "regex": endpoint["port"]},
    ]
    assert endpoint["port"] in {p["name"] for p in svc["spec"]["ports"]}
    assert config["alerting"]["alert_relabel_configs"][0] == {"action": "labeldrop", "regex": "prometheus_replica"}


def test_the_service_fronts_the_rendered_alertmanager_pods(rendered):
    """The Service's selector matches the pods of the StatefulSet promop renders for monitoring/main, and
    its target ports are container ports there: the endpoints Prometheus discovers are the Alertmanagers."""
    svc = _example("Service", "alertmanager-main")
    docs = list(yaml.safe_load_all((rendered / "monitoring" / "main" / "manifests.yaml").read_text()))
    sts = next(d for d in docs if d["kind"] == "StatefulSet")
    assert sts["metadata"]["name"] == "alertmanager-main"
    pod_labels = sts["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    container_ports = {p["name"] for c in sts["spec"]["template"]["spec"]["containers"] for p in c.get("ports") or []}
    assert {p["targetPort"] for p in svc["spec"]["ports"]} <= container_ports
    # promop does not render a Service of that name (it writes alertmanager-operated only): no clash
    assert all(d["metadata"]["name"] != "alertmanager-main" for d in docs if d["kind"] == "Service")
