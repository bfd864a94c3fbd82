"""StatefulSet generation compared with upstream's asserted values (shared/conformance/.../derived)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from promop.render.model import RenderOptions
from promop.render.statefulset import (
    build_statefulsets,
    compute_input_hash,
    prometheus_args,
    reloader_args,
    sanitize_volume_name,
)
from promop.render.versions import Version

from .upstream_deviations import promop_startup_timing

DERIVED = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "prometheus-operator" / "derived"


def derived(name: str) -> dict:
    path = DERIVED / name
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not checked out)")
    return yaml.safe_load(path.read_text())


def prom(name="test", namespace="ns", spec=None, **md) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": name, "namespace": namespace, "uid": "uid-1", **md}, "spec": spec or {}}


def sts(p, rule_cms=(), tls=(), input_hash="abc", options=RenderOptions()):
    return build_statefulsets(p, options, list(rule_cms), list(tls), input_hash)


def container(s: dict, name: str, init: bool = False) -> dict:
    pod = s["spec"]["template"]["spec"]
    return next(c for c in pod["initContainers" if init else "containers"] if c["name"] == name)


def test_volumes_and_prometheus_mounts_match_upstream():
    want = derived("StatefulSetVolumeInitial.expected.yaml")
    p = prom("volume-init-test", spec={"secrets": ["test-secret1"]})
    s = sts(p, rule_cms=["rules-configmap-one"], tls=["prometheus-volume-init-test-tls-assets-0"])[0]
    assert s["spec"]["template"]["spec"]["volumes"] == want["volumes"]
    assert container(s, "prometheus")["volumeMounts"] == want["prometheusContainerVolumeMounts"]


def test_labels_and_annotations_match_upstream():
    want = derived("StatefulSetLabelingAndAnnotations.expected.yaml")
    p = prom(labels={"testlabel": "testlabelvalue"}, annotations={
        "testannotation": "testannotationvalue",
        "kubectl.kubernetes.io/last-applied-configuration": "something",
        "kubectl.kubernetes.io/something": "something",
    })
    s = sts(p, input_hash="abc")[0]
    assert s["metadata"]["annotations"] == want["statefulSetAnnotations"]
    assert s["metadata"]["labels"] == want["statefulSetLabels"]
    assert s["spec"]["template"]["metadata"]["labels"] == want["podTemplateLabels"]


def test_reloader_args_match_upstream_http_and_signal():
    want = derived("ConfigReloaderArgs.expected.yaml")
    s = sts(prom())[0]
    reloader = container(s, "config-reloader")
    assert reloader["args"] == want["httpReloadStrategy"]["config-reloader.args"]
    assert {"name": "SHARD", "value": "0"} in reloader["env"]
    signal = sts(prom(spec={"reloadStrategy": "ProcessSignal"}))[0]
    assert container(signal, "config-reloader")["args"] == want["signalReloadStrategy"]["config-reloader.args"]
    assert "--web.enable-lifecycle" not in container(signal, "prometheus")["args"]
    assert signal["spec"]["template"]["spec"]["shareProcessNamespace"] is True
    for s_ in (s, signal):
        init = container(s_, "init-config-reloader", init=True)
        assert init["args"] == want["signalReloadStrategy"]["init-config-reloader.args"]


def test_reloader_runs_our_sidecar_with_upstream_env_and_mounts():
    options = RenderOptions(config_reloader_image="example.com/promop:9")
    s = sts(prom(), rule_cms=["prometheus-test-rulefiles-0"], options=options)[0]
    for c in (container(s, "config-reloader"), container(s, "init-config-reloader", init=True)):
        assert c["command"] == ["promop-config-reloader"]
        assert c["image"] == "example.com/promop:9"
        assert c["env"][0] == {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                                "fieldPath": "metadata.name"}}}
        assert "--watched-dir=/etc/prometheus/rules/prometheus-test-rulefiles-0" in c["args"]
        assert c["args"][-1] == "--watched-dir=/etc/prometheus/config"
        assert [m["mountPath"] for m in c["volumeMounts"]] == [
            "/etc/prometheus/config", "/etc/prometheus/config_out", "/etc/prometheus/rules/prometheus-test-rulefiles-0"]
        assert c["resources"]["limits"] == {"cpu": "200m", "memory": "50Mi"}
    assert container(s, "config-reloader")["ports"] == [{"containerPort": 8080, "name": "reloader-web",
                                                         "protocol": "TCP"}]


def test_security_contexts_probes_and_pod_defaults():
    s = sts(prom())[0]
    pod = s["spec"]["template"]["spec"]
    for c in pod["containers"] + pod["initContainers"]:
        assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                        "readOnlyRootFilesystem": True}
        assert c["terminationMessagePolicy"] == "FallbackToLogsOnError"
    p = container(s, "prometheus")
    assert p["readinessProbe"] == {"httpGet": {"path": "/-/ready", "port": "web", "scheme": "HTTP"},
                                   "failureThreshold": 3, "periodSeconds": 5, "timeoutSeconds": 3}
    assert (p["startupProbe"]["periodSeconds"], p["startupProbe"]["failureThreshold"]) == promop_startup_timing(15, 60)
    assert p["livenessProbe"]["httpGet"]["path"] == "/-/healthy"
    assert pod["terminationGracePeriodSeconds"] == 600
    assert pod["automountServiceAccountToken"] is True
    assert s["spec"]["podManagementPolicy"] == "Parallel"
    assert s["spec"]["serviceName"] == "prometheus-operated"
    assert s["spec"]["replicas"] == 1
    assert s["spec"]["template"]["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/default-container": "prometheus"}
    assert s["metadata"]["ownerReferences"] == [{
        "apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "name": "test", "uid": "uid-1",
        "controller": True, "blockOwnerDeletion": True}]


def test_image_from_spec_or_base_and_version():
    assert container(sts(prom())[0], "prometheus")["image"] == "quay.io/prometheus/prometheus:v3.13.2"
    p = prom(spec={"version": "v2.42.0", "baseImage": "mirror/prom"})
    assert container(sts(p)[0], "prometheus")["image"] == "mirror/prom:v2.42.0"
    p = prom(spec={"version": "v2.42.0", "image": "my/prom:custom"})
    s = sts(p)[0]
    assert container(s, "prometheus")["image"] == "my/prom:custom"
    assert s["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/version"] == "2.42.0"


def test_prometheus_args_depend_on_version():
    v2 = prometheus_args({}, Version("v2.42.0"))
    assert v2 == [
        "--config.file=/etc/prometheus/config_out/prometheus.env.yaml",
        "--web.console.templates=/etc/prometheus/consoles",
        "--web.console.libraries=/etc/prometheus/console_libraries",
        "--web.enable-lifecycle",
        "--web.route-prefix=/",
        "--storage.tsdb.retention.time=24h",
        "--storage.tsdb.path=/prometheus",
        "--web.config.file=/etc/prometheus/web_config/web-config.yaml",
    ]
    v3 = prometheus_args({"retention": "10d"}, Version("v3.13.2"))
    assert not any("retention" in a or "console" in a for a in v3)  # retention lives in the config from 3.11
    args = prometheus_args({"retention": "10d", "retentionSize": "5GB", "enableAdminAPI": True,
                            "query": {"maxSamples": 100}, "walCompression": False, "logLevel": "debug",
                            "additionalArgs": [{"name": "web.page-title", "value": "x"},
                                               {"name": "storage.tsdb.path", "value": "/nope"}]},
                           Version("v2.42.0"))
    assert "--storage.tsdb.retention.time=10d" in args and "--storage.tsdb.retention.size=5GB" in args
    assert "--web.enable-admin-api" in args and "--query.max-samples=100" in args
    assert "--no-storage.tsdb.wal-compression" in args and "--log.level=debug" in args
    assert args[-1] == "--web.page-title=x"
    assert "--storage.tsdb.path=/nope" not in args  # operator-managed flags cannot be overridden


def test_one_statefulset_per_shard():
    sets = sts(prom(spec={"shards": 3, "replicas": 2}))
    assert [s["metadata"]["name"] for s in sets] == ["prometheus-test", "prometheus-test-shard-1",
                                                      "prometheus-test-shard-2"]
    for n, s in enumerate(sets):
        assert s["spec"]["selector"]["matchLabels"]["operator.prometheus.io/shard"] == str(n)
        assert {"name": "SHARD", "value": str(n)} in container(s, "config-reloader")["env"]
        assert s["spec"]["replicas"] == 2
    assert len(sts(prom(spec={"shards": 0}))) == 1


def test_storage_volume_claim_template_and_empty_dir():
    p = prom(spec={"storage": {"volumeClaimTemplate": {"spec": {
        "storageClassName": "ssd", "resources": {"requests": {"storage": "40Gi"}}}}}})
    s = sts(p)[0]
    (pvc,) = s["spec"]["volumeClaimTemplates"]
    assert pvc["metadata"]["name"] == "prometheus-test-db"
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert pvc["spec"]["resources"] == {"requests": {"storage": "40Gi"}}
    vols = {v["name"] for v in s["spec"]["template"]["spec"]["volumes"]}
    assert "prometheus-test-db" not in vols
    db = next(m for m in container(s, "prometheus")["volumeMounts"] if m["mountPath"] == "/prometheus")
    assert db == {"mountPath": "/prometheus", "name": "prometheus-test-db", "subPath": "prometheus-db"}
    s = sts(prom(spec={"storage": {"emptyDir": {"medium": "Memory"}}}))[0]
    assert {"name": "prometheus-test-db", "emptyDir": {"medium": "Memory"}} in s["spec"]["template"]["spec"]["volumes"]


def test_user_containers_are_merged_by_name():
    p = prom(spec={"containers": [
        {"name": "prometheus", "env": [{"name": "GOGC", "value": "50"}]},
        {"name": "sidecar", "image": "busybox"},
    ]})
    s = sts(p)[0]
    names = [c["name"] for c in s["spec"]["template"]["spec"]["containers"]]
    assert names == ["prometheus", "config-reloader", "sidecar"]
    assert container(s, "prometheus")["env"] == [{"name": "GOGC", "value": "50"}]
    assert container(s, "prometheus")["args"][0].startswith("--config.file=")


def test_volume_names_are_sanitised():
    assert sanitize_volume_name("secret-My_Secret.v1") == "secret-my-secret-v1"
    assert len(sanitize_volume_name("configmap-" + "x" * 80)) == 63


def test_input_hash_is_deterministic_and_covers_its_inputs():
    p = prom(labels={"a": "b"}, generation=1)
    base = compute_input_hash(p, RenderOptions(), ["c-0", "c-1"], ["t-0"])
    assert base == compute_input_hash(copy.deepcopy(p), RenderOptions(), ["c-1", "c-0"], ["t-0"])  # names: a set
    assert base.isdigit()
    changed = [
        compute_input_hash(prom(labels={"a": "c"}, generation=1), RenderOptions(), ["c-0", "c-1"], ["t-0"]),
        compute_input_hash(prom(labels={"a": "b"}, generation=2), RenderOptions(), ["c-0", "c-1"], ["t-0"]),
        compute_input_hash(p, RenderOptions(labels={"x": "y"}), ["c-0", "c-1"], ["t-0"]),
        compute_input_hash(p, RenderOptions(), ["c-0"], ["t-0"]),
        compute_input_hash(p, RenderOptions(), ["c-0", "c-1"], ["t-0", "t-1"]),
    ]
    assert base not in changed and len(set(changed)) == len(changed)


def test_reloader_args_watch_rule_dirs_before_config():
    args = reloader_args({}, ["a", "b"], init=False)
    assert args[-3:] == ["--watched-dir=/etc/prometheus/rules/a", "--watched-dir=/etc/prometheus/rules/b",
                         "--watched-dir=/etc/prometheus/config"]


def test_deliberate_differences():
    """Every documented deviation from upstream (golden/statefulset-differences.yaml) still holds."""
    listed = yaml.safe_load((Path(__file__).parent / "golden" / "statefulset-differences.yaml").read_text())
    assert all(entry["reason"] for entry in listed)
    s = sts(prom())[0]
    pod = s["spec"]["template"]["spec"]
    assert container(s, "config-reloader")["command"] == listed[0]["promop"]
    assert container(s, "init-config-reloader", init=True)["command"] == listed[1]["promop"]
    assert container(s, "config-reloader")["image"] == RenderOptions().config_reloader_image
    assert s["metadata"]["annotations"]["prometheus-operator-input-hash"] == "abc"
    assert all(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
               for c in pod["containers"][1:] + pod["initContainers"])
    startup = container(s, "prometheus")["startupProbe"]
    assert (startup["periodSeconds"], startup["failureThreshold"]) == (1, 15 * 60) and "startupProbe" in listed[5]["field"]
    assert len(listed) == 6  # a new difference needs an entry here and a check above


def test_more_spec_fields_become_flags_and_fields():
    spec = {"version": "v2.38.0", "allowOverlappingBlocks": True, "disableCompaction": True,
            "enableOTLPReceiver": True, "rules": {"alert": {"forGracePeriod": "10m", "resendDelay": "2m"}},
            "maximumStartupDurationSeconds": 200, "podManagementPolicy": "OrderedReady",
            "updateStrategy": {"type": "OnDelete"}}
    s = sts(prom(spec=spec))[0]
    args = container(s, "prometheus")["args"]
    for flag in ("--storage.tsdb.allow-overlapping-blocks", "--storage.tsdb.max-block-duration=2h",
                 "--storage.tsdb.min-block-duration=2h", "--rules.alert.for-grace-period=10m",
                 "--rules.alert.resend-delay=2m"):
        assert flag in args
    assert "--web.enable-otlp-receiver" not in args  # before 3.0 it is a feature flag, from 2.47
    startup = container(s, "prometheus")["startupProbe"]
    # upstream: ceil(200 / 60) probes, ceil(200 / 4)s apart
    assert (startup["periodSeconds"], startup["failureThreshold"]) == promop_startup_timing(50, 4)
    assert s["spec"]["podManagementPolicy"] == "OrderedReady"
    assert s["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert "--enable-feature=otlp-write-receiver" in prometheus_args({**spec, "version": "v2.50.0"},
                                                                       Version("v2.50.0"))
    v3 = prometheus_args({"enableOTLPReceiver": True, "allowOverlappingBlocks": True}, Version("v3.13.2"))
    assert "--web.enable-otlp-receiver" in v3 and "--storage.tsdb.allow-overlapping-blocks" not in v3


def test_web_page_title_and_max_connections():
    s = sts(prom(spec={"web": {"pageTitle": "Team A", "maxConnections": 100}}))[0]
    args = container(s, "prometheus")["args"]
    assert args[1:4] == ["--web.enable-lifecycle", "--web.page-title=Team A", "--web.max-connections=100"]
    reloader = container(s, "config-reloader")
    # as upstream (TestListenTLS without TLS): with spec.web set the reloader gets the web config file
    assert reloader["args"][:2] == ["--listen-address=:8080",
                                    "--web-config-file=/etc/prometheus/web_config/web-config.yaml"]
    assert reloader["volumeMounts"][-1]["name"] == "web-config"


def test_selector_is_upstreams_so_its_statefulsets_are_taken_over_in_place():
    """A StatefulSet's selector is immutable: any label short of upstream's makeSelectorLabels + shard would make
    the operator recreate (restart) every Prometheus an upstream operator created. The pods carry them all."""
    s = sts(prom(spec={"shards": 2}))[1]
    want = {"app.kubernetes.io/instance": "test", "app.kubernetes.io/managed-by": "prometheus-operator",
            "app.kubernetes.io/name": "prometheus", "operator.prometheus.io/name": "test",
            "operator.prometheus.io/shard": "1", "prometheus": "test"}
    assert s["spec"]["selector"]["matchLabels"] == want
    pod_labels = s["spec"]["template"]["metadata"]["labels"]
    assert want.items() <= pod_labels.items()
