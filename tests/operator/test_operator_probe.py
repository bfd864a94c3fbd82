"""Probes end to end: `kubectl apply` of upstream-style Probe objects on the sandbox (CRD schema and
defaulting as the apiserver does them), the operator in-process, the config Secret, promtool."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml
from operator_testlib import NS, config, eventually, job, jobs

from promop.kube.resources import EVENTS, NAMESPACES, PROBES

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

# As in upstream's documentation: a blackbox exporter probing static URLs, and Ingresses by label.
EXAMPLE = """
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: p, namespace: team}
spec:
  version: v2.42.0
  probeSelector:
    matchLabels: {team: frontend}
---
apiVersion: monitoring.coreos.com/v1
kind: Probe
metadata:
  name: blackbox-websites
  namespace: team
  labels: {team: frontend}
spec:
  interval: 60s
  module: http_2xx
  prober:
    url: blackbox-exporter.team.svc:19115
  targets:
    staticConfig:
      static:
      - https://example.com
      - https://prometheus.io
      labels:
        environment: prod
---
apiVersion: monitoring.coreos.com/v1
kind: Probe
metadata:
  name: blackbox-ingresses
  namespace: team
  labels: {team: frontend}
spec:
  module: http_2xx
  prober:
    url: blackbox-exporter.team.svc:19115
    scheme: http
  targets:
    ingress:
      selector:
        matchLabels: {probe: "true"}
      relabelingConfigs:
      - targetLabel: source
        replacement: ingress
"""


@pytest.fixture
def ns(kube):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    return NS


def binding(kube, name: str) -> dict | None:
    bindings = (kube.get(PROBES, name, NS).get("status") or {}).get("bindings") or []
    return bindings[0]["conditions"][0] if bindings and bindings[0].get("conditions") else None


def test_kubectl_apply_probes_renders_them_and_promtool_accepts(kube, kubectl, start_operator, ns, tmp_path):
    start_operator()
    f = tmp_path / "probes.yaml"
    f.write_text(EXAMPLE)
    kubectl("apply", "-f", str(f))
    eventually(lambda: sorted(jobs(kube) or []) == ["probe/team/blackbox-ingresses", "probe/team/blackbox-websites"],
               20, "both probe jobs in the config Secret")
    websites = job(kube, "probe/team/blackbox-websites")
    assert websites["metrics_path"] == "/probe"  # the CRD default the apiserver stored
    assert websites["params"] == {"module": ["http_2xx"]}
    assert websites["static_configs"] == [{"targets": ["https://example.com", "https://prometheus.io"],
                                           "labels": {"environment": "prod", "namespace": "team"}}]
    assert {"target_label": "__address__", "replacement": "blackbox-exporter.team.svc:19115"} in websites["relabel_configs"]
    ingresses = job(kube, "probe/team/blackbox-ingresses")
    assert ingresses["kubernetes_sd_configs"] == [{"role": "ingress", "namespaces": {"names": ["team"]}}]
    eventually(lambda: (binding(kube, "blackbox-websites") or {}).get("status") == "True", 20, "Accepted binding")

    # Debian's promtool 2.42 is built without Kubernetes SD (see tests/render/helpers.py): the ingress
    # job's SD (asserted above) is swapped for DNS SD so promtool checks everything else
    cfg = config(kube)
    for j in cfg["scrape_configs"]:
        if j.pop("kubernetes_sd_configs", None) is not None:
            j["dns_sd_configs"] = [{"names": ["targets.example.com"], "type": "A", "port": 9090}]
    path = tmp_path / "prometheus.yaml"
    path.write_text(yaml.safe_dump(cfg))
    check = subprocess.run([PROMTOOL, "check", "config", "--syntax-only", str(path)], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def test_an_invalid_probe_is_rejected_alone_with_a_reason_and_an_event(kube, kubectl, start_operator, ns, tmp_path):
    start_operator()
    f = tmp_path / "probes.yaml"
    docs = list(yaml.safe_load_all(EXAMPLE))
    bad = yaml.safe_load(yaml.safe_dump(docs[1]))
    bad["metadata"]["name"] = "with-scheme"
    bad["spec"]["prober"]["url"] = "http://blackbox-exporter:19115"
    f.write_text(yaml.safe_dump_all([docs[0], docs[1], bad]))
    kubectl("apply", "-f", str(f))
    eventually(lambda: jobs(kube) == ["probe/team/blackbox-websites"], 20, "only the valid Probe's job")
    eventually(lambda: binding(kube, "with-scheme"), 20, "a binding on the rejected Probe")
    cond = binding(kube, "with-scheme")
    assert cond["status"] == "False" and cond["reason"] == "InvalidConfiguration"
    assert "spec.prober.url" in cond["message"] and "without a scheme" in cond["message"]

    def events():
        return [e for e in kube.list(EVENTS, NS)["items"]
                if e["involvedObject"]["kind"] == "Probe" and e["involvedObject"]["name"] == "with-scheme"]
    eventually(events, 20, "a Warning Event on the Probe")
    assert events()[0]["type"] == "Warning"

    # fixing it brings its job in, with no restart
    bad["spec"]["prober"]["url"] = "blackbox-exporter:19115"
    f.write_text(yaml.safe_dump(bad))
    kubectl("apply", "-f", str(f))
    eventually(lambda: sorted(jobs(kube) or []) == ["probe/team/blackbox-websites", "probe/team/with-scheme"], 20,
               "the fixed Probe's job")


def test_probe_outside_the_selected_namespaces_is_ignored_until_labels_match(kube, kubectl, start_operator, ns,
                                                                               tmp_path):
    start_operator()
    f = tmp_path / "probes.yaml"
    docs = list(yaml.safe_load_all(EXAMPLE))
    docs[1]["metadata"]["labels"] = {"team": "backend"}
    f.write_text(yaml.safe_dump_all(docs[:2]))
    kubectl("apply", "-f", str(f))
    eventually(lambda: jobs(kube) == [], 20, "a managed, empty config")
    docs[1]["metadata"]["labels"] = {"team": "frontend"}
    f.write_text(yaml.safe_dump(docs[1]))
    kubectl("apply", "-f", str(f))
    eventually(lambda: jobs(kube) == ["probe/team/blackbox-websites"], 20, "the relabelled Probe selected")
