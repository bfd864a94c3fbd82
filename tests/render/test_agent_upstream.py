"""Upstream's pkg/prometheus/agent/statefulset_test.go and daemonset_test.go (0.93), one test per upstream
test function (same name, snake case; the DaemonSet variants run the same cases on the DaemonSet), asserting
the fields upstream asserts. Inputs are our own objects; docs/workload-conformance.md maps them."""

from __future__ import annotations

import base64

import pytest
import yaml

from promop.certs import CA
from promop.featuregates import AGENT_DAEMONSET, TOPOLOGY_SHARDING, FeatureGates
from promop.render.agent import InvalidAgent, render_agent
from promop.render.model import DEFAULT_PROMETHEUS_VERSION, RenderInputs, RenderOptions

from .upstream_deviations import promop_startup_probe, promop_startup_timing

DAEMONSET_GATE = RenderOptions(feature_gates=FeatureGates(((AGENT_DAEMONSET, True),)))
TOPOLOGY_GATE = RenderOptions(feature_gates=FeatureGates(((TOPOLOGY_SHARDING, True),)))


def agent(spec: dict | None = None, name: str = "test", namespace: str = "ns-test", **md) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent",
            "metadata": {"name": name, "namespace": namespace, "uid": "uid-1", **md},
            "spec": {"podMonitorSelector": {}, "remoteWrite": [{"url": "http://rw.example/api/v1/write"}],
                     **(spec or {})}}


def statefulset(spec: dict | None = None, shard: int = 0, **kw) -> dict:
    return render_agent(RenderInputs(prometheus=agent(spec), **kw)).statefulsets[shard]


def daemonset(spec: dict | None = None, **kw) -> dict:
    result = render_agent(RenderInputs(prometheus=agent({**(spec or {}), "mode": "DaemonSet"}),
                                       **{"options": DAEMONSET_GATE, **kw}))
    return result.daemonsets[0]


BOTH = pytest.mark.parametrize("build", [statefulset, daemonset], ids=["StatefulSet", "DaemonSet"])


def pod(workload: dict) -> dict:
    return workload["spec"]["template"]["spec"]


def container(workload: dict, name: str = "prometheus", init: bool = False) -> dict:
    return next(c for c in pod(workload)["initContainers" if init else "containers"] if c["name"] == name)


# ---- TestListenTLS, TestListenTLSForDaemonSet ----------------------------------------------------------

@pytest.fixture(scope="module")
def tls_objects() -> dict:
    ca = CA.create("promop-agent-web-tls-test")
    cert, key = ca.issue("localhost", hosts=["localhost"])
    return {"secrets": {("ns-test", "some-secret"): {"stringData": {"tls.key": key.decode()}}},
            "configmaps": {("ns-test", "some-configmap"): {"data": {"tls.crt": cert.decode()}}}}


LISTEN_TLS = {"web": {"tlsConfig": {"keySecret": {"name": "some-secret", "key": "tls.key"},
                                    "cert": {"configMap": {"name": "some-configmap", "key": "tls.crt"}}}}}


def _https(path: str) -> dict:
    return {"httpGet": {"path": path, "port": "web", "scheme": "HTTPS"}}


@BOTH
def test_listen_tls(build, tls_objects):
    workload = build(LISTEN_TLS, **tls_objects)
    prom = container(workload)
    assert prom["startupProbe"] == promop_startup_probe({**_https("/-/ready"), "timeoutSeconds": 3, "periodSeconds": 15,
                                                         "failureThreshold": 60})
    assert prom["livenessProbe"] == {**_https("/-/healthy"), "timeoutSeconds": 3, "periodSeconds": 5,
                                     "failureThreshold": 6}
    assert prom["readinessProbe"] == {**_https("/-/ready"), "timeoutSeconds": 3, "periodSeconds": 5,
                                      "failureThreshold": 3}
    reloader = pod(workload)["containers"][1]
    assert reloader["name"] == "config-reloader"
    # upstream's list, then the directory our reloader watches (it takes no rule ConfigMaps in agent mode)
    assert reloader["args"] == [
        "--listen-address=:8080",
        "--web-config-file=/etc/prometheus/web_config/web-config.yaml",
        "--reload-url=https://localhost:9090/-/reload",
        "--config-file=/etc/prometheus/config/prometheus.yaml.gz",
        "--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml",
        "--watched-dir=/etc/prometheus/config",
    ]


