"""PrometheusAgent config generation against upstream's goldens (parsed YAML), and its refusals."""

from __future__ import annotations

import copy

import pytest
import yaml

from promop.render.agent import InvalidAgent, generate_agent_config

from .agent_helpers import agent_golden
from .helpers import TESTDATA

CASES = yaml.safe_load((TESTDATA / "agent" / "config_cases.yaml").read_text())


def _agent(spec: dict) -> dict:
    agent = copy.deepcopy(CASES["base"])
    agent["spec"].update(copy.deepcopy(spec))
    return agent


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["golden"] for c in CASES["cases"]])
def test_golden(case):
    pod_monitors = [copy.deepcopy(CASES["default_pod_monitor"]) for _ in case.get("pod_monitors") or ()]
    result = generate_agent_config(_agent(case["spec"]), (), pod_monitors, daemonset=case.get("daemonset", False))
    assert result.rejected == []
    got = yaml.safe_load(result.text)
    assert got == result.config
    expected = yaml.safe_load(agent_golden(case["golden"]).read_text())
    assert got == expected


@pytest.mark.parametrize("case", CASES["errors"], ids=[c["message"] for c in CASES["errors"]])
def test_invalid_tsdb_refused(case):
    with pytest.raises(InvalidAgent, match=case["message"]):
        generate_agent_config(_agent(case["spec"]))


def test_no_server_sections_even_when_set():
    """rule_files, alerting, evaluation_interval and remote_read never appear in an agent's config."""
    agent = _agent({"remoteWrite": [{"url": "http://rw.example/api/v1/write"}],
                    "additionalArgs": [], "scrapeTimeout": "10s"})
    cfg = generate_agent_config(agent).config
    assert set(cfg) == {"global", "scrape_configs", "remote_write"}
    assert "evaluation_interval" not in cfg["global"]
    assert cfg["remote_write"][0]["url"] == "http://rw.example/api/v1/write"


def test_missing_remote_write_is_a_warning():
    result = generate_agent_config(_agent({}))
    assert any(w.field == "spec.remoteWrite" for w in result.warnings)
    with_rw = generate_agent_config(_agent({"remoteWrite": [{"url": "http://rw.example/write"}]}))
    assert not any(w.field == "spec.remoteWrite" for w in with_rw.warnings)


def test_daemonset_mode_ignores_service_monitors_and_sharding():
    sm = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
          "metadata": {"name": "sm", "namespace": "default"},
          "spec": {"selector": {}, "endpoints": [{"port": "web"}]}}
    pm = copy.deepcopy(CASES["default_pod_monitor"])
    stateful = generate_agent_config(_agent({"shards": 2}), [sm], [pm]).config
    assert [j["job_name"] for j in stateful["scrape_configs"]] == [
        "serviceMonitor/default/sm/0", "podMonitor/default/defaultPodMonitor/0"]
    assert any(r.get("action") == "hashmod" for r in stateful["scrape_configs"][1]["relabel_configs"])
    assert "selectors" not in stateful["scrape_configs"][1]["kubernetes_sd_configs"][0]
    daemon = generate_agent_config(_agent({}), [sm], [pm], daemonset=True).config
    assert [j["job_name"] for j in daemon["scrape_configs"]] == ["podMonitor/default/defaultPodMonitor/0"]


def test_daemonset_node_filter_joins_a_role_selector():
    """With selectorMechanism RoleSelector the node field goes into the same pod selector
    (Prometheus refuses two selectors of one role)."""
    pm = copy.deepcopy(CASES["default_pod_monitor"])
    pm["spec"]["selectorMechanism"] = "RoleSelector"
    sd = generate_agent_config(_agent({}), (), [pm], daemonset=True).config["scrape_configs"][0]
    assert sd["kubernetes_sd_configs"][0]["selectors"] == [
        {"role": "pod", "label": "group=group1", "field": "spec.nodeName=$(NODE_NAME)"}]
