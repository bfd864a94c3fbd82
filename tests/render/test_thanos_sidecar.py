"""The Thanos sidecar on a Prometheus (spec.thanos): upstream's pkg/prometheus/server/statefulset_test.go
Thanos cases, in our words, field by field for what those tests assert."""

from __future__ import annotations

import pytest

from promop.render.model import RenderInputs, RenderOptions
from promop.render.pipeline import render
from promop.render.schema_check import InvalidPrometheus
from promop.render.statefulset import build_statefulsets
from promop.render.thanos.versions import DEFAULT_THANOS_VERSION

SECRET_REF = {"name": "thanos-objstore", "key": "thanos-config-secret-test"}


def prom(spec: dict, name: str = "test") -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": name, "namespace": "ns", "uid": "u"}, "spec": spec}


def sts(spec: dict) -> dict:
    return build_statefulsets(prom(spec), RenderOptions(), [], [], "h")[0]


def containers(s: dict) -> list[dict]:
    return s["spec"]["template"]["spec"]["containers"]


def sidecar(spec: dict) -> dict:
    c = containers(sts(spec))[2]
    assert c["name"] == "thanos-sidecar"
    return c


def prom_args(spec: dict) -> list[str]:
    return containers(sts(spec))[0]["args"]


def test_no_sidecar_without_spec_thanos():
    assert [c["name"] for c in containers(sts({}))] == ["prometheus", "config-reloader"]