@BOTH
def test_listen_tls_serves_the_certificate_it_mounts(build, tls_objects):
    """The web config Secret names the files the pod mounts (without them the agent could not serve TLS)."""
    spec = LISTEN_TLS if build is statefulset else {**LISTEN_TLS, "mode": "DaemonSet"}
    options = RenderOptions() if build is statefulset else DAEMONSET_GATE
    result = render_agent(RenderInputs(prometheus=agent(spec), options=options, **tls_objects))
    web = yaml.safe_load(base64.b64decode(result.web_config_secret["data"]["web-config.yaml"]))
    files = web["tls_server_config"]
    workload = (result.statefulsets or result.daemonsets)[0]
    mounted = [m["mountPath"] for m in container(workload)["volumeMounts"]]
    for path in (files["cert_file"], files["key_file"]):
        assert any(path.startswith(m + "/") for m in mounted), path


def test_listen_tls_with_a_missing_secret_refuses_the_agent_in_one_line(tls_objects):
    with pytest.raises(InvalidAgent, match="spec.web.tlsConfig.keySecret") as info:
        render_agent(RenderInputs(prometheus=agent(LISTEN_TLS), configmaps=tls_objects["configmaps"]))
    assert "\n" not in str(info.value)


# ---- flags -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version, enabled, flag, present", [
    ("v2.30.0", False, "--storage.agent.wal-compression", False),
    ("v2.32.0", None, "--storage.agent.wal-compression", False),
    ("v2.32.0", False, "--no-storage.agent.wal-compression", True),
    ("v2.32.0", True, "--storage.agent.wal-compression", True),
])
def test_wal_compression(version, enabled, flag, present):
    spec = {"version": version, **({} if enabled is None else {"walCompression": enabled})}
    assert (flag in container(statefulset(spec))["args"]) is present


@BOTH
@pytest.mark.parametrize("version, flag, present", [("v3.0.0", "--agent", True), ("v3.0.0-beta.0", "--agent", True),
                                                    ("v2.53.0", "--agent", False)])
def test_prometheus_agent_command_line_flag(build, version, flag, present):
    """TestPrometheusAgentCommandLineFlag{,ForDaemonSet} (upstream's DaemonSet variant builds a StatefulSet)."""
    assert (flag in container(build({"version": version}))["args"]) is present


@BOTH
@pytest.mark.parametrize("maximum, period, failures", [(None, 15, 60), (600, 60, 10)])
def test_startup_probe_timeout_seconds(build, maximum, period, failures):
    probe = container(build({} if maximum is None else {"maximumStartupDurationSeconds": maximum}))["startupProbe"]
    assert (probe["periodSeconds"], probe["failureThreshold"]) == promop_startup_timing(period, failures)


# ---- pod fields ----------------------------------------------------------------------------------------------

_TSC = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}
_APP = {"labelSelector": {"matchLabels": {"app": "prometheus"}}}
_AGENT_LABELS = {"app": "prometheus", "app.kubernetes.io/instance": "test",
                 "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": "prometheus-agent",
                 "operator.prometheus.io/name": "test"}
TSC_CASES = [
    ("without labelSelector and additionalLabels", _TSC, _TSC),
    ("with labelSelector and without additionalLabels", {**_TSC, **_APP}, {**_TSC, **_APP}),
    ("with labelSelector and additionalLabels as ResourceName",
     {**_TSC, **_APP, "additionalLabelSelectors": "ResourceName"},
     {**_TSC, "labelSelector": {"matchLabels": _AGENT_LABELS}}),
]
SHARD_CASE = ("with labelSelector and additionalLabels as ShardAndNameResource",
              {**_TSC, **_APP, "additionalLabelSelectors": "ShardAndResourceName"},
              {**_TSC, "labelSelector": {"matchLabels": {**_AGENT_LABELS, "operator.prometheus.io/shard": "0"}}})


@pytest.mark.parametrize("name, tsc, expected", [*TSC_CASES, SHARD_CASE], ids=[c[0] for c in [*TSC_CASES, SHARD_CASE]])
def test_pod_topology_spread_constraint_with_additional_labels(name, tsc, expected):
    assert pod(statefulset({"topologySpreadConstraints": [tsc]}))["topologySpreadConstraints"][0] == expected


@pytest.mark.parametrize("name, tsc, expected", [*TSC_CASES, (SHARD_CASE[0], SHARD_CASE[1], TSC_CASES[2][2])],
                         ids=[c[0] for c in [*TSC_CASES, SHARD_CASE]])
def test_pod_topology_spread_constraint_with_additional_labels_for_daemonset(name, tsc, expected):
    """Upstream runs the first three cases on the DaemonSet; with ShardAndResourceName there is no shard
    label to add in DaemonSet mode (its pods have none), so it equals ResourceName."""
    assert pod(daemonset({"topologySpreadConstraints": [tsc]}))["topologySpreadConstraints"][0] == expected


