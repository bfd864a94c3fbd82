"""ThanosRuler rendering: upstream's pkg/thanos statefulset_test.go and operator_test.go (with its
remote-write goldens), in our words, field by field for what those tests assert."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from promop.render.model import RenderOptions
from promop.render.thanos.ruler_render import InvalidThanosRuler, RulerInputs, render_ruler
from promop.render.thanos.ruler_statefulset import build_ruler_statefulset
from promop.render.thanos.versions import DEFAULT_THANOS_VERSION

GOLDENS = Path(__file__).resolve().parents[3] / "shared" / "reference" / "upstream-tests" / "pkg" / "thanos" / "testdata"
QUERY = {"queryEndpoints": [""]}  # upstream's tests pass one empty endpoint


def ruler(spec: dict | None = None, name: str = "foo", namespace: str = "ns", **md) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler",
            "metadata": {"name": name, "namespace": namespace, "uid": "uid-1", **md}, "spec": {**QUERY, **(spec or {})}}


def sts(spec: dict | None = None, rule_cms=(), options: RenderOptions = RenderOptions(), input_hash: str = "",
        **kwargs) -> dict:
    return build_ruler_statefulset(ruler(spec, **kwargs), options, list(rule_cms), [], input_hash)


def pod(s: dict) -> dict:
    return s["spec"]["template"]["spec"]


def args(spec: dict | None = None, **kwargs) -> list[str]:
    c = pod(sts(spec, **kwargs))["containers"][0]
    assert c["name"] == "thanos-ruler"
    return c["args"]


def test_labels_and_annotations():
    options = RenderOptions(labels={"operatorlabel": "operator-value"},
                            annotations={"operatorannotation": "operator-value"})
    s = build_ruler_statefulset(ruler({"podMetadata": {"labels": {"podlabel": "test-label"},
                                                       "annotations": {"podannotation": "test-annotation"}}},
                                      name="test", labels={"thanosrulerlabel": "testlabelvalue"},
                                      annotations={"thanosrulerannotation": "testannotationvalue",
                                                   "kubectl.kubernetes.io/last-applied-configuration": "something",
                                                   "kubectl.kubernetes.io/something": "something"}),
                                options, [], [], "abc")
    managed = {"thanos-ruler": "test", "app.kubernetes.io/instance": "test",
               "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": "thanos-ruler",
               "operatorlabel": "operator-value", "podlabel": "test-label"}
    assert s["metadata"]["labels"] == {**managed, "managed-by": "prometheus-operator",
                                       "thanosrulerlabel": "testlabelvalue"}
    assert s["spec"]["selector"]["matchLabels"] == managed
    assert s["spec"]["template"]["metadata"]["labels"] == {
        **managed, "app.kubernetes.io/version": DEFAULT_THANOS_VERSION.lstrip("v")}
    assert s["metadata"]["annotations"] == {"prometheus-operator-input-hash": "abc",
                                            "operatorannotation": "operator-value",
                                            "thanosrulerannotation": "testannotationvalue"}
    assert s["spec"]["template"]["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/default-container": "thanos-ruler", "podannotation": "test-annotation"}


def test_default_base_image_can_be_changed():
    s = build_ruler_statefulset(ruler(), RenderOptions(), [], [], "", "nondefaultuseflag/quay.io/thanos/thanos")
    assert pod(s)["containers"][0]["image"] == f"nondefaultuseflag/quay.io/thanos/thanos:{DEFAULT_THANOS_VERSION}"


def test_volumes_and_mounts_in_upstream_order():
    s = sts({"volumes": [{"name": "additional-volume", "emptyDir": {}}],
             "volumeMounts": [{"name": "additional-volume", "mountPath": "/thanos/additional-volume"}]},
            rule_cms=["rules-configmap-one"])
    assert pod(s)["volumes"] == [
        {"name": "remote-write-config", "secret": {"secretName": "thanos-ruler-foo-config",
                                                   "items": [{"key": "remote-write.yaml", "path": "remote-write.yaml"}]}},
        {"name": "tls-assets", "projected": {"sources": []}},
        {"name": "web-config", "secret": {"secretName": "thanos-ruler-foo-web-config"}},
        {"name": "rules-configmap-one", "configMap": {"name": "rules-configmap-one", "optional": True}},
        {"name": "thanos-ruler-foo-data", "emptyDir": {}},
        {"name": "additional-volume", "emptyDir": {}},
    ]
    assert pod(s)["containers"][0]["volumeMounts"] == [
        {"mountPath": "/etc/thanos/config/remote-write-config", "name": "remote-write-config", "readOnly": True},
        {"mountPath": "/etc/thanos/certs", "name": "tls-assets", "readOnly": True},
        {"mountPath": "/etc/thanos/web_config/web-config.yaml", "name": "web-config", "readOnly": True,
         "subPath": "web-config.yaml"},
        {"mountPath": "/thanos/data", "name": "thanos-ruler-foo-data"},
        {"mountPath": "/etc/thanos/rules/rules-configmap-one", "name": "rules-configmap-one", "readOnly": True},
        {"mountPath": "/thanos/additional-volume", "name": "additional-volume"},
    ]


@pytest.mark.parametrize("secret_field, file_field, volume, flag", [
    ("tracingConfig", "tracingConfigFile", "tracing-config", "tracing.config-file"),
    ("objectStorageConfig", "objectStorageConfigFile", "objstorage-config", "objstore.config-file"),
    ("alertRelabelConfigs", "alertRelabelConfigFile", "alertrelabel-config", "alert.relabel-config-file"),
])
def test_config_secrets_are_mounted_as_files(secret_field, file_field, volume, flag):
    s = sts({secret_field: {"name": "the-secret", "key": "config.yaml"}})
    vols = {v["name"]: v for v in pod(s)["volumes"]}
    assert vols[volume]["secret"] == {"secretName": "the-secret", "items": [{"key": "config.yaml", "path": "config.yaml"}]}
    assert {"mountPath": f"/etc/thanos/config/{volume}", "name": volume, "readOnly": True} in (
        pod(s)["containers"][0]["volumeMounts"])
    assert f"--{flag}=/etc/thanos/config/{volume}/config.yaml" in pod(s)["containers"][0]["args"]
    # the file field wins, and no env-var form is used
    a = args({file_field: "/vault/secret/config.yaml", secret_field: {"key": "k"}})
    assert f"--{flag}=/vault/secret/config.yaml" in a
    assert not any(x.startswith(f"--{flag}=/etc/thanos/config/") for x in a)
    assert not any("$(" in x and x.startswith(f"--{flag.rsplit('-file', 1)[0]}=") for x in a)


@pytest.mark.parametrize("labels, drop, want_labels, want_drop", [
    (None, None, ['thanos_ruler_replica="$(POD_NAME)"'], ["thanos_ruler_replica"]),
    (None, ["test"], ['thanos_ruler_replica="$(POD_NAME)"'], ["thanos_ruler_replica", "test"]),
    ({"test": "test"}, None, ['thanos_ruler_replica="$(POD_NAME)"', 'test="test"'], ["thanos_ruler_replica"]),
    ({"test": "test"}, ["test"], ['thanos_ruler_replica="$(POD_NAME)"', 'test="test"'],
     ["thanos_ruler_replica", "test"]),
    ({"thanos_ruler_replica": "$(POD_NAME)", "test": "test", "test4": "test4", "test1": "test1", "test2": "test2",
      "test3": "test3", "foo": "bar", "bob": "alice"}, ["test", "aaa", "foo", "bar", "foo1", "foo2", "foo3"],
     ['thanos_ruler_replica="$(POD_NAME)"', 'bob="alice"', 'foo="bar"', 'test="test"', 'test1="test1"',
      'test2="test2"', 'test3="test3"', 'test4="test4"', 'thanos_ruler_replica="$(POD_NAME)"'],
     ["thanos_ruler_replica", "test", "aaa", "foo", "bar", "foo1", "foo2", "foo3"]),
])
def test_labels_and_alert_drop_labels(labels, drop, want_labels, want_drop):
    a = args({"labels": labels, "alertDropLabels": drop})
    assert [x.removeprefix("--label=") for x in a if x.startswith("--label=")] == want_labels
    assert [x.removeprefix("--alert.label-drop=") for x in a if x.startswith("--alert.label-drop=")] == want_drop


def test_additional_containers_merge_by_name():
    base = len(pod(sts())["containers"])
    assert len(pod(sts({"containers": [{"name": "extra-container"}]}))["containers"]) == base + 1
    merged = pod(sts({"containers": [{"name": "thanos-ruler", "image": "madeUpContainerImage"}]}))["containers"]
    assert len(merged) == base and merged[0]["image"] == "madeUpContainerImage"


def test_retention_and_defaults():
    a = args({"retention": "1d"})
    assert "--tsdb.retention=1d" in a
    assert args()[:4] == ["rule", "--data-dir=/thanos/data", "--eval-interval=15s", "--tsdb.retention=24h"]


def test_grpc_tls_arguments():
    a = args({"version": "0.37.0", "grpcServerTlsConfig": {"minVersion": "TLS13", "caFile": "/tmp/ca",
                                                            "certFile": "/tmp/cert", "keyFile": "/tmp/key"}})
    for want in ("--grpc-server-tls-cert=/tmp/cert", "--grpc-server-tls-key=/tmp/key",
                 "--grpc-server-tls-client-ca=/tmp/ca", "--grpc-server-tls-min-version=1.3"):
        assert want in a


@pytest.mark.parametrize("key, flag", [("cipherSuites", "--grpc-server-tls-ciphers=A,B"),
                                       ("curves", "--grpc-server-tls-curves=A,B")])
@pytest.mark.parametrize("version, present", [("0.42.0", True), ("0.41.0", False)])
def test_tls_ciphers_and_curves_need_0_42(key, flag, version, present):
    assert (flag in args({"version": version, "grpcServerTlsConfig": {key: ["A", "B"]}})) is present
    assert flag not in args({"version": version, "grpcServerTlsConfig": {}})


def test_pod_template_pass_through_and_additional_args_last():
    spec = {"nodeSelector": {"foo": "bar"}, "tolerations": [{"key": "key"}],
            "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"podAffinityTerm": {"namespaces": ["foo"]}, "weight": 100}]}},
            "securityContext": {"runAsUser": 1234}, "priorityClassName": "foo", "serviceAccountName": "thanos-ruler-sa",
            "hostAliases": [{"hostnames": ["foo.com"], "ip": "1.1.1.1"}], "imagePullSecrets": [{"name": "registry-secret"}],
            "imagePullPolicy": "Always", "additionalArgs": [{"name": "additional.arg", "value": "additional-arg-value"}],
            "schedulerName": "my-scheduler", "hostUsers": True}
    p = pod(sts(spec))  # upstream's case: no rule ConfigMap, so no reloader and no --http.config
    for key in ("nodeSelector", "tolerations", "affinity", "securityContext", "priorityClassName",
                "serviceAccountName", "imagePullSecrets", "schedulerName", "hostUsers"):
        assert p[key] == spec[key], key
    assert len(p["hostAliases"]) == 1
    assert p["containers"][0]["args"][0] == "rule"
    assert p["containers"][0]["args"][-1] == "--additional.arg=additional-arg-value"
    with_reloader = pod(sts(spec, rule_cms=["cm"]))["containers"]
    assert len(with_reloader) == 2 and all(c["imagePullPolicy"] == "Always" for c in with_reloader)
    # with rule ConfigMaps upstream appends --http.config after the additional arguments
    assert with_reloader[0]["args"][-2:] == ["--additional.arg=additional-arg-value",
                                             "--http.config=/etc/thanos/web_config/web-config.yaml"]


def test_alert_query_url():
    assert "--alert.query-url=https://example.com/" in args({"alertQueryUrl": "https://example.com/"})


def test_reloader_only_with_rule_configmaps():
    assert [c["name"] for c in pod(sts())["containers"]] == ["thanos-ruler"]
    s = sts(rule_cms=["my-configmap"])
    reloader = pod(s)["containers"][1]
    assert reloader["name"] == "config-reloader"
    assert "--watched-dir=/etc/thanos/rules/my-configmap" in reloader["args"]
    assert "--reload-url=http://localhost:10902/-/reload" in reloader["args"]
    assert reloader["resources"] == {"limits": {"cpu": "200m", "memory": "50Mi"},
                                     "requests": {"cpu": "10m", "memory": "50Mi"}}


def test_statefulset_spec_fields():
    assert sts()["spec"].get("minReadySeconds") is None
    assert sts({"minReadySeconds": 5})["spec"]["minReadySeconds"] == 5
    assert sts()["spec"]["serviceName"] == "thanos-ruler-operated"
    assert sts()["spec"]["podManagementPolicy"] == "Parallel"
    assert sts({"podManagementPolicy": "OrderedReady"})["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts({"podManagementPolicy": "Parallel"})["spec"]["podManagementPolicy"] == "Parallel"
    assert sts()["spec"]["updateStrategy"] == {"type": "RollingUpdate"}
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    assert sts({"updateStrategy": strategy})["spec"]["updateStrategy"] == strategy
    assert sts({"updateStrategy": {"type": "OnDelete"}})["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_storage_pvc_empty_dir_and_ephemeral():
    s = sts({"storage": {"volumeClaimTemplate": {"metadata": {"annotations": {"a": "b"}},
                                                 "spec": {"storageClassName": "storageclass"}}}})
    assert s["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "storageclass"
    assert pod(sts({"storage": {"emptyDir": {"medium": "Memory"}}}))["volumes"][-1]["emptyDir"] == {"medium": "Memory"}
    eph = {"volumeClaimTemplate": {"spec": {"storageClassName": "storageclass"}}}
    assert pod(sts({"storage": {"ephemeral": eph}}))["volumes"][-1]["ephemeral"] == eph


@pytest.mark.parametrize("version, image", [
    ("v0.29.0", "quay.io/thanos/thanos:v0.29.0"), ("0.29.0", "quay.io/thanos/thanos:0.29.0"),
    ("", f"quay.io/thanos/thanos:{DEFAULT_THANOS_VERSION}")])
def test_version_picks_the_image(version, image):
    assert pod(sts({"version": version}))["containers"][0]["image"] == image


@pytest.mark.parametrize("version", ["0.29.0-0123", "0.29.0.DEV"])
def test_invalid_versions_are_refused(version):
    with pytest.raises(InvalidThanosRuler, match="spec.version"):
        render_ruler(RulerInputs(ruler({"version": version})))


def test_dns_policy_config_and_service_links():
    dns = {"nameservers": ["8.8.8.8"], "searches": ["custom.search"], "options": [{"name": "ndots", "value": "5"}]}
    p = pod(sts({"dnsPolicy": "ClusterFirst", "dnsConfig": dns}))
    assert p["dnsPolicy"] == "ClusterFirst" and p["dnsConfig"] == dns
    assert pod(sts({"enableServiceLinks": False}))["enableServiceLinks"] is False
    assert pod(sts({"enableServiceLinks": True}))["enableServiceLinks"] is True
    assert "enableServiceLinks" not in pod(sts())


@pytest.mark.parametrize("key, value, flag, since, before", [
    ("ruleQueryOffset", "5m", "--rule-query-offset=", "0.38.0", "0.37.0"),
    ("ruleConcurrentEval", 5, "--rule-concurrent-evaluation=", "0.37.0", "0.36.0"),
    ("ruleOutageTolerance", "1h", "--for-outage-tolerance=", "0.30.0", "0.29.0"),
    ("ruleGracePeriod", "10m", "--for-grace-period=", "0.30.0", "0.29.0"),
])
def test_version_gated_rule_flags(key, value, flag, since, before):
    assert f"{flag}{value}" in args({"version": since, key: value})
    assert not any(a.startswith(flag) for a in args({"version": before, key: value}))
    assert not any(a.startswith(flag) for a in args({"version": since}))
    assert not any(a.startswith(flag) for a in args({"version": "0.37.0"}))  # upstream's "without" at a later version


def test_resend_delay():
    assert "--resend-delay=1h" in args({"resendDelay": "1h"})
    assert not any(a.startswith("--resend-delay=") for a in args())


@pytest.mark.parametrize("version, features, want", [
    ("0.39.0", ["promql-experimental-functions"], "--enable-feature=promql-experimental-functions"),
    ("0.38.0", ["promql-experimental-functions"], None), ("0.39.0", [], None), ("0.39.0", None, None)])
def test_enable_features(version, features, want):
    got = [a for a in args({"version": version, "enableFeatures": features}) if a.startswith("--enable-feature=")]
    assert got == ([want] if want else [])


def test_query_and_alertmanager_configs_are_secret_files():
    s = sts({"queryEndpoints": None, "queryConfig": {"name": "q", "key": "query.yaml"},
             "alertmanagersConfig": {"name": "am", "key": "am.yaml"}, "alertmanagersUrl": ["http://ignored"]})
    c = pod(s)["containers"][0]
    assert "--query.config-file=/etc/thanos/config/query-config/query.yaml" in c["args"]
    assert "--alertmanagers.config-file=/etc/thanos/config/alertmanager-config/am.yaml" in c["args"]
    assert not any(a.startswith(("--query=", "--alertmanagers.url=")) for a in c["args"])
    vols = {v["name"]: v for v in pod(s)["volumes"]}
    assert vols["query-config"]["secret"] == {"secretName": "q", "items": [{"key": "query.yaml", "path": "query.yaml"}]}
    assert vols["alertmanager-config"]["secret"]["secretName"] == "am"
    a = args({"queryEndpoints": ["a:9090", "b:9090"], "alertmanagersUrl": ["http://am:9093"]})
    assert [x for x in a if x.startswith(("--query=", "--alertmanagers.url="))] == [
        "--query=a:9090", "--query=b:9090", "--alertmanagers.url=http://am:9093"]


def test_upstream_defaults_memory_request_no_probes_listen_local():
    c = pod(sts())["containers"][0]
    assert c["resources"] == {"requests": {"memory": "200Mi"}}
    assert pod(sts({"resources": {"requests": {"memory": "1Gi", "cpu": "1"}}}))["containers"][0]["resources"] == {
        "requests": {"memory": "1Gi", "cpu": "1"}}
    assert "livenessProbe" not in c and "readinessProbe" not in c
    assert [p["name"] for p in c["ports"]] == ["grpc", "web"]
    local = pod(sts({"listenLocal": True}))["containers"][0]
    assert "--http-address=localhost:10902" in local["args"] and [p["name"] for p in local["ports"]] == ["grpc"]
    assert not any(a.startswith("--log.level") for a in args({"logLevel": "info"}))
    assert "--log.level=debug" in args({"logLevel": "debug"})


def test_no_query_endpoint_or_config_is_refused():
    r = ruler()
    r["spec"].pop("queryEndpoints")
    with pytest.raises(InvalidThanosRuler, match="queryEndpoints or queryConfig"):
        render_ruler(RulerInputs(r))


def test_additional_arg_repeating_a_managed_flag_is_refused():
    with pytest.raises(InvalidThanosRuler, match="already managed by the operator: log.level"):
        render_ruler(RulerInputs(ruler({"logLevel": "debug",
                                        "additionalArgs": [{"name": "log.level", "value": "x"}]})))


def _golden(name: str):
    path = GOLDENS / name
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not checked out)")
    return yaml.safe_load(path.read_text())


SIGV4_SECRET = {("default", "sigv4-secret"): {"metadata": {"name": "sigv4-secret", "namespace": "default"},
                                               "data": {"access-key": base64.b64encode(b"access-key").decode(),
                                                        "secret-key": base64.b64encode(b"secret-key").decode()}}}
RW_V2 = {"url": "http://example.com", "messageVersion": "V2.0", "sendNativeHistograms": True, "roundRobinDNS": True}


@pytest.mark.parametrize("version, remote_write, golden", [
    (DEFAULT_THANOS_VERSION, [], "empty_remote_write_config.golden"),
    (DEFAULT_THANOS_VERSION, [RW_V2], "default_remote_write_config.golden"),
    ("v0.24.0", [{"url": "http://example.com"}], "v0.24.0_remote_write_config.golden"),
    (DEFAULT_THANOS_VERSION, [{**RW_V2, "sigv4": {
        "profile": "profilename", "roleArn": "arn:aws:iam::123456789012:instance-profile/prometheus",
        "externalId": "myExternalID", "accessKey": {"name": "sigv4-secret", "key": "access-key"},
        "secretKey": {"name": "sigv4-secret", "key": "secret-key"}, "region": "us-central-0"}}],
     "sigv4_externalId_remote_write_config.golden"),
])
def test_remote_write_config_matches_upstream_goldens(version, remote_write, golden):
    want = _golden(golden)
    r = ruler({"version": version, "remoteWrite": remote_write}, namespace="default")
    result = render_ruler(RulerInputs(r, secrets=SIGV4_SECRET))
    secret = result.config_secret
    assert secret["metadata"]["name"] == "thanos-ruler-foo-config"
    assert yaml.safe_load(base64.b64decode(secret["data"]["remote-write.yaml"])) == want
    flag = "--remote-write.config-file=/etc/thanos/config/remote-write-config/remote-write.yaml"
    assert (flag in pod(result.statefulset)["containers"][0]["args"]) is bool(remote_write)


def rule(name: str, namespace: str = "ns", labels: dict | None = None, groups=None) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels or {}},
            "spec": {"groups": groups or [{"name": "g", "partial_response_strategy": "warn",
                                           "rules": [{"alert": "A", "expr": "up == 0"}]}]}}


def test_rule_selection_and_configmaps():
    r = ruler({"ruleSelector": {"matchLabels": {"role": "thanos"}}})
    rules = [rule("picked", labels={"role": "thanos"}), rule("other", labels={"role": "x"}),
             rule("elsewhere", namespace="other", labels={"role": "thanos"}),
             rule("broken", labels={"role": "thanos"}, groups=[{"name": "g", "rules": [{"alert": "B", "expr": "up =="}]}])]
    result = render_ruler(RulerInputs(r, rules))
    assert [cm["metadata"]["name"] for cm in result.rule_configmaps] == ["thanos-ruler-foo-rulefiles-0"]
    cm = result.rule_configmaps[0]
    assert cm["metadata"]["labels"]["thanos-ruler-name"] == "foo"
    assert cm["metadata"]["ownerReferences"][0]["kind"] == "ThanosRuler"
    assert list(cm["data"]) == ["ns-picked-uid-picked.yaml"]
    assert yaml.safe_load(cm["data"]["ns-picked-uid-picked.yaml"])["groups"][0]["partial_response_strategy"] == "warn"
    assert [(p.name, p.kind) for p in result.rejected] == [("broken", "PrometheusRule")]
    assert result.accepted_rules() == [("ns", "picked")]
    a = pod(result.statefulset)["containers"][0]["args"]
    assert [x for x in a if x.startswith("--rule-file=")] == ["--rule-file=/etc/thanos/rules/*/*.yaml"]
    mounts = [m["mountPath"] for m in pod(result.statefulset)["containers"][0]["volumeMounts"]]
    assert [f"/etc/thanos/rules/thanos-ruler-foo-rulefiles-{i}" for i in range(3)] == [
        m for m in mounts if m.startswith("/etc/thanos/rules/")]


def test_rule_namespace_selector():
    r = ruler({"ruleSelector": {}, "ruleNamespaceSelector": {"matchLabels": {"team": "a"}}})
    namespaces = [{"metadata": {"name": "ns", "labels": {"team": "b"}}},
                  {"metadata": {"name": "other", "labels": {"team": "a"}}}]
    result = render_ruler(RulerInputs(r, [rule("here"), rule("there", namespace="other")], namespaces))
    assert result.accepted_rules() == [("other", "there")]


def test_governing_service():
    svc = render_ruler(RulerInputs(ruler())).service
    assert svc["metadata"]["name"] == "thanos-ruler-operated"
    assert svc["metadata"]["labels"]["operated-thanos-ruler"] == "true"
    assert svc["metadata"]["ownerReferences"][0]["controller"] is False
    assert svc["spec"] == {"clusterIP": "None", "selector": {"app.kubernetes.io/name": "thanos-ruler"}, "ports": [
        {"name": "grpc", "port": 10901, "protocol": "TCP", "targetPort": "grpc"},
        {"name": "web", "port": 10902, "protocol": "TCP", "targetPort": "web"}]}


def test_objects_in_write_order_and_hash_changes_with_the_spec():
    a = render_ruler(RulerInputs(ruler()))
    assert [o["kind"] for o in a.objects()] == ["ConfigMap", "Secret", "Secret", "Secret", "Service", "StatefulSet"]
    b = render_ruler(RulerInputs(ruler({"retention": "2d"})))
    assert a.input_hash != b.input_hash
    assert render_ruler(RulerInputs(ruler())).input_hash == a.input_hash
