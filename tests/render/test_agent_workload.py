"""PrometheusAgent StatefulSet/DaemonSet fields, translated from upstream's
pkg/prometheus/agent/statefulset_test.go and daemonset_test.go, and DaemonSet mode's refusals."""

from __future__ import annotations

import pytest

from promop.featuregates import FeatureGates
from promop.render.agent import InvalidAgent, render_agent
from promop.render.model import DEFAULT_PROMETHEUS_VERSION, RenderInputs, RenderOptions

from .upstream_deviations import promop_startup_timing

GATE_ON = RenderOptions(feature_gates=FeatureGates((("PrometheusAgentDaemonSet", True),)))


def agent(name: str = "test", namespace: str = "ns", labels=None, annotations=None, **spec) -> dict:
    md = {"name": name, "namespace": namespace, "uid": "uid-1"}
    if labels:
        md["labels"] = labels
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent", "metadata": md,
            "spec": {"podMonitorSelector": {}, "remoteWrite": [{"url": "http://rw.example/api/v1/write"}], **spec}}


def sts(obj: dict, shard: int = 0) -> dict:
    return render_agent(RenderInputs(prometheus=obj)).statefulsets[shard]


def daemonset(obj: dict) -> dict:
    obj["spec"]["mode"] = "DaemonSet"
    result = render_agent(RenderInputs(prometheus=obj, options=GATE_ON))
    assert result.statefulsets == [] and result.service is None
    return result.daemonsets[0]


def prom_args(workload: dict) -> list[str]:
    return workload["spec"]["template"]["spec"]["containers"][0]["args"]


@pytest.mark.parametrize("version,flag,present", [
    ("v3.0.0", "--agent", True), ("v3.0.0-beta.0", "--agent", True), ("v2.53.0", "--agent", False),
    ("v2.53.0", "--enable-feature=agent", True), ("v3.0.0", "--enable-feature=agent", False)])
@pytest.mark.parametrize("build", [sts, daemonset])
def test_agent_flag(build, version, flag, present):
    assert (flag in prom_args(build(agent(version=version)))) is present


@pytest.mark.parametrize("version,enabled,flag,present", [
    ("v2.30.0", False, "--storage.agent.wal-compression", False),
    ("v2.32.0", None, "--storage.agent.wal-compression", False),
    ("v2.32.0", None, "--no-storage.agent.wal-compression", False),
    ("v2.32.0", False, "--no-storage.agent.wal-compression", True),
    ("v2.32.0", True, "--storage.agent.wal-compression", True)])
def test_wal_compression(version, enabled, flag, present):
    extra = {} if enabled is None else {"walCompression": enabled}
    assert (flag in prom_args(sts(agent(version=version, **extra)))) is present


def test_agent_flags_have_no_server_storage_rules_or_query_flags():
    args = prom_args(sts(agent(version="v2.42.0", query={"maxSamples": 10}, enableFeatures=["exemplar-storage"])))
    assert "--storage.agent.path=/prometheus" in args
    assert "--enable-feature=exemplar-storage,agent" in args
    assert not [a for a in args if a.startswith(("--storage.tsdb", "--web.console", "--query.", "--rules."))]


def test_statefulset_labels_and_annotations():
    obj = agent(labels={"testlabel": "testlabelvalue"}, annotations={
        "testannotation": "testannotationvalue", "kubectl.kubernetes.io/last-applied-configuration": "x",
        "kubectl.kubernetes.io/something": "x"})
    result = render_agent(RenderInputs(prometheus=obj))
    s = result.statefulsets[0]
    assert s["metadata"]["name"] == "prom-agent-test"
    assert s["metadata"]["labels"] == {
        "testlabel": "testlabelvalue", "operator.prometheus.io/name": "test", "operator.prometheus.io/shard": "0",
        "operator.prometheus.io/mode": "agent", "managed-by": "prometheus-operator",
        "app.kubernetes.io/instance": "test", "app.kubernetes.io/managed-by": "prometheus-operator",
        "app.kubernetes.io/name": "prometheus-agent"}
    assert s["metadata"]["annotations"] == {"prometheus-operator-input-hash": result.input_hash,
                                            "testannotation": "testannotationvalue"}
    assert s["spec"]["template"]["metadata"]["labels"] == {
        "app.kubernetes.io/name": "prometheus-agent",
        "app.kubernetes.io/version": DEFAULT_PROMETHEUS_VERSION.lstrip("v"),
        "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/instance": "test",
        "operator.prometheus.io/name": "test", "operator.prometheus.io/shard": "0"}
    assert s["spec"]["selector"]["matchLabels"] == {
        k: v for k, v in s["spec"]["template"]["metadata"]["labels"].items() if k != "app.kubernetes.io/version"}
    assert s["metadata"]["ownerReferences"][0]["kind"] == "PrometheusAgent"
    assert s["metadata"]["ownerReferences"][0]["apiVersion"] == "monitoring.coreos.com/v1alpha1"


