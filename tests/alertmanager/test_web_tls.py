"""spec.web.tlsConfig and spec.clusterTLS: the web and cluster TLS config files, their mounts, HTTPS probes and
reload URL, rejection of a missing or mismatched certificate, and a real Alertmanager serving HTTPS with them."""

from __future__ import annotations

import base64
import gzip
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from promop.certs import CA
from promop.render.alertmanager.model import AMRenderInputs
from promop.render.alertmanager.pipeline import references, render
from promop.render.model import ObjectRef

from .operator_helpers import ROOT, eventually

NS = "monitoring"
BINARY = shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"


@pytest.fixture(scope="module")
def pki():
    ca = CA.create("promop-am-test-ca")
    cert, key = ca.issue("localhost", hosts=["localhost", "127.0.0.1"])
    other_cert, other_key = ca.issue("other", hosts=["localhost"])
    return {"ca": ca.cert_pem.decode(), "cert": cert.decode(), "key": key.decode(), "other_key": other_key.decode(),
            "client": [p.decode() for p in ca.issue("peer", client=True)], "other_cert": other_cert.decode()}


def tls_secret(pki, name="web-tls", **override) -> dict:
    data = {"tls.crt": pki["cert"], "tls.key": pki["key"], **override}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
            "stringData": data}


def ca_configmap(pki, name="web-ca") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
            "data": {"ca.crt": pki["ca"]}}


WEB_TLS = {"cert": {"secret": {"name": "web-tls", "key": "tls.crt"}},
           "keySecret": {"name": "web-tls", "key": "tls.key"},
           "client_ca": {"configMap": {"name": "web-ca", "key": "ca.crt"}},
           "clientAuthType": "VerifyClientCertIfGiven", "minVersion": "TLS12", "maxVersion": "TLS13",
           "cipherSuites": ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
           "curvePreferences": ["X25519", "CurveP256"], "preferServerCipherSuites": True}
CLUSTER_TLS = {"server": {"cert": {"secret": {"name": "web-tls", "key": "tls.crt"}},
                          "keySecret": {"name": "web-tls", "key": "tls.key"},
                          "client_ca": {"configMap": {"name": "web-ca", "key": "ca.crt"}},
                          "clientAuthType": "RequireAndVerifyClientCert"},
               "client": {"ca": {"configMap": {"name": "web-ca", "key": "ca.crt"}},
                          "cert": {"secret": {"name": "peer-tls", "key": "tls.crt"}},
                          "keySecret": {"name": "peer-tls", "key": "tls.key"}, "serverName": "localhost"}}


def am(version="v0.25.0", **spec) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager",
            "metadata": {"name": "main", "namespace": NS, "uid": "u1"}, "spec": {"version": version, **spec}}


def inputs(pki, alertmanager, *objs) -> AMRenderInputs:
    objs = objs or (tls_secret(pki), ca_configmap(pki),
                    tls_secret(pki, "peer-tls", **{"tls.crt": pki["client"][0], "tls.key": pki["client"][1]}))
    return AMRenderInputs(alertmanager,
                          secrets={(NS, o["metadata"]["name"]): o for o in objs if o["kind"] == "Secret"},
                          configmaps={(NS, o["metadata"]["name"]): o for o in objs if o["kind"] == "ConfigMap"})


def pod(result) -> dict:
    return result.statefulset["spec"]["template"]["spec"]


def container(result, name="alertmanager") -> dict:
    return next(c for c in pod(result)["containers"] if c["name"] == name)


