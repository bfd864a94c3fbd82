"""Upstream's pkg/prometheus/server/statefulset_test.go (0.93), one test per upstream test function (same
name, snake case), asserting the fields upstream asserts. Inputs are our own objects. The Thanos sidecar's
tests are translated in test_thanos_sidecar.py, web TLS in test_webconfig.py, the topology zone in
test_topology.py; docs/workload-conformance.md maps each upstream test to its translation."""

from __future__ import annotations

import pytest

from promop.render.model import DEFAULT_PROMETHEUS_VERSION, RenderInputs, RenderOptions
from promop.render.pipeline import render
from promop.render.statefulset import build_statefulsets, shard_count, statefulset_name
from promop.render.unsupported import unsupported_fields

from .upstream_deviations import promop_startup_probe, promop_startup_timing

SHA = "7384a79f4b4991bf8269e7452390249b7c70bcdd10509c8c1c6c6e30e32fb324"


def prom(spec: dict | None = None, name: str = "test", namespace: str = "ns-test", **md) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": name, "namespace": namespace, "uid": "uid-1", **md}, "spec": spec or {}}


def sts(spec: dict | None = None, shard: int = 0, options: RenderOptions = RenderOptions(), **md) -> dict:
    return build_statefulsets(prom(spec, **md), options, [], [], "abc")[shard]


def pod(s: dict) -> dict:
    return s["spec"]["template"]["spec"]


def container(s: dict, name: str = "prometheus") -> dict:
    return next(c for c in pod(s)["containers"] if c["name"] == name)


def args(spec: dict | None = None) -> list[str]:
    return container(sts(spec))["args"]


def test_pod_labels_annotations():
    s = sts({"podMetadata": {"labels": {"testlabel": "testvalue"}, "annotations": {"testannotation": "testvalue"}}})
    assert s["spec"]["template"]["metadata"]["labels"]["testlabel"] == "testvalue"
    assert s["spec"]["template"]["metadata"]["annotations"]["testannotation"] == "testvalue"


def test_pod_labels_should_not_be_selector_labels():
    s = sts({"podMetadata": {"labels": {"testlabel": "testvalue"}}})
    assert "testlabel" not in s["spec"]["selector"]["matchLabels"]


