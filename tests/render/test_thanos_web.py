"""ThanosRuler spec.web: the `--http.config` Secret against upstream's pkg/webconfig goldens (rendered with
upstream's ThanosRuler directory /etc/thanos/web_config), the TLS volumes and mounts of thanos-ruler and
its config reloader (upstream's GetMountParameters names), the reload URL over HTTPS (upstream's isHTTPS:
tlsConfig and Thanos >= 0.21), and one-line refusals of bad references."""

from __future__ import annotations

import base64

import pytest
import yaml

from promop.certs import CA
from promop.render.thanos.ruler_render import InvalidThanosRuler, RulerInputs, render_ruler
from promop.render.thanos.ruler_web import web_tls_references

from .helpers import TESTDATA
from .upstream_paths import upstream_tests

CASES = yaml.safe_load((TESTDATA / "webconfig" / "cases.yaml").read_text())
NS = "ns"
BASE = "/etc/thanos/web_config"
KEY_VOL, CERT_VOL, CA_VOL = (f"web-config-tls-secret-{r}-some-secret-3556f148" for r in ("key", "cert", "client-ca"))
SOME_SECRET_TLS = {"keySecret": {"name": "some-secret", "key": "tls.key"},
                   "cert": {"secret": {"name": "some-secret", "key": "tls.crt"}},
                   "client_ca": {"secret": {"name": "some-secret", "key": "tls.client_ca"}}}


@pytest.fixture(scope="module")
def pair() -> dict:
    ca = CA.create("promop-thanos-web-test-ca")
    cert, key = ca.issue("localhost", hosts=["localhost", "127.0.0.1"])
    other_cert, other_key = ca.issue("other", hosts=["other"])
    return {"cert": cert.decode(), "key": key.decode(), "ca": ca.cert_pem.decode(), "other_key": other_key.decode()}


def _secrets(pair: dict) -> dict:
    return {(NS, "test-secret"): {"stringData": {"tls.crt": pair["cert"], "tls.key": pair["key"],
                                                 "tls.keySecret": pair["key"], "tls.ca": pair["ca"]}},
            (NS, "some-secret"): {"stringData": {"tls.crt": pair["cert"], "tls.key": pair["key"],
                                                 "tls.client_ca": pair["ca"]}}}


def _configmaps(pair: dict) -> dict:
    return {(NS, "test-configmap"): {"data": {"tls.crt": pair["cert"], "tls.client_ca": pair["ca"]}}}


def _ruler(spec: dict | None = None) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler",
            "metadata": {"name": "r", "namespace": NS, "uid": "u"}, "spec": {"queryEndpoints": ["q"], **(spec or {})}}


def _render(spec: dict | None = None, secrets: dict | None = None, configmaps: dict | None = None):
    return render_ruler(RulerInputs(ruler=_ruler(spec), secrets=secrets or {}, configmaps=configmaps or {}))


def _web_config(result) -> str:
    secret = result.web_config_secret
    assert secret["metadata"]["name"] == "thanos-ruler-r-web-config"
    return base64.b64decode(secret["data"]["web-config.yaml"]).decode()


def _containers(result) -> dict:
    return {c["name"]: c for c in result.statefulset["spec"]["template"]["spec"]["containers"]}


@pytest.mark.parametrize("case", CASES, ids=[c["golden"] for c in CASES])
def test_web_config_secret_matches_upstream_golden(case, pair):
    golden = (upstream_tests() / "pkg" / "webconfig" / "testdata" / case["golden"]).read_text()
    golden = golden.replace("/web_certs_path_prefix", BASE)
    text = _web_config(_render({"web": case["web"]}, _secrets(pair), _configmaps(pair)))
    assert yaml.safe_load(text) == yaml.safe_load(golden)
    if not golden.strip():
        assert text == ""  # upstream writes an empty file, not "{}"
    # as upstream, the file does not depend on the referenced objects being there yet
    assert _web_config(_render({"web": case["web"]})) == text


def test_no_spec_web_gives_an_empty_web_config_and_plain_http():
    result = _render()
    assert _web_config(result) == ""
    reloader = _containers(result)["config-reloader"]
    assert "--reload-url=http://localhost:10902/-/reload" in reloader["args"]


def test_tls_volumes_and_mounts_follow_the_web_config_in_upstreams_order(pair):
    result = _render({"web": {"tlsConfig": SOME_SECRET_TLS}}, _secrets(pair))
    pod = result.statefulset["spec"]["template"]["spec"]
    names = [v["name"] for v in pod["volumes"]]
    at = names.index("tls-assets")
    assert names[at:at + 5] == ["tls-assets", "web-config", KEY_VOL, CERT_VOL, CA_VOL]
    assert pod["volumes"][at + 2] == {"name": KEY_VOL, "secret": {"secretName": "some-secret"}}
    want_mounts = [
        {"mountPath": f"{BASE}/web-config.yaml", "name": "web-config", "readOnly": True, "subPath": "web-config.yaml"},
        {"mountPath": f"{BASE}/secret/some-secret-key", "name": KEY_VOL, "readOnly": True},
        {"mountPath": f"{BASE}/secret/some-secret-cert", "name": CERT_VOL, "readOnly": True},
        {"mountPath": f"{BASE}/secret/some-secret-ca", "name": CA_VOL, "readOnly": True},
    ]
    ruler_mounts = _containers(result)["thanos-ruler"]["volumeMounts"]
    at = [m["name"] for m in ruler_mounts].index("web-config")
    assert ruler_mounts[at:at + 4] == want_mounts
    reloader_mounts = _containers(result)["config-reloader"]["volumeMounts"]
    assert reloader_mounts[-4:] == want_mounts  # after the rule ConfigMaps, as upstream's configMount
    doc = yaml.safe_load(_web_config(result))["tls_server_config"]
    assert doc == {"cert_file": f"{BASE}/secret/some-secret-cert/tls.crt",
                   "key_file": f"{BASE}/secret/some-secret-key/tls.key",
                   "client_ca_file": f"{BASE}/secret/some-secret-ca/tls.client_ca"}