def secret_text(secret: dict, key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


def mounted_file(result, container_name: str, path: str) -> tuple[dict, str]:
    """(the volume a file path of the config lives on, its key): as the kubelet would resolve it."""
    vols = {v["name"]: v for v in pod(result)["volumes"]}
    for m in container(result, container_name)["volumeMounts"]:
        if path.startswith(m["mountPath"] + "/") and "subPath" not in m:
            return vols[m["name"]], path[len(m["mountPath"]) + 1:]
    raise AssertionError(f"{path} is on no volume mount of {container_name}")


def test_web_tls_config_file_mounts_probes_and_reload_url(pki):
    result = render(inputs(pki, am(web={"tlsConfig": WEB_TLS})))
    assert result.fatal is None
    web = yaml.safe_load(secret_text(result.web_config_secret, "web-config.yaml"))
    server = web["tls_server_config"]
    assert {k: v for k, v in server.items() if not k.endswith("_file")} == {
        "client_auth_type": "VerifyClientCertIfGiven", "min_version": "TLS12", "max_version": "TLS13",
        "cipher_suites": WEB_TLS["cipherSuites"], "prefer_server_cipher_suites": True,
        "curve_preferences": ["X25519", "CurveP256"]}
    for key, (source, name, item) in {"cert_file": ("secret", "web-tls", "tls.crt"),
                                      "key_file": ("secret", "web-tls", "tls.key"),
                                      "client_ca_file": ("configMap", "web-ca", "ca.crt")}.items():
        assert server[key].startswith("/etc/alertmanager/web_config/"), server[key]
        for c in ("alertmanager", "config-reloader"):  # the reloader serves with the same web config file
            volume, file_key = mounted_file(result, c, server[key])
            assert file_key == item and volume["name"].startswith("web-config-tls-"), volume
            assert (volume.get("secret") or {}).get("secretName", (volume.get("configMap") or {}).get("name")) == name
            assert source in volume
    c = container(result)
    assert "--web.config.file=/etc/alertmanager/web_config/web-config.yaml" in c["args"]
    assert c["livenessProbe"]["httpGet"]["scheme"] == "HTTPS" and c["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert "--reload-url=https://localhost:9093/-/reload" in container(result, "config-reloader")["args"]
    assert not [v for v in pod(result)["volumes"] if len(v["name"]) > 63]


def test_without_web_tls_the_probes_and_reload_stay_http(pki):
    result = render(inputs(pki, am()))
    assert secret_text(result.web_config_secret, "web-config.yaml") == ""
    assert container(result)["livenessProbe"]["httpGet"]["scheme"] == "HTTP"
    assert not [v for v in pod(result)["volumes"] if v["name"].startswith(("web-config-tls", "cluster-tls"))]


def test_web_tls_below_0_22_is_ignored_as_upstream(pki):
    result = render(inputs(pki, am(version="v0.21.0", web={"tlsConfig": WEB_TLS})))
    assert result.fatal is None and result.web_config_secret is None
    assert container(result)["livenessProbe"]["httpGet"]["scheme"] == "HTTP"


def test_references_include_the_tls_secrets_and_configmaps(pki):
    refs = references(inputs(pki, am(web={"tlsConfig": WEB_TLS}, clusterTLS=CLUSTER_TLS)))
    assert {ObjectRef("Secret", NS, "web-tls"), ObjectRef("ConfigMap", NS, "web-ca"),
            ObjectRef("Secret", NS, "peer-tls")} <= refs


@pytest.mark.parametrize("objs, field, words", [
    (lambda p: [ca_configmap(p)], "spec.web.tlsConfig.cert.secret", "Secret monitoring/web-tls not found"),
    (lambda p: [ca_configmap(p), {**tls_secret(p), "stringData": {"tls.crt": p["cert"]}}],
     "spec.web.tlsConfig.keySecret", "key 'tls.key' not found"),
    (lambda p: [tls_secret(p)], "spec.web.tlsConfig.client_ca.configMap", "ConfigMap monitoring/web-ca not found"),
    (lambda p: [ca_configmap(p), tls_secret(p, **{"tls.key": p["other_key"]})], "spec.web.tlsConfig.keySecret",
     "does not belong to the certificate"),
    (lambda p: [ca_configmap(p), tls_secret(p, **{"tls.crt": "not a certificate"})], "spec.web.tlsConfig.cert",
     "not a PEM certificate"),
])
def test_a_missing_or_mismatched_reference_rejects_the_alertmanager(pki, objs, field, words):
    result = render(inputs(pki, am(web={"tlsConfig": WEB_TLS}), *objs(pki)))
    assert result.fatal is not None and result.generated_secret is None
    assert result.fatal.field == field and words in result.fatal.message, result.fatal


@pytest.mark.parametrize("tls, words", [
    ({"certFile": "/a", "keyFile": "/b", "cert": WEB_TLS["cert"]}, "cert and certFile are mutually exclusive"),
    ({"keyFile": "/b"}, "needs the server certificate"),
    ({"certFile": "/a", "keyFile": "/b", "minVersion": "TLS13", "maxVersion": "TLS12"}, "above maxVersion"),
    ({"certFile": "/a", "keyFile": "/b", "cipherSuites": "TLS_AES_128_GCM_SHA256"}, "must be a list of names"),
    ({"certFile": "/a", "keyFile": "/b", "clientAuthType": "Always"}, "is not one of NoClientCert"),
])
def test_invalid_web_tls_shapes_are_rejected(pki, tls, words):
    result = render(inputs(pki, am(web={"tlsConfig": tls})))
    assert result.fatal is not None and words in result.fatal.message, result.fatal


def test_files_in_the_container_are_used_verbatim(pki):
    tls = {"certFile": "/etc/tls/tls.crt", "keyFile": "/etc/tls/tls.key", "clientCAFile": "/etc/tls/ca.crt"}
    result = render(inputs(pki, am(web={"tlsConfig": tls})))
    assert yaml.safe_load(secret_text(result.web_config_secret, "web-config.yaml"))["tls_server_config"] == {
        "cert_file": "/etc/tls/tls.crt", "key_file": "/etc/tls/tls.key", "client_ca_file": "/etc/tls/ca.crt"}


def test_cluster_tls_config_file_flag_and_mounts(pki):
    result = render(inputs(pki, am(replicas=3, clusterTLS=CLUSTER_TLS)))
    assert result.fatal is None
    c = container(result)
    assert "--cluster.tls-config=/etc/alertmanager/cluster_tls_config/cluster-tls-config.yaml" in c["args"]
    cfg = yaml.safe_load(secret_text(result.cluster_tls_secret, "cluster-tls-config.yaml"))
    assert set(cfg) == {"tls_server_config", "tls_client_config"}
    client = cfg["tls_client_config"]
    assert client["server_name"] == "localhost"
    assert client["cert_file"].startswith("/etc/alertmanager/cluster_tls_config/client_tls/")
    assert cfg["tls_server_config"]["cert_file"].startswith("/etc/alertmanager/cluster_tls_config/server_tls/")
    for path in (*cfg["tls_server_config"].values(), *client.values()):
        if str(path).startswith("/etc/"):
            mounted_file(result, "alertmanager", path)


def test_cluster_tls_needs_0_24_and_both_sides(pki):
    old = render(inputs(pki, am(version="v0.23.0", clusterTLS=CLUSTER_TLS)))
    assert old.cluster_tls_secret is None and not any("cluster.tls" in a for a in container(old)["args"])
    half = render(inputs(pki, am(clusterTLS={"server": CLUSTER_TLS["server"]})))
    assert half.fatal is not None and half.fatal.field == "spec.clusterTLS"
    bad = render(inputs(pki, am(clusterTLS=CLUSTER_TLS), tls_secret(pki), ca_configmap(pki)))
    assert bad.fatal is not None and "peer-tls" in bad.fatal.message


@pytest.mark.parametrize("spec, field", [
    ({"web": {"tlsConfig": {}}}, "spec.web.tlsConfig"),
    ({"clusterTLS": {}}, "spec.clusterTLS"),
    ({"clusterTLS": {**CLUSTER_TLS, "server": {}}}, "spec.clusterTLS"),
])
def test_an_empty_tls_section_is_rejected_not_treated_as_unset(pki, spec, field):
    """Upstream's WebTLSConfig.Validate runs on a present (non-nil) section: {} has no certificate or key."""
    result = render(inputs(pki, am(**spec)))
    assert result.fatal is not None and result.generated_secret is None, result.fatal
    assert result.fatal.field == field, result.fatal
    if field == "spec.web.tlsConfig":
        assert "is empty" in result.fatal.message and "cert" in result.fatal.message
    # below the version that reads the field it stays ignored, as a non-empty one is
    assert render(inputs(pki, am(version="v0.21.0", **spec))).fatal is None


def optional(ref: dict) -> dict:
    return {k: {**v, "optional": True} if isinstance(v, dict) else v for k, v in ref.items()} \
        if "secret" in ref or "configMap" in ref else {**ref, "optional": True}


def test_a_missing_optional_reference_mounts_an_optional_volume_and_keeps_the_file(pki):
    """As Kubernetes does for an optional volume source: no rejection, the pod is not held in ContainerCreating,
    the config keeps its file (the kubelet fills it in when the object appears), and a warning says so."""
    tls = {**WEB_TLS, "cert": optional(WEB_TLS["cert"]), "keySecret": optional(WEB_TLS["keySecret"]),
           "client_ca": optional(WEB_TLS["client_ca"])}
    missing = render(inputs(pki, am(web={"tlsConfig": tls}), tls_secret(pki, "unrelated")))
    assert missing.fatal is None, missing.fatal
    server = yaml.safe_load(secret_text(missing.web_config_secret, "web-config.yaml"))["tls_server_config"]
    assert {"cert_file", "key_file", "client_ca_file"} <= set(server)  # nothing silently dropped
    for key in ("cert_file", "key_file", "client_ca_file"):
        volume, _ = mounted_file(missing, "alertmanager", server[key])
        assert (volume.get("secret") or volume.get("configMap"))["optional"] is True, volume
    warned = {w.field for w in missing.warnings}
    assert {"spec.web.tlsConfig.cert.secret", "spec.web.tlsConfig.keySecret",
            "spec.web.tlsConfig.client_ca.configMap"} <= warned, missing.warnings
    # present: the same StatefulSet volumes (no rollout when the Secret appears), the pair still checked
    present = render(inputs(pki, am(web={"tlsConfig": tls})))
    assert present.fatal is None and not present.warnings
    assert pod(present)["volumes"] == pod(missing)["volumes"]
    wrong = render(inputs(pki, am(web={"tlsConfig": tls}), ca_configmap(pki),
                          tls_secret(pki, **{"tls.key": pki["other_key"]})))
    assert wrong.fatal is not None and "does not belong" in wrong.fatal.message


def test_a_missing_optional_cluster_client_certificate_is_not_a_rejection(pki):
    client = {**CLUSTER_TLS["client"], "cert": optional(CLUSTER_TLS["client"]["cert"]),
              "keySecret": optional(CLUSTER_TLS["client"]["keySecret"])}
    result = render(inputs(pki, am(clusterTLS={**CLUSTER_TLS, "client": client}), tls_secret(pki),
                           ca_configmap(pki)))
    assert result.fatal is None, result.fatal
    cfg = yaml.safe_load(secret_text(result.cluster_tls_secret, "cluster-tls-config.yaml"))["tls_client_config"]
    volume, _ = mounted_file(result, "alertmanager", cfg["cert_file"])
    assert volume["secret"] == {"secretName": "peer-tls", "optional": True}
    # not optional: still a rejection naming the field
    strict = render(inputs(pki, am(clusterTLS=CLUSTER_TLS), tls_secret(pki), ca_configmap(pki)))
    assert strict.fatal is not None and strict.fatal.field == "spec.clusterTLS.client.cert.secret"


# ---- a real Alertmanager ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def materialise(result, root: Path, objs: list[dict], container_name: str = "alertmanager") -> None:
    """Lay out the container's TLS mounts under `root` as the kubelet would (each Secret/ConfigMap key a file)."""
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    vols = {v["name"]: v for v in pod(result)["volumes"]}
    for m in container(result, container_name)["volumeMounts"]:
        vol = vols[m["name"]]
        if not m["name"].startswith(("web-config-tls-", "cluster-tls-server-", "cluster-tls-client-")):
            continue
        obj = by_name[("Secret", vol["secret"]["secretName"])] if "secret" in vol else \
            by_name[("ConfigMap", vol["configMap"]["name"])]
        target = root / m["mountPath"].lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        for key, value in {**obj.get("data", {}), **obj.get("stringData", {})}.items():
            (target / key).write_text(value)


def wait_https(url: str, proc: subprocess.Popen, **kw) -> requests.Response:
    deadline = time.monotonic() + 60 * float(os.environ.get("PROMOP_TEST_TIMEOUT_SCALE", "3"))
    while True:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else "exited"
        try:
            return requests.get(url, timeout=5, **kw)
        except requests.ConnectionError:
            assert time.monotonic() < deadline, f"{url} did not answer"
            time.sleep(0.1)


def stop(*procs: subprocess.Popen) -> None:
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.skipif(not os.path.exists(BINARY), reason="prometheus-alertmanager is not installed")
def test_real_alertmanager_serves_https_and_the_reloader_reloads_it_over_https(pki, tmp_path):
    """The generated web and cluster TLS files, laid out as the pod's mounts, run Debian's Alertmanager 0.25
    with HTTPS and gossip TLS; our reloader, with the rendered --reload-url and --web-config-file, serves
    HTTPS itself and reloads Alertmanager over HTTPS."""
    objs = [tls_secret(pki), ca_configmap(pki),
            tls_secret(pki, "peer-tls", **{"tls.crt": pki["client"][0], "tls.key": pki["client"][1]})]
    web_tls = {**WEB_TLS, "minVersion": "TLS13"}  # so that a TLS 1.2 client (which Python can be) is refused
    result = render(inputs(pki, am(web={"tlsConfig": web_tls}, clusterTLS=CLUSTER_TLS), *objs))
    assert result.fatal is None
    materialise(result, tmp_path, objs)
    materialise(result, tmp_path, objs, "config-reloader")
    rebase = lambda text: text.replace("/etc/alertmanager/", f"{tmp_path}/etc/alertmanager/")  # noqa: E731
    web_file, cluster_file = tmp_path / "web-config.yaml", tmp_path / "cluster-tls-config.yaml"
    web_file.write_text(rebase(secret_text(result.web_config_secret, "web-config.yaml")))
    cluster_file.write_text(rebase(secret_text(result.cluster_tls_secret, "cluster-tls-config.yaml")))
    config_dir, out_dir = tmp_path / "config", tmp_path / "config_out"
    config_dir.mkdir()
    out_dir.mkdir()
    base = 'route:\n  receiver: "null"\nreceivers:\n- name: "null"\n'
    (config_dir / "alertmanager.yaml.gz").write_bytes(gzip.compress(base.encode()))
    common = [f"--config-file={config_dir}/alertmanager.yaml.gz",
              f"--config-envsubst-file={out_dir}/alertmanager.env.yaml", f"--watched-dir={config_dir}"]
    init = subprocess.run([sys.executable, "-m", "reloader", "--watch-interval=0", *common], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr
    port, mesh, reloader_port = free_port(), free_port(), free_port()
    am_args = next(c for c in pod(result)["containers"] if c["name"] == "alertmanager")["args"]
    flags = [rebase(a) for a in am_args if a.startswith(("--web.config.file", "--cluster.tls-config"))]
    assert len(flags) == 2
    flags = [f"--web.config.file={web_file}" if f.startswith("--web.config") else f"--cluster.tls-config={cluster_file}"
             for f in flags]
    proc = subprocess.Popen([BINARY, f"--config.file={out_dir}/alertmanager.env.yaml", f"--storage.path={tmp_path}",
                             f"--web.listen-address=127.0.0.1:{port}", f"--cluster.listen-address=127.0.0.1:{mesh}",
                             *flags], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    reload_url = next(a for a in container(result, "config-reloader")["args"] if a.startswith("--reload-url="))
    assert reload_url.startswith("--reload-url=https://")
    reloader = subprocess.Popen([sys.executable, "-m", "reloader", f"--listen-address=127.0.0.1:{reloader_port}",
                                 reload_url.replace(":9093/", f":{port}/"), f"--web-config-file={web_file}",
                                 "--delay-interval=0.1s", *common],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ca_file = tmp_path / "ca.pem"
    ca_file.write_text(pki["ca"])
    try:
        assert wait_https(f"https://127.0.0.1:{port}/-/healthy", proc, verify=str(ca_file)).status_code == 200
        # verified by our CA, with a client certificate the client CA accepts
        client = (str(tmp_path / "c.pem"), str(tmp_path / "k.pem"))
        Path(client[0]).write_text(pki["client"][0])
        Path(client[1]).write_text(pki["client"][1])
        assert requests.get(f"https://127.0.0.1:{port}/api/v2/status", verify=str(ca_file), cert=client,
                            timeout=5).status_code == 200
        plain = requests.get(f"http://127.0.0.1:{port}/-/healthy", timeout=5)  # Go answers plain HTTP with a 400
        assert plain.status_code == 400 and "HTTPS" in plain.text
        ctx = ssl.create_default_context(cafile=str(ca_file))
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            assert ctx.wrap_socket(sock, server_hostname="localhost").version() == "TLSv1.3"
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2  # below minVersion: refused by the server
        with pytest.raises(ssl.SSLError), socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            ctx.wrap_socket(sock, server_hostname="localhost")
        # the sidecar serves its own endpoint over HTTPS with the same web config file
        assert wait_https(f"https://127.0.0.1:{reloader_port}/metrics", reloader,
                          verify=str(ca_file)).status_code == 200
        # a new config reaches Alertmanager through the reloader's HTTPS reload
        changed = base + '- name: "over-https"\n'
        (config_dir / "alertmanager.yaml.gz").write_bytes(gzip.compress(changed.encode()))

        def loaded() -> str:
            assert reloader.poll() is None, reloader.stderr.read()
            return requests.get(f"https://127.0.0.1:{port}/api/v2/status", verify=str(ca_file),
                                timeout=5).json()["config"]["original"]
        eventually(lambda: "over-https" in loaded(), 30, "Alertmanager reloaded over HTTPS")
    finally:
        stop(reloader, proc)


def test_a_receiver_client_certificate_with_the_wrong_key_rejects_that_alertmanagerconfig_alone(pki):
    from promop.render.alertmanager.config import build_config

    from .helpers import SIMPLE_BASE, alertmanager, amc, base_secret, store_of

    def hook(name: str) -> dict:
        tls = {"cert": {"secret": {"name": name, "key": "tls.crt"}}, "keySecret": {"name": name, "key": "tls.key"}}
        return amc(name, route={"receiver": "r"}, receivers=[
            {"name": "r", "webhookConfigs": [{"url": "https://h.example/", "httpConfig": {"tlsConfig": tls}}]}])

    def client_secret(name: str, key: str) -> dict:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "team"},
                "stringData": {"tls.crt": pki["cert"], "tls.key": key}}

    docs = [base_secret(SIMPLE_BASE), client_secret("good", pki["key"]), client_secret("bad", pki["other_key"])]
    result = build_config(alertmanager(), [hook("good"), hook("bad")], [], store_of(docs))
    assert result.fatal is None
    assert [(p.name, p.field) for p in result.rejected] == [
        ("bad", "spec.receivers[0].webhookConfigs[0].httpConfig.tlsConfig.keySecret")]
    assert "does not belong to the certificate" in result.rejected[0].message
    assert result.accepted() == [("team", "good")]