@BOTH
@pytest.mark.parametrize("value, expected", [(None, True), (True, True), (False, False)])
def test_automount_service_account_token(build, value, expected):
    spec = {} if value is None else {"automountServiceAccountToken": value}
    assert pod(build(spec))["automountServiceAccountToken"] is expected


@BOTH
def test_scheduler_name(build):
    assert pod(build({"schedulerName": "my-scheduler"}))["schedulerName"] == "my-scheduler"


def test_statefulset_dns_policy_and_dns_config():
    dns = {"nameservers": ["8.8.8.8", "8.8.4.4"], "searches": ["custom.search"],
           "options": [{"name": "ndots", "value": "5"}]}
    p = pod(statefulset({"dnsPolicy": "ClusterFirst", "dnsConfig": dns}))
    assert p["dnsPolicy"] == "ClusterFirst"
    assert p["dnsConfig"] == dns


@BOTH
@pytest.mark.parametrize("path, mounted", [("file.log", True), ("/tmp/file.log", False)])
def test_scrape_failure_log_file_volume_mount(build, path, mounted):
    """TestScrapeFailureLogFileVolumeMount{Present,NotPresent} (upstream's Present case builds the DaemonSet,
    NotPresent the StatefulSet; both are run on both here)."""
    w = build({"scrapeFailureLogFile": path})
    assert any(v["name"] == "query-log-file" for v in pod(w)["volumes"]) is mounted
    assert any(m["name"] == "query-log-file" for m in container(w)["volumeMounts"]) is mounted


LABELS = {"testlabel": "testlabelvalue"}
ANNOTATIONS = {"testannotation": "testannotationvalue", "kubectl.kubernetes.io/last-applied-configuration": "something",
               "kubectl.kubernetes.io/something": "something"}
POD_LABELS = {"app.kubernetes.io/name": "prometheus-agent",
              "app.kubernetes.io/version": DEFAULT_PROMETHEUS_VERSION.lstrip("v"),
              "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/instance": "test",
              "operator.prometheus.io/name": "test"}


def test_statefulset_labeling_and_annotations():
    result = render_agent(RenderInputs(prometheus=agent(namespace="ns", labels=LABELS, annotations=ANNOTATIONS)))
    s = result.statefulsets[0]
    assert s["metadata"]["labels"] == {
        "testlabel": "testlabelvalue", "operator.prometheus.io/name": "test", "operator.prometheus.io/shard": "0",
        "operator.prometheus.io/mode": "agent", "managed-by": "prometheus-operator",
        "app.kubernetes.io/instance": "test", "app.kubernetes.io/managed-by": "prometheus-operator",
        "app.kubernetes.io/name": "prometheus-agent"}
    # upstream's "abc" is the hash its test passes in; promop computes its own (a documented difference)
    assert s["metadata"]["annotations"] == {"prometheus-operator-input-hash": result.input_hash,
                                            "testannotation": "testannotationvalue"}
    assert s["spec"]["template"]["metadata"]["labels"] == {**POD_LABELS, "operator.prometheus.io/shard": "0"}


def test_daemonset_labeling_and_annotations():
    d = render_agent(RenderInputs(prometheus=agent({"mode": "DaemonSet"}, namespace="ns", labels=LABELS,
                                                   annotations=ANNOTATIONS), options=DAEMONSET_GATE)).daemonsets[0]
    assert d["metadata"]["labels"] == {
        "testlabel": "testlabelvalue", "operator.prometheus.io/name": "test", "operator.prometheus.io/mode": "agent",
        "managed-by": "prometheus-operator", "app.kubernetes.io/instance": "test",
        "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": "prometheus-agent"}
    assert d["metadata"]["annotations"] == {"testannotation": "testannotationvalue"}
    assert d["spec"]["template"]["metadata"]["labels"] == POD_LABELS


@BOTH
@pytest.mark.parametrize("value", [False, True, None])
def test_enable_service_links(build, value):
    """TestStatefulSetenableServiceLinks, TestDaemonSetenableServiceLinks."""
    assert pod(build({} if value is None else {"enableServiceLinks": value})).get("enableServiceLinks") is value


@pytest.mark.parametrize("value", [True, False])
def test_host_users_for_daemonset(value):
    assert pod(daemonset({"hostUsers": value}))["hostUsers"] is value


@pytest.mark.parametrize("policy, expected", [(None, "Parallel"), ("Parallel", "Parallel"),
                                              ("OrderedReady", "OrderedReady")])
def test_stateful_pod_management_policy(policy, expected):
    assert statefulset({} if policy is None else {"podManagementPolicy": policy})["spec"]["podManagementPolicy"] \
        == expected


