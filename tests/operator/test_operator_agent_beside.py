"""The PrometheusAgent controller beside other operators and with ScrapeConfigs and Probes, on the sandbox:
--controller-id, --prometheus-instance-namespaces/-selector (shared with Prometheus, as upstream), and
ScrapeConfigs and Probes selected by an agent (job, binding).
--repair-policy-for-statefulsets: test_operator_repair_others.py."""

from __future__ import annotations

import base64
import gzip

import yaml
from operator_testlib import eventually, modify, operator_writes

from promop.kube.errors import NotFound
from promop.kube.resources import NAMESPACES, PODMONITORS, PROBES, SCRAPECONFIGS, SECRETS, STATEFULSETS
from promop.operator.agent import PROMETHEUSAGENTS
from promop.operator.agent.controller import AgentController
from promop.operator.ownership import CONTROLLER_ID_ANNOTATION

NS = "default"


def agent(name: str, controller_id: str | None = None, namespace: str = NS, labels: dict | None = None,
          **spec) -> dict:
    md = {"name": name, "namespace": namespace, "labels": labels or {}}
    if controller_id is not None:
        md["annotations"] = {CONTROLLER_ID_ANNOTATION: controller_id}
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent", "metadata": md,
            "spec": {"podMonitorSelector": {}, "remoteWrite": [{"url": "http://central:9090/api/v1/write"}], **spec}}


def pod_monitor(name: str = "app", namespace: str = NS) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": name}}, "podMetricsEndpoints": [{"port": "web"}]}}


def scrape_config(name: str, labels: dict | None = None) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "ScrapeConfig",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
            "spec": {"staticConfigs": [{"targets": [f"{name}.example:9100"]}]}}


def probe(name: str, labels: dict | None = None) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Probe",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
            "spec": {"module": "http_2xx", "prober": {"url": "blackbox-exporter:19115"},
                     "targets": {"staticConfig": {"static": [f"https://{name}.example"]}}}}


def _get(kube, res, name, namespace=NS):
    try:
        return kube.get(res, name, namespace)
    except NotFound:
        return None


def _config(kube, name: str) -> dict:
    secret = kube.get(SECRETS, f"prom-agent-{name}", NS)
    return yaml.safe_load(gzip.decompress(base64.b64decode(secret["data"]["prometheus.yaml.gz"])))


def _agents(running) -> AgentController:
    return next(c for c in running.operator.controllers if isinstance(c, AgentController))


def _status(kube, name, namespace=NS) -> dict:
    return (_get(kube, PROMETHEUSAGENTS, name, namespace) or {}).get("status") or {}


# ---- --controller-id -----------------------------------------------------------------------------

def test_only_agents_with_our_controller_id_are_managed(cluster, kube, start_operator):
    op = start_operator(agent="operator-a", controller_id="a")
    kube.create(PROMETHEUSAGENTS, agent("theirs", "b"), NS)
    kube.create(PROMETHEUSAGENTS, agent("none"), NS)  # no ID: not the business of an operator with one
    kube.create(PROMETHEUSAGENTS, agent("mine", "a"), NS)
    eventually(lambda: _get(kube, STATEFULSETS, "prom-agent-mine"), 30, "our agent's StatefulSet")
    eventually(lambda: _status(kube, "mine").get("conditions"), 30, "our agent's status")
    # a later event for all three (a PodMonitor every agent selects): by the time ours saw it, the others would have
    kube.create(PODMONITORS, pod_monitor(), NS)
    eventually(lambda: [j["job_name"] for j in _config(kube, "mine")["scrape_configs"]] == ["podMonitor/default/app/0"],
               30, "our agent's config with the PodMonitor")
    ctl = _agents(op)
    eventually(ctl.idle, 30, "the agent controller idle")
    assert ctl.synced_keys == {"default/mine"}
    for other in ("theirs", "none"):
        assert _get(kube, STATEFULSETS, f"prom-agent-{other}") is None
        assert _get(kube, SECRETS, f"prom-agent-{other}") is None
        assert _status(kube, other) == {}
        assert not [w for w in operator_writes(cluster, "operator-a") if other in (w.name or "")]
    bindings = (kube.get(PODMONITORS, "app", NS).get("status") or {}).get("bindings") or []
    assert [b["name"] for b in bindings if b["resource"] == "prometheusagents"] == ["mine"]

    # handed over to us: managed from then on
    modify(kube, PROMETHEUSAGENTS, "none", NS,
           lambda o: o["metadata"].setdefault("annotations", {}).update({CONTROLLER_ID_ANNOTATION: "a"}))
    eventually(lambda: _get(kube, STATEFULSETS, "prom-agent-none"), 30, "the handed-over agent's StatefulSet")


# ---- instance namespaces and selector ---------------------------------------------------------------