def test_statefulset_pvc():
    template = {"metadata": {"annotations": {"testannotation": "testannotationvalue"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "storageclass"}}
    s = sts({"storage": {"volumeClaimTemplate": template}}, labels={"testlabel": "testlabelvalue"})
    assert s["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "storageclass"


def test_statefulset_empty_dir():
    volumes = pod(sts({"storage": {"emptyDir": {"medium": "Memory"}}}))["volumes"]
    assert volumes[-1]["emptyDir"]["medium"] == "Memory"  # the last volume, as upstream asserts


def test_statefulset_ephemeral():
    ephemeral = {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "storageclass"}}}
    volumes = pod(sts({"storage": {"ephemeral": ephemeral}}))["volumes"]
    assert volumes[-1]["ephemeral"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "storageclass"


def test_additional_config_map():
    s = sts({"configMaps": ["test-cm1"]})
    assert any(v["name"].startswith("configmap-test-cm1") for v in pod(s)["volumes"])
    assert any(m["name"].startswith("configmap-test-cm1") and m["mountPath"] == "/etc/prometheus/configmaps/test-cm1"
               for m in container(s)["volumeMounts"])


def test_listen_local():
    c = container(sts({"listenLocal": True}))
    assert "--web.listen-address=127.0.0.1:9090" in c["args"]

    def handler(path: str) -> dict:
        url = f"http://localhost:9090{path}"
        return {"exec": {"command": ["sh", "-c", f'if [ -x "$(command -v curl)" ]; then exec curl --fail {url}; elif '
                                                 f'[ -x "$(command -v wget)" ]; then exec wget -q -O /dev/null {url}; '
                                                 f'else exit 1; fi']}}

    assert c["startupProbe"] == promop_startup_probe({**handler("/-/ready"), "timeoutSeconds": 3, "periodSeconds": 15,
                                                      "failureThreshold": 60})
    assert c["livenessProbe"] == {**handler("/-/healthy"), "timeoutSeconds": 3, "periodSeconds": 5, "failureThreshold": 6}
    assert c["readinessProbe"] == {**handler("/-/ready"), "timeoutSeconds": 3, "periodSeconds": 5, "failureThreshold": 3}
    assert not c.get("ports")


@pytest.mark.parametrize("spec, expected", [
    ({"version": "v2.3.2", "tag": "my-unrelated-tag"}, "quay.io/prometheus/prometheus:my-unrelated-tag"),
    ({"version": "v2.3.2", "sha": SHA, "tag": "my-unrelated-tag"}, f"quay.io/prometheus/prometheus@sha256:{SHA}"),
    ({"version": "v2.3.2", "image": "my-reg/prometheus", "sha": SHA, "tag": "my-unrelated-tag"}, "my-reg/prometheus"),
    ({"version": "v2.3.2", "image": "my-reg/prometheus:latest", "sha": SHA, "tag": "my-unrelated-tag"},
     "my-reg/prometheus:latest"),
    ({"version": "v2.3.2", "image": "my-reg/prometheus"}, "my-reg/prometheus"),
    ({"version": "v2.3.2", "image": "my-reg/prometheus", "sha": SHA}, "my-reg/prometheus"),
    ({"image": "my-reg/prometheus"}, "my-reg/prometheus"),
    ({"image": "my-reg/prometheus", "sha": SHA}, "my-reg/prometheus"),
    ({"image": "", "tag": "my-unrelated-tag"}, "quay.io/prometheus/prometheus:my-unrelated-tag"),  # "" is no image
    ({"image": f"my-reg/prometheus@sha256:{SHA[:-1]}5", "sha": SHA, "tag": "my-unrelated-tag"},
     f"my-reg/prometheus@sha256:{SHA[:-1]}5"),
])
def test_tag_and_sha_and_version(spec, expected):
    assert container(sts(spec))["image"] == expected


def test_prometheus_default_base_image_flag():
    options = RenderOptions(prometheus_default_base_image="nondefaultuseflag/quay.io/prometheus/prometheus")
    s = sts(options=options, labels={"testlabel": "testlabelvalue"})
    assert container(s)["image"] == f"nondefaultuseflag/quay.io/prometheus/prometheus:{DEFAULT_PROMETHEUS_VERSION}"


@pytest.mark.parametrize("version, retention, size, retention_arg, size_arg, has_retention, has_size", [
    ("v2.5.0", "", "", "--storage.tsdb.retention=24h", "--storage.tsdb.retention.size=", True, False),
    ("v2.5.0", "1d", "", "--storage.tsdb.retention=1d", "--storage.tsdb.retention.size=", True, False),
    ("v2.5.0", "", "512MB", "--storage.tsdb.retention=24h", "--storage.tsdb.retention.size=512MB", True, False),
    ("v2.5.0", "1d", "512MB", "--storage.tsdb.retention=1d", "--storage.tsdb.retention.size=512MB", True, False),
    ("v2.7.0", "", "", "--storage.tsdb.retention.time=24h", "--storage.tsdb.retention.size=", True, False),
    ("v2.7.0", "1d", "", "--storage.tsdb.retention.time=1d", "--storage.tsdb.retention.size=", True, False),
    ("v2.7.0", "", "512MB", "--storage.tsdb.retention.time=24h", "--storage.tsdb.retention.size=512MB", False, True),
    ("v2.7.0", "1d", "512MB", "--storage.tsdb.retention.time=1d", "--storage.tsdb.retention.size=512MB", True, True),
    ("v3.10.0", "1d", "512MB", "--storage.tsdb.retention.time=1d", "--storage.tsdb.retention.size=512MB", True, True),
    ("v3.11.0", "", "", "--storage.tsdb.retention.time=24h", "--storage.tsdb.retention.size=", False, False),
    ("v3.11.0", "1d", "", "--storage.tsdb.retention.time=1d", "--storage.tsdb.retention.size=", False, False),
    ("v3.11.0", "", "512MB", "--storage.tsdb.retention.time=24h", "--storage.tsdb.retention.size=512MB", False, False),
    ("v3.11.0", "1d", "512MB", "--storage.tsdb.retention.time=1d", "--storage.tsdb.retention.size=512MB", False, False),
])
def test_retention_and_retention_size(version, retention, size, retention_arg, size_arg, has_retention, has_size):
    spec = {"version": version, **({"retention": retention} if retention else {}),
            **({"retentionSize": size} if size else {})}
    flags = args(spec)
    retention_flag = retention_arg.split("=")[0] + "="
    assert any(f.startswith(retention_flag) for f in flags) is has_retention
    if has_retention:
        assert retention_arg in flags
    assert any(f.startswith("--storage.tsdb.retention.size") for f in flags) is has_size
    if has_size:
        assert size_arg in flags


def test_replicas_configuration_with_sharding():
    s = sts({"replicas": 2, "shards": 3}, shard=1)
    assert s["spec"]["replicas"] == 2
    assert {"name": "SHARD", "value": "1"} in container(s, "config-reloader")["env"]


def test_additional_containers():
    base = pod(sts())["containers"]
    added = pod(sts({"containers": [{"name": "extra-container"}]}))["containers"]
    assert len(added) == len(base) + 1
    merged = pod(sts({"containers": [{"name": "prometheus", "image": "madeUpContainerImage"}]}))["containers"]
    assert len(merged) == len(base)
    assert next(c for c in merged if c["name"] == "prometheus")["image"] == "madeUpContainerImage"


@pytest.mark.parametrize("version, enabled, flag, present", [
    ("v2.10.0", None, "--no-storage.tsdb.wal-compression", False),
    ("v2.10.0", None, "--storage.tsdb.wal-compression", False),
    ("v2.10.0", False, "--no-storage.tsdb.wal-compression", False),
    ("v2.10.0", True, "--storage.tsdb.wal-compression", False),
    ("v2.11.0", None, "--no-storage.tsdb.wal-compression", False),
    ("v2.11.0", None, "--storage.tsdb.wal-compression", False),
    ("v2.11.0", False, "--no-storage.tsdb.wal-compression", True),
    ("v2.11.0", True, "--storage.tsdb.wal-compression", True),
])
def test_wal_compression(version, enabled, flag, present):
    spec = {"version": version, **({} if enabled is None else {"walCompression": enabled})}
    assert (flag in args(spec)) is present


@pytest.mark.parametrize("version, present", [("v2.10.0", False), ("v2.11.0", True), ("v2.38.0", True),
                                              ("v2.39.0", False)])
def test_tsdb_allow_overlapping_blocks(version, present):
    assert ("--storage.tsdb.allow-overlapping-blocks" in args({"version": version, "allowOverlappingBlocks": True})) \
        is present


def test_termination_policy():
    assert {c["terminationMessagePolicy"] for c in pod(sts())["containers"]} == {"FallbackToLogsOnError"}


def test_enable_features_with_one_feature():
    assert "--enable-feature=exemplar-storage" in args({"enableFeatures": ["exemplar-storage"]})


def test_enable_features_with_multiple_feature():
    flags = args({"enableFeatures": ["exemplar-storage1", "exemplar-storage2"]})
    assert "--enable-feature=exemplar-storage1,exemplar-storage2" in flags


@pytest.mark.parametrize("encoding, features, present", [
    (None, [], False),
    ({"floats": "xor"}, [], False),
    ({"floats": "xor2"}, [], True),  # the chunk encoding turns the feature on
    ({"floats": "xor2"}, ["xor2-encoding"], True),  # and does not repeat it
])
def test_auto_enable_xor2_encoding_feature(encoding, features, present):
    spec = {"version": "v3.13.0", "tsdb": {"chunkEncoding": encoding} if encoding else {}, "enableFeatures": features}
    flags = args(spec)
    assert ("--enable-feature=xor2-encoding" in flags) is present
    assert sum(f.count("xor2-encoding") for f in flags) == int(present)


def test_web_page_title():
    assert "--web.page-title=my-page-title" in args({"web": {"pageTitle": "my-page-title"}})


def test_max_connections():
    assert "--web.max-connections=600" in args({"web": {"maxConnections": 600}})


def test_expected_statefulset_shard_names():
    p = prom({"shards": 3, "replicas": 2})
    assert [statefulset_name(p, i) for i in range(shard_count(p["spec"]))] == [
        "prometheus-test", "prometheus-test-shard-1", "prometheus-test-shard-2"]


def test_expect_statefulset_min_ready_seconds():
    assert sts()["spec"].get("minReadySeconds", 0) == 0
    assert sts({"minReadySeconds": 5})["spec"]["minReadySeconds"] == 5


def test_config_reloader():
    reloader = container(sts(), "config-reloader")
    assert reloader["args"] == [
        "--listen-address=:8080", "--reload-url=http://localhost:9090/-/reload",
        "--config-file=/etc/prometheus/config/prometheus.yaml.gz",
        "--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml",
        "--watched-dir=/etc/prometheus/config"]
    assert [e["value"] for e in reloader["env"] if e["name"] == "SHARD"] == ["0"]


def test_config_reloader_with_signal():
    s = sts({"reloadStrategy": "ProcessSignal"})
    assert container(s, "config-reloader")["args"] == [
        "--listen-address=:8080", "--reload-method=signal",
        "--runtimeinfo-url=http://localhost:9090/api/v1/status/runtimeinfo",
        "--config-file=/etc/prometheus/config/prometheus.yaml.gz",
        "--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml",
        "--watched-dir=/etc/prometheus/config"]
    assert "--web.enable-lifecycle" not in container(s)["args"]
    init = next(c for c in pod(s)["initContainers"] if c["name"] == "init-config-reloader")
    assert init["args"] == [
        "--watch-interval=0", "--listen-address=:8081", "--config-file=/etc/prometheus/config/prometheus.yaml.gz",
        "--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml", "--watched-dir=/etc/prometheus/config"]
    assert [e["value"] for e in init["env"] if e["name"] == "SHARD"] == ["0"]


@pytest.mark.parametrize("field", ["queryLogFile", "scrapeFailureLogFile"])
@pytest.mark.parametrize("path, mounted", [("test.log", True), ("/tmp/test.log", False)])
def test_query_and_scrape_failure_log_file_volume_mount(field, path, mounted):
    """TestQueryLogFileVolumeMount{Present,NotPresent}, TestScrapeFailureLogFileVolumeMount{Present,NotPresent}."""
    s = sts({field: path})
    assert any(v["name"] == "query-log-file" for v in pod(s)["volumes"]) is mounted
    assert any(m["name"] == "query-log-file" for m in container(s)["volumeMounts"]) is mounted


@pytest.mark.parametrize("version, enabled, messages, flag, accepted", [
    ("2.32.0", True, [], False, ""),
    ("2.33.0", True, [], True, ""),
    ("2.33.0", False, [], False, ""),
    ("2.33.5", True, [], True, ""),
    ("2.53.0", True, ["V2.0"], True, ""),
    ("2.54.0", True, ["V2.0"], True, "io.prometheus.write.v2.Request"),
    ("2.54.0", True, ["V1.0", "V2.0"], True, "prometheus.WriteRequest,io.prometheus.write.v2.Request"),
])
def test_remote_write_receiver(version, enabled, messages, flag, accepted):
    spec = {"version": version, "enableRemoteWriteReceiver": enabled, "remoteWriteReceiverMessageVersions": messages}
    flags = args(spec)
    assert ("--web.enable-remote-write-receiver" in flags) is flag
    values = [f.split("=", 1)[1] for f in flags if f.startswith("--web.remote-write-receiver.accepted-protobuf-messages=")]
    assert values == ([accepted] if accepted else [])


def test_remote_write_receiver_message_versions_are_not_reported_as_unsupported():
    assert not unsupported_fields(prom({"remoteWriteReceiverMessageVersions": ["V2.0"]}))


def test_pod_template_config():
    affinity = {"nodeAffinity": {}, "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"podAffinityTerm": {"namespaces": ["foo"]}, "weight": 100}]}, "podAntiAffinity": {}}
    spec = {"nodeSelector": {"foo": "bar"}, "affinity": affinity, "tolerations": [{"key": "key"}],
            "securityContext": {"runAsUser": 1234}, "priorityClassName": "foo", "serviceAccountName": "prometheus-sa",
            "hostAliases": [{"hostnames": ["foo.com"], "ip": "1.1.1.1"}], "imagePullPolicy": "Always",
            "imagePullSecrets": [{"name": "registry-secret"}], "schedulerName": "my-scheduler", "hostNetwork": False,
            "hostUsers": True}
    p = pod(sts(spec))
    assert p["nodeSelector"] == {"foo": "bar"}
    assert p["affinity"] == affinity
    assert p["tolerations"] == [{"key": "key"}]
    assert p["securityContext"] == {"runAsUser": 1234}
    assert (p["priorityClassName"], p["serviceAccountName"], p["schedulerName"]) == ("foo", "prometheus-sa",
                                                                                      "my-scheduler")
    assert len(p["hostAliases"]) == 1
    assert p["hostUsers"] is True
    assert {c["imagePullPolicy"] for c in p["containers"] + p["initContainers"]} == {"Always"}
    assert p["imagePullSecrets"] == [{"name": "registry-secret"}]
    assert p.get("hostNetwork", False) is False


V2_ARGS = [
    "--config.file=/etc/prometheus/config_out/prometheus.env.yaml",
    "--web.console.templates=/etc/prometheus/consoles",
    "--web.console.libraries=/etc/prometheus/console_libraries",
    "--web.enable-lifecycle",
    "--web.route-prefix=/",
    "--storage.tsdb.retention.time=24h",
    "--storage.tsdb.path=/prometheus",
    "--web.config.file=/etc/prometheus/web_config/web-config.yaml",
    "--scrape.discovery-reload-interval=30s",
    "--storage.tsdb.no-lockfile",
]


@pytest.mark.parametrize("version, expected", [("v2.54.0", V2_ARGS), ("v3.0.0", V2_ARGS[:1] + V2_ARGS[3:])])
def test_prometheus_additional_args_no_error(version, expected):
    spec = {"version": version, "additionalArgs": [{"name": "scrape.discovery-reload-interval", "value": "30s"},
                                                   {"name": "storage.tsdb.no-lockfile"}]}
    assert args(spec) == expected


@pytest.mark.parametrize("spec, given, dropped", [
    ({"additionalArgs": [{"name": "config.file", "value": "/foo/bar.yaml"}]}, "config.file",
     "--config.file=/foo/bar.yaml"),
    ({"additionalArgs": [{"name": "web.enable-lifecycle"}]}, "web.enable-lifecycle", None),
    ({"walCompression": True, "additionalArgs": [{"name": "no-storage.tsdb.wal-compression"}]},
     "no-storage.tsdb.wal-compression", "--no-storage.tsdb.wal-compression"),
])
def test_prometheus_additional_args_duplicate(spec, given, dropped):
    """TestPrometheusAdditional{,Binary,NoPrefix}ArgsDuplicate. Deliberate difference: upstream refuses the whole
    StatefulSet; promop keeps the operator's flag, drops the duplicate and warns naming it."""
    flags = args(spec)
    assert dropped not in flags
    assert flags.count("--web.enable-lifecycle") == 1
    (warning,) = [w for w in unsupported_fields(prom(spec)) if w.field == "spec.additionalArgs"]
    assert warning.message.startswith(f"--{given} is managed by the operator")


@pytest.mark.parametrize("version, env", [("v2.51.2", True), ("v2.54.0", False)])
def test_runtime_gogc_env_var(version, env):
    c = container(sts({"version": version, "runtime": {"goGC": 50}}))
    assert ({"name": "GOGC", "value": "50"} in (c.get("env") or [])) is env


def test_runtime_gogc_before_2_53_is_in_the_environment_not_the_config():
    """Below 2.53 the config has no runtime section (Prometheus would refuse it) and nothing says it is ignored."""
    from .helpers import prometheus_obj
    result = render(RenderInputs(prometheus_obj(version="v2.51.2", runtime={"goGC": 50})))
    assert "runtime" not in result.config
    assert not [w for w in result.warnings if w.field.startswith("spec.runtime")]
    assert {"name": "GOGC", "value": "50"} in result.statefulsets[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    newer = render(RenderInputs(prometheus_obj(version="v2.54.0", runtime={"goGC": 50})))
    assert newer.config["runtime"] == {"gogc": 50}


@pytest.mark.parametrize("query, version, expected", [
    ({}, None, []),
    ({"lookbackDelta": "2m", "maxConcurrency": 10, "maxSamples": 10000, "timeout": "1m"}, None,
     ["--query.lookback-delta=2m", "--query.max-concurrency=10", "--query.max-samples=10000", "--query.timeout=1m"]),
    ({"lookbackDelta": "2m", "maxConcurrency": 0, "maxSamples": 0, "timeout": "1m"}, None,
     ["--query.lookback-delta=2m", "--query.timeout=1m"]),
    ({"maxConcurrency": 1}, None, ["--query.max-concurrency=1"]),
    ({"lookbackDelta": "2m", "maxConcurrency": 10, "maxSamples": 10000, "timeout": "1m"}, "v2.4.0",
     ["--query.lookback-delta=2m", "--query.max-concurrency=10", "--query.timeout=1m"]),
    ({"lookbackDelta": "2m", "maxConcurrency": 10, "maxSamples": 10000, "timeout": "1m"}, "v2.5.0",
     ["--query.lookback-delta=2m", "--query.max-concurrency=10", "--query.max-samples=10000", "--query.timeout=1m"]),
])
def test_prometheus_query_spec(query, version, expected):
    spec = {"query": query, **({"version": version} if version else {})}
    assert [f for f in args(spec) if f.startswith("--query.")] == expected


@pytest.mark.parametrize("thanos", [None, {}, {"objectStorageConfigFile": "/etc/thanos.cfg"}])
def test_security_context_capabilities(thanos):
    containers = pod(sts({} if thanos is None else {"thanos": thanos}))["containers"]
    assert len(containers) == (2 if thanos is None else 3)
    for c in containers:
        assert not c["securityContext"]["capabilities"].get("add")
        assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]


def test_pod_host_network_config():
    p = pod(sts({"hostNetwork": True}))
    assert p["hostNetwork"] is True and p["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_persistent_volume_claim_retention_policy():
    policy = {"whenDeleted": "Delete", "whenScaled": "Delete"}
    assert sts({"persistentVolumeClaimRetentionPolicy": policy})["spec"]["persistentVolumeClaimRetentionPolicy"] == policy


_TSC = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}
_SELECTOR = {"app.kubernetes.io/instance": "test", "app.kubernetes.io/managed-by": "prometheus-operator",
             "prometheus": "test", "operator.prometheus.io/name": "test", "app.kubernetes.io/name": "prometheus"}


@pytest.mark.parametrize("tsc, expected", [
    (_TSC, _TSC),
    ({**_TSC, "labelSelector": {"matchLabels": {"app": "prometheus"}}},
     {**_TSC, "labelSelector": {"matchLabels": {"app": "prometheus"}}}),
    ({**_TSC, "additionalLabelSelectors": "ShardAndResourceName", "labelSelector": {"matchLabels": {"app": "prometheus"}}},
     {**_TSC, "labelSelector": {"matchLabels": {"app": "prometheus", **_SELECTOR, "operator.prometheus.io/shard": "0"}}}),
    ({**_TSC, "additionalLabelSelectors": "ResourceName", "labelSelector": {"matchLabels": {"app": "prometheus"}}},
     {**_TSC, "labelSelector": {"matchLabels": {"app": "prometheus", **_SELECTOR}}}),
], ids=["without labelSelector and additionalLabels", "with labelSelector and without additionalLabels",
        "with labelSelector and additionalLabels as ShardAndNameResource",
        "with labelSelector and additionalLabels as ResourceName"])
def test_pod_topology_spread_constraint_with_additional_labels(tsc, expected):
    assert pod(sts({"topologySpreadConstraints": [tsc]}))["topologySpreadConstraints"][0] == expected


def test_pod_topology_spread_constraint_selects_each_shards_own_pods():
    tsc = {**_TSC, "additionalLabelSelectors": "ShardAndResourceName"}
    s = sts({"shards": 2, "topologySpreadConstraints": [tsc]}, shard=1)
    match = pod(s)["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"]
    assert match["operator.prometheus.io/shard"] == "1"
    assert set(match.items()) <= set(s["spec"]["template"]["metadata"]["labels"].items())  # it selects its own pods


@pytest.mark.parametrize("maximum, period, failures", [(None, 15, 60), (600, 60, 10)])
def test_startup_probe_timeout_seconds(maximum, period, failures):
    spec = {} if maximum is None else {"maximumStartupDurationSeconds": maximum}
    probe = container(sts(spec))["startupProbe"]
    assert (probe["periodSeconds"], probe["failureThreshold"]) == promop_startup_timing(period, failures)


@pytest.mark.parametrize("value, expected", [(None, True), (True, True), (False, False)])
def test_automount_service_account_token(value, expected):
    assert pod(sts({} if value is None else {"automountServiceAccountToken": value}))["automountServiceAccountToken"] \
        is expected


@pytest.mark.parametrize("policy, config", [
    ("ClusterFirst", None),
    ("Default", None),
    ("ClusterFirst", {"nameservers": ["8.8.8.8", "8.8.4.4"], "searches": ["custom.svc.cluster.local"]}),
    ("Default", {"searches": ["kitsos.com", "kitsos.org"]}),
])
def test_dns_policy_and_dns_config(policy, config):
    p = pod(sts({"dnsPolicy": policy, **({"dnsConfig": config} if config else {})}))
    assert p["dnsPolicy"] == policy
    assert p.get("dnsConfig") == config


@pytest.mark.parametrize("value", [False, True, None])
def test_statefulset_enable_service_links(value):
    p = pod(sts({} if value is None else {"enableServiceLinks": value}))
    assert p.get("enableServiceLinks") is value


@pytest.mark.parametrize("policy, expected", [(None, "Parallel"), ("Parallel", "Parallel"),
                                              ("OrderedReady", "OrderedReady")])
def test_stateful_pod_management_policy(policy, expected):
    assert sts({} if policy is None else {"podManagementPolicy": policy})["spec"]["podManagementPolicy"] == expected


@pytest.mark.parametrize("strategy, expected", [
    (None, {"type": "RollingUpdate"}),
    ({"type": "RollingUpdate"}, {"type": "RollingUpdate"}),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
     {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
    ({"type": "OnDelete"}, {"type": "OnDelete"}),
])
def test_statefulset_update_strategy(strategy, expected):
    assert sts({} if strategy is None else {"updateStrategy": strategy})["spec"]["updateStrategy"] == expected


# ---- pkg/prometheus/common_test.go: the parts that shape the StatefulSet ----------------------------------

@pytest.mark.parametrize("maximum, period, failures", [
    (None, 15, 60), (0, 15, 60), (1, 15, 60), (60, 60, 1), (600, 60, 10), (900, 60, 15), (1200, 60, 20),
    (129, 43, 3), (322, 54, 6)])
def test_common_startup_probe_timeout_seconds(maximum, period, failures):
    """common_test.go TestStartupProbeTimeoutSeconds (getStatupProbePeriodSecondsAndFailureThreshold)."""
    probe = container(sts({} if maximum is None else {"maximumStartupDurationSeconds": maximum}))["startupProbe"]
    assert (probe["periodSeconds"], probe["failureThreshold"]) == promop_startup_timing(period, failures)


@pytest.mark.parametrize("version, message, present", [
    ("v2.53.0", None, False), ("v2.53.0", "V2.0", False), ("v2.54.0", None, False), ("v2.54.0", "V1.0", False),
    ("v2.54.0", "V2.0", True), ("v3.4.0", "V2.0", False)])
def test_build_common_prometheus_args_with_remote_write_message_v2(version, message, present):
    remote_write = {"url": "http://example.com", **({"messageVersion": message} if message else {})}
    features = [f for f in args({"version": version, "remoteWrite": [remote_write]}) if f.startswith("--enable-feature=")]
    assert any("metadata-wal-records" in f.split("=", 1)[1].split(",") for f in features) is present


@pytest.mark.parametrize("version, enabled, otlp, flag, feature", [
    ("2.46.0", True, None, False, False),
    ("2.47.0", True, None, False, True),
    ("2.47.0", False, None, False, False),
    ("2.46.0", False, {"promoteResourceAttributes": ["aa", "bb"]}, False, False),
    ("2.55.0", None, {"promoteResourceAttributes": ["aa", "bb"]}, False, True),
    ("3.0.0", None, {"promoteResourceAttributes": ["aa", "bb"]}, True, False),
    ("2.54.0", True, None, False, True),
    ("3.0.0", True, None, True, False),
    ("3.0.0", False, None, False, False),
])
def test_build_common_prometheus_args_with_otlp_receiver(version, enabled, otlp, flag, feature):
    spec = {"version": version, **({} if enabled is None else {"enableOTLPReceiver": enabled}),
            **({} if otlp is None else {"otlp": otlp})}
    flags = args(spec)
    assert ("--web.enable-otlp-receiver" in flags) is flag
    features = [f.split("=", 1)[1].split(",") for f in flags if f.startswith("--enable-feature=")]
    assert any("otlp-write-receiver" in fs for fs in features) is feature


def test_an_explicit_false_keeps_the_otlp_receiver_off_even_with_an_otlp_section():
    """Upstream's BuildCommonPrometheusArgs: an explicit true, or unset with an otlp section (its table tests an
    explicit false with an otlp section only below 2.47, where no version has the receiver)."""
    assert "--web.enable-otlp-receiver" not in args({"version": "3.0.0", "enableOTLPReceiver": False,
                                                     "otlp": {"promoteResourceAttributes": ["aa"]}})


@pytest.mark.parametrize("version, window, storage_file, present", [
    ("v2.54.0", None, None, False),
    ("v2.55.0", None, None, False),
    ("v2.55.0", "1s", None, False),  # Thanos uploads nothing
    ("v2.55.0", "1s", "/etc/thanos.cfg", True),
    ("v2.55.0", "0s", "/etc/thanos.cfg", False),  # no out-of-order window
])
def test_tsdb_allow_overlapping_compaction(version, window, storage_file, present):
    spec = {"version": version, "tsdb": {"outOfOrderTimeWindow": window} if window else {},
            "thanos": {"listenLocal": True, **({"objectStorageConfigFile": storage_file} if storage_file else {})}}
    assert ("--no-storage.tsdb.allow-overlapping-compaction" in args(spec)) is present