def test_default_sidecar_args_ports_and_image():
    c = sidecar({"thanos": {}})
    assert c["args"] == ["sidecar", "--prometheus.url=http://localhost:9090/", "--grpc-address=:10901",
                         "--http-address=:10902",
                         "--prometheus.http-client-file=/etc/thanos/config/prometheus.http-client-file.yaml"]
    assert c["image"] == f"quay.io/thanos/thanos:{DEFAULT_THANOS_VERSION}"
    assert c["ports"] == [{"containerPort": 10902, "name": "http", "protocol": "TCP"},
                          {"containerPort": 10901, "name": "grpc", "protocol": "TCP"}]
    assert c["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["resources"] == {}  # upstream: no resources unless set


def test_resources_are_passed_through():
    res = {"limits": {"cpu": "125m", "memory": "75Mi"}, "requests": {"cpu": "100m", "memory": "50Mi"}}
    assert sidecar({"thanos": {"resources": res}})["resources"] == res


@pytest.mark.parametrize("thanos, image", [
    ({"version": "v0.1.0", "tag": "my-unrelated-tag"}, "quay.io/thanos/thanos:my-unrelated-tag"),
    ({"version": "v0.1.0-rc.2", "tag": "t", "sha": "7384a79f"}, "quay.io/thanos/thanos@sha256:7384a79f"),
    ({"version": "v0.1.0-rc.2", "tag": "t", "sha": "7384", "image": "my-registry/thanos:latest"},
     "my-registry/thanos:latest"),
    ({"version": "v0.30.0"}, "quay.io/thanos/thanos:v0.30.0"),
    ({"baseImage": "nondefaultuseflag/quay.io/thanos/thanos"},
     f"nondefaultuseflag/quay.io/thanos/thanos:{DEFAULT_THANOS_VERSION}"),
])
def test_image_precedence(thanos, image):
    assert sidecar({"thanos": thanos})["image"] == image


def test_no_object_storage_keeps_compaction_and_no_tsdb_path():
    c = sidecar({"thanos": {}})
    assert not any(a.startswith("--tsdb.path=") for a in c["args"])
    assert not any(a.startswith("--storage.tsdb.max-block-duration") for a in prom_args({"thanos": {}}))
    assert all(m["mountPath"] != "/prometheus" for m in c["volumeMounts"])


def test_object_storage_from_secret():
    spec = {"version": "2.55.0", "thanos": {"objectStorageConfig": SECRET_REF, "blockSize": "2h"}}
    c = sidecar(spec)
    assert {"name": "OBJSTORE_CONFIG", "valueFrom": {"secretKeyRef": SECRET_REF}} in c["env"]
    assert "--objstore.config=$(OBJSTORE_CONFIG)" in c["args"]
    assert "--tsdb.path=/prometheus" in c["args"]
    assert c["volumeMounts"] == [{"mountPath": "/prometheus", "name": "prometheus-test-db"},
                                 {"mountPath": "/etc/thanos/config", "name": "thanos-prometheus-http-client-file"}]
    args = prom_args(spec)
    assert "--storage.tsdb.max-block-duration=2h" in args and "--storage.tsdb.min-block-duration=2h" in args


def test_object_storage_file_wins_over_secret():
    spec = {"version": "2.55.0", "thanos": {"objectStorageConfigFile": "/vault/secret/config.yaml",
                                             "objectStorageConfig": SECRET_REF}}
    c = sidecar(spec)
    assert "--objstore.config-file=/vault/secret/config.yaml" in c["args"]
    assert "--objstore.config=$(OBJSTORE_CONFIG)" not in c["args"] and "env" not in c
    assert "--tsdb.path=/prometheus" in c["args"]
    assert "--storage.tsdb.max-block-duration=2h" in prom_args(spec)


def test_block_size_sets_both_block_durations():
    args = prom_args({"version": "2.55.0", "thanos": {"blockSize": "1h", "objectStorageConfig": SECRET_REF}})
    assert "--storage.tsdb.max-block-duration=1h" in args and "--storage.tsdb.min-block-duration=1h" in args
    assert "--storage.tsdb.max-block-duration=2h" not in args


@pytest.mark.parametrize("prom_version, thanos_version, disable, delayed", [
    ("3.9.0", "0.41.0", False, True),
    ("3.8.0", "0.41.0", False, False),
    ("3.9.0", "0.40.0", False, False),
    ("3.9.0", "0.41.0", True, False),
])
def test_delayed_compaction_with_new_enough_versions(prom_version, thanos_version, disable, delayed):
    spec = {"version": prom_version, "disableCompaction": disable,
            "thanos": {"version": thanos_version, "objectStorageConfig": SECRET_REF}}
    args, side = prom_args(spec), sidecar(spec)["args"]
    delay = "--storage.tsdb.delay-compact-file.path=/prometheus/thanos.shipper.json"
    if delayed:
        assert delay in args
        assert not any(a.startswith(("--storage.tsdb.max-block-duration=", "--storage.tsdb.min-block-duration="))
                       for a in args)
        assert "--shipper.meta-file-name=thanos.shipper.json" in side
        assert "--shipper.ignore-unequal-block-size" in side
    else:
        assert "--storage.tsdb.max-block-duration=2h" in args
        assert delay not in args
        assert "--shipper.ignore-unequal-block-size" not in side


def test_named_pvc_is_mounted_in_the_sidecar():
    spec = {"storage": {"volumeClaimTemplate": {"metadata": {"name": "named-pvc"},
                                                 "spec": {"storageClassName": "storageclass"}}},
            "thanos": {"blockSize": "1h", "objectStorageConfig": SECRET_REF}}
    assert "named-pvc" in [m["name"] for m in sidecar(spec)["volumeMounts"]]


def test_tracing_config_from_secret_and_file():
    c = sidecar({"thanos": {"tracingConfig": SECRET_REF}})
    assert {"name": "TRACING_CONFIG", "valueFrom": {"secretKeyRef": SECRET_REF}} in c["env"]
    assert "--tracing.config=$(TRACING_CONFIG)" in c["args"]
    c = sidecar({"thanos": {"tracingConfig": SECRET_REF, "tracingConfigFile": "/etc/tracing.yaml"}})
    assert "--tracing.config-file=/etc/tracing.yaml" in c["args"] and "env" not in c


def test_sidecar_volume_mounts_and_user_volumes():
    spec = {"volumes": [{"name": "test-volume", "emptyDir": {}}],
            "thanos": {"volumeMounts": [{"name": "test-volume", "mountPath": "/prometheus/thanos-sidecar"}]}}
    s = sts(spec)
    assert "test-volume" in [v["name"] for v in s["spec"]["template"]["spec"]["volumes"]]
    assert {"name": "test-volume", "mountPath": "/prometheus/thanos-sidecar"} in containers(s)[2]["volumeMounts"]


@pytest.mark.parametrize("thanos, grpc, http", [
    ({"listenLocal": True}, "127.0.0.1:10901", "127.0.0.1:10902"),
    ({"grpcListenLocal": True}, "127.0.0.1:10901", ":10902"),
    ({"httpListenLocal": True}, ":10901", "127.0.0.1:10902"),
    ({}, ":10901", ":10902"),
])
def test_listen_local(thanos, grpc, http):
    args = sidecar({"thanos": thanos})["args"]
    assert f"--grpc-address={grpc}" in args and f"--http-address={http}" in args


@pytest.mark.parametrize("key, flag, value", [
    ("getConfigInterval", "prometheus.get_config_interval", "1m"),
    ("getConfigTimeout", "prometheus.get_config_timeout", "30s"),
    ("readyTimeout", "prometheus.ready_timeout", "20m"),
    ("logLevel", "log.level", "debug"),
    ("minTime", "min-time", "-1d"),
    ("logFormat", "log.format", "json"),
])
def test_scalar_flags(key, flag, value):
    assert f"--{flag}={value}" in sidecar({"thanos": {key: value}})["args"]


@pytest.mark.parametrize("key", ["getConfigInterval", "getConfigTimeout"])
def test_get_config_flags_need_thanos_0_29(key):
    assert not any(a.startswith("--prometheus.get_config") for a in sidecar({"thanos": {"version": "0.28.0",
                                                                                      key: "1m"}})["args"])


def test_log_level_and_format_fall_back_to_the_prometheus_ones():
    args = sidecar({"logLevel": "warn", "logFormat": "json", "thanos": {}})["args"]
    assert "--log.level=warn" in args and "--log.format=json" in args
    args = sidecar({"logLevel": "warn", "thanos": {"logLevel": "debug"}})["args"]
    assert "--log.level=debug" in args and "--log.level=warn" not in args


def test_grpc_server_tls_arguments_in_order():
    tls = {"minVersion": "TLS13", "caFile": "/tmp/ca", "certFile": "/tmp/cert", "keyFile": "/tmp/key"}
    assert sidecar({"thanos": {"grpcServerTlsConfig": tls}})["args"] == [
        "sidecar", "--prometheus.url=http://localhost:9090/", "--grpc-address=:10901", "--http-address=:10902",
        "--grpc-server-tls-cert=/tmp/cert", "--grpc-server-tls-key=/tmp/key", "--grpc-server-tls-client-ca=/tmp/ca",
        "--grpc-server-tls-min-version=1.3",
        "--prometheus.http-client-file=/etc/thanos/config/prometheus.http-client-file.yaml"]


@pytest.mark.parametrize("key, values, flag", [
    ("cipherSuites", ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"],
     "--grpc-server-tls-ciphers=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384"),
    ("curves", ["CurveP256", "X25519"], "--grpc-server-tls-curves=CurveP256,X25519"),
])
@pytest.mark.parametrize("version, values_set, present", [
    ("0.42.0", True, True), ("0.41.0", True, False), ("0.42.0", False, False)])
def test_tls_ciphers_and_curves_need_thanos_0_42(key, values, flag, version, values_set, present):
    tls = {key: values} if values_set else {}
    args = sidecar({"thanos": {"version": version, "grpcServerTlsConfig": tls}})["args"]
    assert (flag in args) is present


def test_additional_args_come_last():
    c = sidecar({"thanos": {"logLevel": "info",
                            "additionalArgs": [{"name": "reloader.watch-interval", "value": "5m"}]}})
    assert c["args"] == ["sidecar", "--prometheus.url=http://localhost:9090/", "--grpc-address=:10901",
                         "--http-address=:10902", "--log.level=info",
                         "--prometheus.http-client-file=/etc/thanos/config/prometheus.http-client-file.yaml",
                         "--reloader.watch-interval=5m"]


def _render(spec: dict):
    return render(RenderInputs(prometheus=prom(spec)))


def test_additional_arg_that_repeats_a_managed_flag_refuses_the_prometheus():
    with pytest.raises(InvalidPrometheus, match="already managed by the operator: log.level"):
        _render({"thanos": {"logLevel": "info", "additionalArgs": [{"name": "log.level", "value": "error"}]}})


def test_unparsable_thanos_version_refuses_the_prometheus():
    with pytest.raises(InvalidPrometheus, match="spec.thanos.version"):
        _render({"thanos": {"version": "not-a-version", "objectStorageConfig": SECRET_REF}})


def test_old_thanos_gets_no_http_client_file():
    s = sts({"thanos": {"version": "v0.23.0"}})
    assert not any("http-client" in a for c in containers(s) for a in c["args"])
    assert "thanos-prometheus-http-client-file" not in [v["name"] for v in s["spec"]["template"]["spec"]["volumes"]]


def test_http_client_file_volume_secret_and_first_mount():
    s = sts({"thanos": {"version": "0.24.0"}})
    vols = {v["name"]: v for v in s["spec"]["template"]["spec"]["volumes"]}
    assert vols["thanos-prometheus-http-client-file"]["secret"] == {
        "secretName": "prometheus-test-thanos-prometheus-http-client-file"}
    assert containers(s)[2]["volumeMounts"] == [{"mountPath": "/etc/thanos/config",
                                                 "name": "thanos-prometheus-http-client-file"}]
    names = list(vols)  # before the storage volume, as upstream orders them
    assert names.index("thanos-prometheus-http-client-file") < names.index("prometheus-test-db")


def test_web_tls_makes_the_sidecar_speak_https():
    spec = {"web": {"tlsConfig": {"keySecret": {"name": "s", "key": "k"},
                                  "cert": {"configMap": {"name": "some-configmap", "key": "c"}}}}, "thanos": {}}
    assert "--prometheus.url=https://localhost:9090/" in sidecar(spec)["args"]


def test_route_prefix_in_prometheus_url():
    assert "--prometheus.url=http://localhost:9090/prom" in sidecar({"routePrefix": "/prom/", "thanos": {}})["args"]


def test_render_writes_the_http_client_secret_and_grpc_service_port():
    result = _render({"thanos": {}})
    secret = next(o for o in result.objects() if o["metadata"]["name"].endswith("-thanos-prometheus-http-client-file"))
    assert secret["kind"] == "Secret" and secret["stringData"] == {
        "prometheus.http-client-file.yaml": "tls_config:\n  insecure_skip_verify: true\n"}
    assert {"name": "grpc", "port": 10901, "protocol": "TCP", "targetPort": "grpc"} in result.service["spec"]["ports"]
    plain = _render({})
    assert [p["name"] for p in plain.service["spec"]["ports"]] == ["web"]
    assert plain.thanos_secret is None


