"""ScrapeConfig end to end: kubectl apply on the sandbox, the operator in-process, promtool on the result."""

from __future__ import annotations

import types

import pytest
import yaml
from operator_testlib import NS, eventually, job, jobs, prometheus

from promop.kube.resources import EVENTS, NAMESPACES, PROMETHEUSES, SCRAPECONFIGS, SECRETS
from promop.operator.demo import decode_config
from tests.render.helpers import PROMTOOL_VERSION, lay_out, promtool_check_config

# upstream's example (Documentation/developer/scrapeconfig.md): static targets plus a Kubernetes discovery
EXAMPLE = """
apiVersion: monitoring.coreos.com/v1alpha1
kind: ScrapeConfig
metadata:
  name: static-config
  namespace: team
  labels:
    prometheus: system-monitoring-prometheus
spec:
  staticConfigs:
  - labels:
      job: prometheus
    targets:
    - prometheus.demo.do.prometheus.io:9090
  kubernetesSDConfigs:
  - role: Node
  metricsPath: /metrics
  scrapeInterval: 30s
"""


@pytest.fixture
def ns(kube):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    return NS


def _prometheus(**spec):
    obj = prometheus(version=PROMTOOL_VERSION,
                     scrapeConfigSelector={"matchLabels": {"prometheus": "system-monitoring-prometheus"}}, **spec)
    obj["spec"].pop("serviceMonitorSelector")
    return obj


def _binding(kube, name):
    bindings = (kube.get(SCRAPECONFIGS, name, NS).get("status") or {}).get("bindings") or []
    return bindings[0]["conditions"][0] if bindings else None


def test_kubectl_apply_example_scrapeconfig(kube, kubectl, start_operator, ns, tmp_path):
    start_operator()
    f = tmp_path / "objs.yaml"
    f.write_text(yaml.safe_dump(_prometheus()) + "---\n" + EXAMPLE)
    kubectl("apply", "-f", str(f))
    got = eventually(lambda: job(kube, "scrapeConfig/team/static-config"), 20, "the ScrapeConfig's job")
    assert got["static_configs"] == [{"targets": ["prometheus.demo.do.prometheus.io:9090"],
                                      "labels": {"job": "prometheus"}}]
    assert got["kubernetes_sd_configs"] == [{"role": "node"}]
    assert got["metrics_path"] == "/metrics" and got["scrape_interval"] == "30s"
    assert eventually(lambda: _binding(kube, "static-config"), 20, "bindings")["status"] == "True"

    secret = kube.get(SECRETS, "prometheus-p", NS)
    rendered = types.SimpleNamespace(rule_configmaps=[], tls_secrets=[], config_text=decode_config(secret))
    checked = promtool_check_config(lay_out(rendered, tmp_path / "root", pod="prometheus-p-0"))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    kubectl("delete", "scrapeconfig", "static-config", "-n", NS)
    eventually(lambda: jobs(kube) == [], 20, "the job gone")


def test_invalid_scrapeconfig_is_rejected_alone(kube, start_operator, ns):
    start_operator()
    kube.create(PROMETHEUSES, _prometheus())
    good = yaml.safe_load(EXAMPLE)
    bad = yaml.safe_load(EXAMPLE)
    bad["metadata"]["name"] = "bad"
    bad["spec"]["relabelings"] = [{"sourceLabels": ["__address__"], "regex": "(unclosed", "targetLabel": "x"}]
    kube.create(SCRAPECONFIGS, good)
    kube.create(SCRAPECONFIGS, bad)
    eventually(lambda: jobs(kube) == ["scrapeConfig/team/static-config"], 20, "only the good job")
    cond = eventually(lambda: _binding(kube, "bad"), 20, "bindings on the bad ScrapeConfig")
    assert cond["status"] == "False" and cond["reason"] == "InvalidConfiguration"
    assert "relabelings[0].regex" in cond["message"]
    assert eventually(lambda: _binding(kube, "static-config"), 20)["status"] == "True"
    eventually(lambda: [e for e in kube.list(EVENTS, NS)["items"]
                        if e["reason"] == "InvalidConfiguration" and e["involvedObject"]["name"] == "bad"
                        and e["involvedObject"]["kind"] == "ScrapeConfig"], 20, "an Event on the bad ScrapeConfig")


def test_scrapeconfig_outside_the_namespace_selector_is_not_used(kube, start_operator, ns):
    """scrapeConfigNamespaceSelector unset: only the Prometheus's own namespace (upstream's nil rule)."""
    start_operator()
    kube.create(NAMESPACES, {"metadata": {"name": "other"}})
    kube.create(PROMETHEUSES, _prometheus())
    other = yaml.safe_load(EXAMPLE)
    other["metadata"]["namespace"] = "other"
    kube.create(SCRAPECONFIGS, other, "other")
    kube.create(SCRAPECONFIGS, yaml.safe_load(EXAMPLE))
    eventually(lambda: jobs(kube) == ["scrapeConfig/team/static-config"], 20, "only the own namespace's job")
    kube.patch(PROMETHEUSES, "p", {"spec": {"scrapeConfigNamespaceSelector": {}}}, NS)
    eventually(lambda: jobs(kube) == ["scrapeConfig/other/static-config", "scrapeConfig/team/static-config"], 20,
               "both jobs once every namespace is selected")