def test_thanos_serves_and_the_reloader_reloads_over_https(pair):
    result = _render({"web": {"tlsConfig": SOME_SECRET_TLS}, "routePrefix": "/rule"}, _secrets(pair))
    containers = _containers(result)
    assert containers["thanos-ruler"]["args"][-1] == f"--http.config={BASE}/web-config.yaml"
    reloader = containers["config-reloader"]["args"]
    assert f"--web-config-file={BASE}/web-config.yaml" in reloader
    assert "--reload-url=https://localhost:10902/rule/-/reload" in reloader
    assert not any(a.startswith("--reload-url=http://") for a in reloader)


def test_http_config_alone_stays_plain_http():
    result = _render({"web": {"httpConfig": {"http2": False}}})
    assert yaml.safe_load(_web_config(result)) == {"http_server_config": {"http2": False}}
    assert "--reload-url=http://localhost:10902/-/reload" in _containers(result)["config-reloader"]["args"]
    assert not any(v["name"].startswith("web-config-tls") for v in
                   result.statefulset["spec"]["template"]["spec"]["volumes"])


@pytest.mark.parametrize("version, https", [("v0.20.2", False), ("v0.21.0", True)])
def test_web_config_is_mounted_and_tls_served_from_thanos_0_21(version, https, pair):
    result = _render({"version": version, "web": {"tlsConfig": SOME_SECRET_TLS}}, _secrets(pair))
    names = [v["name"] for v in result.statefulset["spec"]["template"]["spec"]["volumes"]]
    assert ("web-config" in names) is https and (KEY_VOL in names) is https
    ruler_args = _containers(result)["thanos-ruler"]["args"]
    assert any(a.startswith("--http.config=") for a in ruler_args) is https
    scheme = "https" if https else "http"
    assert f"--reload-url={scheme}://localhost:10902/-/reload" in _containers(result)["config-reloader"]["args"]
    assert "tls_server_config" in yaml.safe_load(_web_config(result))  # upstream writes the Secret anyway


def test_references_absent_from_the_store_render_as_upstream_and_are_listed(pair):
    result = _render({"web": {"tlsConfig": SOME_SECRET_TLS}})
    assert KEY_VOL in [v["name"] for v in result.statefulset["spec"]["template"]["spec"]["volumes"]]
    assert web_tls_references(_ruler({"web": {"tlsConfig": SOME_SECRET_TLS}})) == [
        ("Secret", NS, "some-secret"), ("Secret", NS, "some-secret"), ("Secret", NS, "some-secret")]
    assert web_tls_references(_ruler()) == []


@pytest.mark.parametrize("tls, secrets, field, message", [
    ({}, {}, "spec.web.tlsConfig", "is empty"),
    ({"keySecret": {"name": "s", "key": "k"}}, {}, "spec.web.tlsConfig", "needs the server certificate"),
    ({"cert": {"secret": {"name": "s", "key": "c"}}, "certFile": "/x", "keySecret": {"name": "s", "key": "k"}}, {},
     "spec.web.tlsConfig", "cert and certFile are mutually exclusive"),
    ({"cert": {"secret": {"name": "some-secret", "key": "tls.crt"}},
      "keySecret": {"name": "some-secret", "key": "nope"}}, None, "spec.web.tlsConfig.keySecret",
     "key 'nope' not found in Secret ns/some-secret"),
    ({"certFile": "/c", "keyFile": "/k", "minVersion": "TLS14"}, {}, "spec.web.tlsConfig.minVersion",
     "'TLS14' is not one of"),
])
def test_bad_tls_config_refuses_the_ruler_in_one_line(tls, secrets, field, message, pair):
    with pytest.raises(InvalidThanosRuler) as err:
        _render({"web": {"tlsConfig": tls}}, _secrets(pair) if secrets is None else secrets)
    (problem,) = err.value.problems
    assert (problem.kind, problem.field) == ("ThanosRuler", field)
    assert message in problem.message
    assert "\n" not in str(err.value)


def test_a_key_that_is_not_the_certificates_refuses_the_ruler(pair):
    secrets = {(NS, "s"): {"stringData": {"tls.crt": pair["cert"], "tls.key": pair["other_key"]}}}
    tls = {"cert": {"secret": {"name": "s", "key": "tls.crt"}}, "keySecret": {"name": "s", "key": "tls.key"}}
    with pytest.raises(InvalidThanosRuler, match="does not belong to the certificate"):
        _render({"web": {"tlsConfig": tls}}, secrets)