def test_daemonset_labels_and_annotations():
    obj = agent(labels={"testlabel": "testlabelvalue"}, annotations={
        "testannotation": "testannotationvalue", "kubectl.kubernetes.io/last-applied-configuration": "x"},
        mode="DaemonSet")
    d = daemonset(obj)
    assert d["kind"] == "DaemonSet" and d["metadata"]["name"] == "prom-agent-test"
    assert d["metadata"]["labels"] == {
        "testlabel": "testlabelvalue", "operator.prometheus.io/name": "test",
        "operator.prometheus.io/mode": "agent", "managed-by": "prometheus-operator",
        "app.kubernetes.io/instance": "test", "app.kubernetes.io/managed-by": "prometheus-operator",
        "app.kubernetes.io/name": "prometheus-agent"}
    assert d["metadata"]["annotations"] == {"testannotation": "testannotationvalue"}
    assert d["spec"]["template"]["metadata"]["labels"] == {
        "app.kubernetes.io/name": "prometheus-agent",
        "app.kubernetes.io/version": DEFAULT_PROMETHEUS_VERSION.lstrip("v"),
        "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/instance": "test",
        "operator.prometheus.io/name": "test"}


def test_daemonset_reloaders_know_their_node():
    pod = daemonset(agent(mode="DaemonSet"))["spec"]["template"]["spec"]
    for c in [*pod["containers"][1:], *pod["initContainers"]]:
        env = {e["name"]: e for e in c["env"]}
        assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


@pytest.mark.parametrize("build", [sts, daemonset])
def test_probes_and_pod_fields(build):
    extra = {"mode": "DaemonSet"} if build is daemonset else {}
    w = build(agent(schedulerName="my-scheduler", enableServiceLinks=False, hostUsers=False,
                    automountServiceAccountToken=False, maximumStartupDurationSeconds=600, **extra))
    pod = w["spec"]["template"]["spec"]
    assert pod["schedulerName"] == "my-scheduler"
    assert pod["enableServiceLinks"] is False and pod["hostUsers"] is False
    assert pod["automountServiceAccountToken"] is False
    startup = pod["containers"][0]["startupProbe"]
    assert (startup["periodSeconds"], startup["failureThreshold"]) == promop_startup_timing(60, 10)  # upstream's case
    assert pod["containers"][0]["readinessProbe"]["httpGet"]["path"] == "/-/ready"
    plain = build(agent(**extra))["spec"]["template"]["spec"]
    assert "enableServiceLinks" not in plain and plain["automountServiceAccountToken"] is True


@pytest.mark.parametrize("policy,expected", [(None, "Parallel"), ("Parallel", "Parallel"),
                                             ("OrderedReady", "OrderedReady")])
def test_pod_management_policy(policy, expected):
    extra = {"podManagementPolicy": policy} if policy else {}
    assert sts(agent(**extra))["spec"]["podManagementPolicy"] == expected