@pytest.mark.parametrize("strategy, expected", [
    (None, {"type": "RollingUpdate"}),
    ({"type": "RollingUpdate"}, {"type": "RollingUpdate"}),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
     {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
    ({"type": "OnDelete"}, {"type": "OnDelete"}),
])
def test_statefulset_update_strategy(strategy, expected):
    assert statefulset({} if strategy is None else {"updateStrategy": strategy})["spec"]["updateStrategy"] == expected


# ---- TestConfigReloaderTopologyZoneEnvVar, and the rest of topology sharding in agent mode -----------------

ZONES = {"shards": 2, "shardingStrategy": {"mode": "Topology", "topology": {"values": ["zone-a", "zone-b"]}}}


def _env(c: dict) -> dict:
    return {e["name"]: e.get("value") for e in c.get("env") or []}


@pytest.mark.parametrize("spec, shard, zone", [(ZONES, 0, "zone-a"), (ZONES, 1, "zone-b"), ({}, 0, None)],
                         ids=["shard 0 gets zone-a", "shard 1 gets zone-b", "no topology mode means no zone env var"])
def test_config_reloader_topology_zone_env_var(spec, shard, zone):
    """Upstream builds shard 1 of a one-shard agent directly; the CRD needs a shard per zone, so ours has two."""
    s = statefulset(spec, shard, options=TOPOLOGY_GATE)
    for c in (container(s, "config-reloader"), container(s, "init-config-reloader", init=True)):
        assert _env(c).get("TOPOLOGY_ZONE") == zone


def test_topology_sharding_pins_each_agent_shard_to_the_zone_its_config_keeps():
    """The agent's config keeps targets of `$(TOPOLOGY_ZONE)` and in-zone shard `$(INZONE_SHARD)`: every shard's
    reloaders must define both, and its pods must run in that zone (common_test.go TestNodeSelectorWithTopologyZone)."""
    spec = {**ZONES, "shards": 4, "nodeSelector": {"foo": "bar", "topology.kubernetes.io/zone": "will-be-replaced"}}
    pm = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor", "metadata": {"name": "pm", "namespace": "ns-test"},
          "spec": {"selector": {}, "podMetricsEndpoints": [{"port": "web"}]}}
    result = render_agent(RenderInputs(prometheus=agent(spec), pod_monitors=[pm], options=TOPOLOGY_GATE))
    text = result.config_text
    assert "$(TOPOLOGY_ZONE)" in text and "$(INZONE_SHARD)" in text
    for shard, s in enumerate(result.statefulsets):
        zone = ["zone-a", "zone-b"][shard % 2]
        assert pod(s)["nodeSelector"] == {"foo": "bar", "topology.kubernetes.io/zone": zone}
        for c in (container(s, "config-reloader"), container(s, "init-config-reloader", init=True)):
            env = _env(c)
            assert (env["TOPOLOGY_ZONE"], env["INZONE_SHARD"], env["SHARD"]) == (zone, str(shard // 2), str(shard))
        assert "TOPOLOGY_ZONE" not in _env(container(s))


def test_topology_sharding_without_the_gate_pins_nothing():
    s = statefulset({**ZONES, "nodeSelector": {"foo": "bar"}}, 1)
    assert pod(s)["nodeSelector"] == {"foo": "bar"}
    assert "TOPOLOGY_ZONE" not in _env(container(s, "config-reloader"))


def test_topology_sharding_with_fewer_shards_than_zones_refuses_the_agent_in_one_line():
    spec = {"shards": 2, "shardingStrategy": {"mode": "Topology", "topology": {"values": ["a", "b", "c"]}}}
    with pytest.raises(InvalidAgent) as info:
        render_agent(RenderInputs(prometheus=agent(spec), options=TOPOLOGY_GATE))
    assert "shards must be greater than or equal to the number of topology values" in str(info.value)
    assert "\n" not in str(info.value)


def test_additional_args_that_repeat_a_managed_flag_are_dropped_with_a_warning():
    """As for a Prometheus (server TestPrometheusAdditionalArgsDuplicate; promop drops and warns where upstream
    refuses): the agent's own managed flags count, e.g. --storage.agent.path."""
    spec = {"additionalArgs": [{"name": "storage.agent.path", "value": "/elsewhere"},
                               {"name": "scrape.discovery-reload-interval", "value": "30s"}]}
    result = render_agent(RenderInputs(prometheus=agent(spec)))
    flags = container(result.statefulsets[0])["args"]
    assert "--storage.agent.path=/elsewhere" not in flags and flags[-1] == "--scrape.discovery-reload-interval=30s"
    (warning,) = [w for w in result.warnings if w.field == "spec.additionalArgs"]
    assert warning.message.startswith("--storage.agent.path is managed by the operator")