def test_the_prometheus_instance_selector_filters_the_agent_informer(cluster, kube, start_operator):
    op = start_operator(prometheus_instance_selector="team in (a),!skip")
    kube.create(PROMETHEUSAGENTS, agent("ea", labels={"team": "a"}), NS)
    kube.create(PROMETHEUSAGENTS, agent("eb", labels={"team": "b"}), NS)
    kube.create(PROMETHEUSAGENTS, agent("es", labels={"team": "a", "skip": "y"}), NS)
    eventually(lambda: _get(kube, STATEFULSETS, "prom-agent-ea"), 30, "the selected agent's StatefulSet")
    ctl = _agents(op)
    eventually(ctl.idle, 30, "the agent controller idle")
    assert ctl.agents.store.keys() == ["default/ea"]  # filtered by the apiserver, not after
    assert _get(kube, STATEFULSETS, "prom-agent-eb") is None and _get(kube, STATEFULSETS, "prom-agent-es") is None


def test_prometheus_instance_namespaces_win_over_deny_for_agents_not_for_monitors(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": "other"}})
    op = start_operator(deny_namespaces=(NS,), prometheus_instance_namespaces=(NS,))
    kube.create(PODMONITORS, pod_monitor("denied"), NS)  # monitors still follow --deny-namespaces
    kube.create(PROMETHEUSAGENTS, agent("edge"), NS)
    kube.create(PROMETHEUSAGENTS, agent("elsewhere", namespace="other"), "other")  # not an instance namespace
    eventually(lambda: _get(kube, STATEFULSETS, "prom-agent-edge"), 30, "the agent managed despite the deny-list")
    ctl = _agents(op)
    eventually(ctl.idle, 30, "the agent controller idle")
    assert ctl.agents.store.keys() == ["default/edge"]
    assert ctl.podmonitors.store.keys() == []
    assert ctl.statefulsets.store.keys() == ["default/prom-agent-edge"]  # what we create: the instance namespaces
    assert _get(kube, STATEFULSETS, "prom-agent-elsewhere", "other") is None


# ---- ScrapeConfigs --------------------------------------------------------------------------------

def test_an_agent_selecting_a_scrape_config_gets_its_job_and_binds_it(cluster, kube, start_operator):
    start_operator()
    kube.create(SCRAPECONFIGS, scrape_config("picked", {"scrape": "yes"}), NS)
    kube.create(SCRAPECONFIGS, scrape_config("ignored"), NS)
    kube.create(PROMETHEUSAGENTS, agent("edge", podMonitorSelector=None,
                                        scrapeConfigSelector={"matchLabels": {"scrape": "yes"}}), NS)

    def scrape_jobs():
        try:
            return [j["job_name"] for j in _config(kube, "edge")["scrape_configs"]]
        except NotFound:
            return None
    assert eventually(scrape_jobs, 30, "the agent's config") == ["scrapeConfig/default/picked"]

    def bound(name):
        bindings = (kube.get(SCRAPECONFIGS, name, NS).get("status") or {}).get("bindings") or []
        return [b for b in bindings if b["resource"] == "prometheusagents" and b["name"] == "edge"]
    binding = eventually(lambda: bound("picked"), 30, "the ScrapeConfig's binding to the agent")[0]
    assert binding["conditions"][0]["status"] == "True"
    assert bound("ignored") == []

    # a ScrapeConfig event alone reaches the agent: a new one is added to its config
    kube.create(SCRAPECONFIGS, scrape_config("later", {"scrape": "yes"}), NS)
    eventually(lambda: scrape_jobs() == ["scrapeConfig/default/later", "scrapeConfig/default/picked"], 30,
               "the later ScrapeConfig's job")


# ---- Probes ---------------------------------------------------------------------------------------

def test_an_agent_selecting_a_probe_gets_its_job_and_binds_it(cluster, kube, start_operator):
    start_operator()
    kube.create(PROBES, probe("picked", {"probe": "yes"}), NS)
    kube.create(PROBES, probe("ignored"), NS)
    kube.create(PROMETHEUSAGENTS, agent("blackbox", podMonitorSelector=None,
                                        probeSelector={"matchLabels": {"probe": "yes"}}), NS)

    def probe_jobs():
        try:
            return [j["job_name"] for j in _config(kube, "blackbox")["scrape_configs"]]
        except NotFound:
            return None
    assert eventually(probe_jobs, 30, "the agent's config") == ["probe/default/picked"]
    job = next(j for j in _config(kube, "blackbox")["scrape_configs"] if j["job_name"] == "probe/default/picked")
    assert job["params"] == {"module": ["http_2xx"]}

    def bound(name):
        bindings = (kube.get(PROBES, name, NS).get("status") or {}).get("bindings") or []
        return [b for b in bindings if b["resource"] == "prometheusagents" and b["name"] == "blackbox"]
    binding = eventually(lambda: bound("picked"), 30, "the Probe's binding to the agent")[0]
    assert binding["conditions"][0]["status"] == "True"
    assert binding["group"] == "monitoring.coreos.com"
    assert bound("ignored") == []

    # a Probe event alone reaches the agent: a new one is added to its config
    kube.create(PROBES, probe("later", {"probe": "yes"}), NS)
    eventually(lambda: probe_jobs() == ["probe/default/later", "probe/default/picked"], 30,
               "the later Probe's job")
    eventually(lambda: bound("later"), 30, "the later Probe's binding to the agent")
