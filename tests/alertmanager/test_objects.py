"""The StatefulSet, Service and Secrets of an Alertmanager (reference §1-§3)."""

from __future__ import annotations

import base64

import pytest

from promop.render.alertmanager.model import AMRenderInputs, AMRenderOptions
from promop.render.alertmanager.pipeline import references, render
from promop.render.model import ObjectRef

from .helpers import SIMPLE_BASE, amc, base_secret, secret


def am(**spec):
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager",
            "metadata": {"name": "main", "namespace": "monitoring", "uid": "u1"}, "spec": spec}


def container(result, name="alertmanager"):
    pod = result.statefulset["spec"]["template"]["spec"]
    return next(c for c in pod["containers"] + pod["initContainers"] if c["name"] == name)


def test_single_replica_turns_clustering_off():
    args = container(render(AMRenderInputs(am(version="v0.27.0"))))["args"]
    assert args == [
        "--config.file=/etc/alertmanager/config_out/alertmanager.env.yaml", "--storage.path=/alertmanager",
        "--data.retention=120h", "--cluster.listen-address=", "--web.listen-address=:9093", "--web.route-prefix=/",
        "--cluster.label=monitoring/main", "--cluster.peer=alertmanager-main-0.alertmanager-operated:9094",
        "--cluster.reconnect-timeout=5m", "--web.config.file=/etc/alertmanager/web_config/web-config.yaml"]


def test_replicas_give_peer_flags_and_cluster_domain():
    opts = AMRenderOptions(cluster_domain="cluster.local")
    result = render(AMRenderInputs(am(replicas=3, version="v0.31.0", additionalPeers=["x:9094"]), options=opts))
    args = container(result)["args"]
    assert "--cluster.listen-address=[$(POD_IP)]:9094" in args
    assert [a for a in args if a.startswith("--cluster.peer=")] == [
        f"--cluster.peer=alertmanager-main-{i}.alertmanager-operated.monitoring.svc.cluster.local.:9094" for i in range(3)
    ] + ["--cluster.peer=x:9094"]
    assert "--cluster.peer-name=$(POD_NAME)" in args and "--dispatch.start-delay=0s" in args
    assert result.statefulset["spec"]["replicas"] == 3
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}} in \
        container(result)["env"]


def test_reloader_sidecar_and_init_container():
    result = render(AMRenderInputs(am(version="v0.27.0", secrets=["extra"])))
    main = container(result, "config-reloader")
    assert main["args"] == [
        "--listen-address=:8080", "--web-config-file=/etc/alertmanager/web_config/web-config.yaml",
        "--reload-url=http://localhost:9093/-/reload", "--config-file=/etc/alertmanager/config/alertmanager.yaml.gz",
        "--config-envsubst-file=/etc/alertmanager/config_out/alertmanager.env.yaml",
        "--watched-dir=/etc/alertmanager/config", "--watched-dir=/etc/alertmanager/secrets/extra"]
    init = container(result, "init-config-reloader")
    assert init["args"][:2] == ["--watch-interval=0", "--listen-address=:8081"]
    assert not any(a.startswith("--reload-url") for a in init["args"])
    volumes = [v["name"] for v in result.statefulset["spec"]["template"]["spec"]["volumes"]]
    assert volumes == ["config-volume", "tls-assets", "config-out", "secret-extra", "web-config", "alertmanager-main-db"]


def test_service_and_secrets():
    inputs = AMRenderInputs(am(version="v0.27.0", alertmanagerConfigSelector={}), [
        amc("c", "monitoring", route={"receiver": "r"}, receivers=[{"name": "r", "webhookConfigs": [
            {"url": "https://x.example", "httpConfig": {"tlsConfig": {"ca": {"secret": {"name": "ca", "key": "ca.crt"}}}}}]}])],
        secrets={("monitoring", "alertmanager-main"): base_secret(SIMPLE_BASE),
                 ("monitoring", "ca"): secret("ca", "monitoring", **{"ca.crt": "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"})})
    result = render(inputs)
    assert result.service["spec"]["selector"] == {"app.kubernetes.io/name": "alertmanager"}
    assert [p["name"] for p in result.service["spec"]["ports"]] == ["web", "tcp-mesh", "udp-mesh"]
    assert result.service["metadata"]["ownerReferences"][0]["controller"] is False
    assert [s["metadata"]["name"] for s in result.tls_secrets] == ["alertmanager-main-tls-assets-0"]
    assert set(result.tls_secrets[0]["data"]) == {"0_monitoring_ca_ca.crt"}
    assert result.generated_secret["metadata"]["ownerReferences"][0]["kind"] == "Alertmanager"
    assert base64.b64decode(result.web_config_secret["data"]["web-config.yaml"]) == b""
    assert references(inputs) == {ObjectRef("Secret", "monitoring", "alertmanager-main"), ObjectRef("Secret", "monitoring", "ca")}


def test_fatal_base_config_gives_no_generated_secret():
    result = render(AMRenderInputs(am(alertmanagerConfigSelector={}), secrets={
        ("monitoring", "alertmanager-main"): base_secret("route: {}\n")}))
    assert result.fatal is not None and result.generated_secret is None
    assert result.statefulset["kind"] == "StatefulSet"
    assert all(o is not None for o in result.objects())


def test_conflicting_additional_arg_is_fatal():
    result = render(AMRenderInputs(am(additionalArgs=[{"name": "storage.path", "value": "/x"}])))
    assert result.fatal is not None and "storage.path" in result.fatal.message


def test_service_name_means_no_service_and_listen_local_has_no_probes():
    result = render(AMRenderInputs(am(serviceName="mine", listenLocal=True)))
    assert result.service is None
    c = container(result)
    assert "livenessProbe" not in c and "--web.listen-address=127.0.0.1:9093" in c["args"]
    assert result.statefulset["spec"]["serviceName"] == "mine"


@pytest.mark.parametrize("field", ["baseImage", "tag"])
def test_warnings_for_deprecated_fields(field):
    result = render(AMRenderInputs(am(**{field: "quay.io/x"})))
    assert any(w.field == f"spec.{field}" for w in result.warnings)