@pytest.mark.parametrize("strategy", [None, {"type": "RollingUpdate"},
                                      {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                                      {"type": "OnDelete"}])
def test_update_strategy(strategy):
    extra = {"updateStrategy": strategy} if strategy else {}
    assert sts(agent(**extra))["spec"]["updateStrategy"] == (strategy or {"type": "RollingUpdate"})


def test_shards_and_governing_service():
    result = render_agent(RenderInputs(prometheus=agent(shards=3)))
    assert [s["metadata"]["name"] for s in result.statefulsets] == [
        "prom-agent-test", "prom-agent-test-shard-1", "prom-agent-test-shard-2"]
    assert {s["spec"]["serviceName"] for s in result.statefulsets} == {"prometheus-agent-operated"}
    assert result.service["metadata"]["name"] == "prometheus-agent-operated"
    assert result.service["spec"]["selector"] == {"app.kubernetes.io/name": "prometheus-agent"}
    assert result.config_secret["metadata"]["name"] == "prom-agent-test"
    pod = result.statefulsets[2]["spec"]["template"]["spec"]
    assert {"name": "config", "secret": {"secretName": "prom-agent-test"}} in pod["volumes"]
    shard_env = {e["name"]: e.get("value") for e in pod["containers"][1]["env"]}
    assert shard_env["SHARD"] == "2"


def test_scrape_failure_log_file_volume():
    mounts = sts(agent(scrapeFailureLogFile="file.log"))["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert any(m["mountPath"] == "/var/log/prometheus" for m in mounts)
    mounts = sts(agent(scrapeFailureLogFile="/tmp/file.log"))["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert not any(m["mountPath"] == "/var/log/prometheus" for m in mounts)


def test_daemonset_mode_needs_the_gate():
    with pytest.raises(InvalidAgent, match="PrometheusAgentDaemonSet feature gate"):
        render_agent(RenderInputs(prometheus=agent(mode="DaemonSet")))


@pytest.mark.parametrize("field,value", [
    ("replicas", 2), ("storage", {"emptyDir": {}}), ("shards", 2),
    ("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain"}), ("scrapeConfigSelector", {}),
    ("probeSelector", {}), ("scrapeConfigNamespaceSelector", {}), ("probeNamespaceSelector", {}),
    ("serviceMonitorSelector", {}), ("serviceMonitorNamespaceSelector", {}),
    ("additionalScrapeConfigs", {"name": "s", "key": "k"})])
def test_daemonset_mode_refuses_fields(field, value):
    with pytest.raises(InvalidAgent, match=f"{field} cannot"):
        render_agent(RenderInputs(prometheus=agent(mode="DaemonSet", **{field: value}), options=GATE_ON))


def test_daemonset_mode_allows_one_shard():
    assert daemonset(agent(mode="DaemonSet", shards=1))["kind"] == "DaemonSet"


def test_daemonset_config_filters_on_node():
    pm = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
          "metadata": {"name": "pm", "namespace": "ns"},
          "spec": {"selector": {}, "podMetricsEndpoints": [{"port": "web"}]}}
    result = render_agent(RenderInputs(prometheus=agent(mode="DaemonSet"), pod_monitors=[pm], options=GATE_ON))
    sd = result.config["scrape_configs"][0]["kubernetes_sd_configs"][0]
    assert sd["selectors"] == [{"role": "pod", "field": "spec.nodeName=$(NODE_NAME)"}]
    assert [d.name for d in result.selection if d.selected] == ["pm"]


@pytest.mark.parametrize("attr,kind,selector,spec,prefix", [
    ("probes", "Probe", "probeSelector",
     {"prober": {"url": "blackbox:9115"}, "targets": {"staticConfig": {"static": ["http://example.com"]}}}, "probe/"),
    ("scrape_configs", "ScrapeConfig", "scrapeConfigSelector",
     {"staticConfigs": [{"targets": ["a.example:9100"]}]}, "scrapeConfig/")])
def test_agent_gets_the_other_scrape_kinds(attr, kind, selector, spec, prefix):
    """The agent renders through the same job pipeline: Probes and ScrapeConfigs reach it (not in DaemonSet mode)."""
    version = "v1" if kind == "Probe" else "v1alpha1"
    obj = {"apiVersion": f"monitoring.coreos.com/{version}", "kind": kind,
           "metadata": {"name": "x", "namespace": "ns"}, "spec": spec}
    result = render_agent(RenderInputs(prometheus=agent(**{selector: {}}), **{attr: [obj]}))
    assert [j["job_name"] for j in result.config["scrape_configs"] if j["job_name"].startswith(prefix)]
    assert any(d.kind == kind and d.selected for d in result.selection)


def test_dns_policy_and_config():
    dns = {"nameservers": ["8.8.8.8", "8.8.4.4"], "searches": ["custom.search"],
           "options": [{"name": "ndots", "value": "5"}]}
    pod = sts(agent(dnsPolicy="ClusterFirst", dnsConfig=dns))["spec"]["template"]["spec"]
    assert pod["dnsPolicy"] == "ClusterFirst"
    assert pod["dnsConfig"] == dns


@pytest.mark.parametrize("path,mounted", [("file.log", True), ("/tmp/file.log", False)])
def test_scrape_failure_log_file_volume_in_daemonset(path, mounted):
    pod = daemonset(agent(scrapeFailureLogFile=path))["spec"]["template"]["spec"]
    assert any(v["name"] == "query-log-file" for v in pod["volumes"]) is mounted
    assert any(m["name"] == "query-log-file" for m in pod["containers"][0]["volumeMounts"]) is mounted
