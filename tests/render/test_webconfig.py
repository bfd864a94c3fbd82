"""Prometheus spec.web: upstream's web config goldens (pkg/webconfig), its volume names and mounts,
HTTPS probes and reload URL (server TestListenTLS), and one-line refusals of bad references."""

from __future__ import annotations

import base64

import pytest
import yaml

from promop.certs import CA
from promop.render.alertmanager.webtls import server_tls
from promop.render.model import RenderInputs
from promop.render.pipeline import render
from promop.render.schema_check import InvalidPrometheus
from promop.render.store import Scope, Store
from promop.render.versions import Version
from promop.render.webconfig import prometheus_web_tls, web_config_text

from .helpers import TESTDATA, prometheus_obj
from .upstream_deviations import promop_startup_probe
from .upstream_paths import upstream_tests

CASES = yaml.safe_load((TESTDATA / "webconfig" / "cases.yaml").read_text())
NS = "default"


@pytest.fixture(scope="module")
def pair() -> dict:
    ca = CA.create("promop-webconfig-test-ca")
    cert, key = ca.issue("localhost", hosts=["localhost", "127.0.0.1"])
    return {"cert": cert.decode(), "key": key.decode(), "ca": ca.cert_pem.decode()}


def _store(pair: dict, ns: str = NS) -> Store:
    secret = {"stringData": {"tls.crt": pair["cert"], "tls.key": pair["key"], "tls.keySecret": pair["key"],
                             "tls.ca": pair["ca"]}}
    configmap = {"data": {"tls.crt": pair["cert"], "tls.client_ca": pair["ca"]}}
    return Store({(ns, "test-secret"): secret, (ns, "some-secret"): {"stringData": {
        "tls.crt": pair["cert"], "tls.key": pair["key"], "tls.client_ca": pair["ca"]}}},
        {(ns, "test-configmap"): configmap})


def _scope(pair: dict) -> Scope:
    return Scope(_store(pair), "Prometheus", NS, "test", Version("v3.13.2"))


@pytest.mark.parametrize("case", CASES, ids=[c["golden"] for c in CASES])
def test_web_config_matches_upstream_golden(case, pair):
    golden = (upstream_tests() / "pkg" / "webconfig" / "testdata" / case["golden"]).read_text()
    tls = case["web"].get("tlsConfig")
    section = server_tls(_scope(pair), tls, "spec.web.tlsConfig", "/web_certs_path_prefix",
                         "web-config-tls").section if tls else None
    text = web_config_text(case["web"], section)
    assert yaml.safe_load(text) == yaml.safe_load(golden)
    if not golden.strip():
        assert text == ""  # upstream writes an empty file, not "{}"


def test_mount_parameters_match_upstream_volume_names_and_paths(pair):
    """Upstream TestGetMountParameters: key, cert, client CA, each its own volume, mounted whole."""
    spec = {"web": {"tlsConfig": {"keySecret": {"name": "some-secret", "key": "tls.key"},
                                  "cert": {"secret": {"name": "some-secret", "key": "tls.crt"}},
                                  "client_ca": {"secret": {"name": "some-secret", "key": "tls.client_ca"}}}}}
    tls = prometheus_web_tls(Scope(_store(pair), "Prometheus", NS, "p", Version("v3.13.2")), spec)
    assert tls.volumes == [
        {"name": "web-config-tls-secret-key-some-secret-3556f148", "secret": {"secretName": "some-secret"}},
        {"name": "web-config-tls-secret-cert-some-secret-3556f148", "secret": {"secretName": "some-secret"}},
        {"name": "web-config-tls-secret-client-ca-some-secret-3556f148", "secret": {"secretName": "some-secret"}},
    ]
    base = "/etc/prometheus/web_config/secret"
    assert tls.mounts == [
        {"name": "web-config-tls-secret-key-some-secret-3556f148", "readOnly": True, "mountPath": f"{base}/some-secret-key"},
        {"name": "web-config-tls-secret-cert-some-secret-3556f148", "readOnly": True,
         "mountPath": f"{base}/some-secret-cert"},
        {"name": "web-config-tls-secret-client-ca-some-secret-3556f148", "readOnly": True,
         "mountPath": f"{base}/some-secret-ca"},
    ]
    assert tls.section["key_file"] == f"{base}/some-secret-key/tls.key"


def _render(pair: dict, **spec):
    prom = prometheus_obj("test", NS, version="v3.13.2", **spec)
    for selector in ("ruleSelector", "ruleNamespaceSelector"):  # upstream's test has no rule ConfigMaps
        del prom["spec"][selector]
    return render(RenderInputs(prom, secrets=_store(pair).secrets, configmaps=_store(pair).configmaps))


LISTEN_TLS = {"tlsConfig": {"keySecret": {"name": "some-secret", "key": "tls.key"},
                            "cert": {"configMap": {"name": "test-configmap", "key": "tls.crt"}}}}


def _container(sts: dict, name: str) -> dict:
    return next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def test_listen_tls_probes_and_reload_url_use_https(pair):
    """Upstream TestListenTLS (without the Thanos sidecar, which another module adds)."""
    sts = _render(pair, web=LISTEN_TLS).statefulsets[0]
    prom = _container(sts, "prometheus")

    def get(path: str) -> dict:
        return {"httpGet": {"path": path, "port": "web", "scheme": "HTTPS"}}

    assert prom["startupProbe"] == promop_startup_probe({**get("/-/ready"), "timeoutSeconds": 3, "periodSeconds": 15,
                                                         "failureThreshold": 60})
    assert prom["livenessProbe"] == {**get("/-/healthy"), "timeoutSeconds": 3, "periodSeconds": 5, "failureThreshold": 6}
    assert prom["readinessProbe"] == {**get("/-/ready"), "timeoutSeconds": 3, "periodSeconds": 5, "failureThreshold": 3}
    args = [a for a in _container(sts, "config-reloader")["args"] if "/etc/prometheus/rules/" not in a]
    assert args == [  # upstream's test renders no rule ConfigMaps
        "--listen-address=:8080",
        "--web-config-file=/etc/prometheus/web_config/web-config.yaml",
        "--reload-url=https://localhost:9090/-/reload",
        "--config-file=/etc/prometheus/config/prometheus.yaml.gz",
        "--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml",
        "--watched-dir=/etc/prometheus/config",
    ]


def test_tls_volumes_follow_the_web_config_volume_in_both_containers(pair):
    result = _render(pair, web=LISTEN_TLS)
    sts = result.statefulsets[0]
    names = [v["name"] for v in sts["spec"]["template"]["spec"]["volumes"]]
    at = names.index("web-config")
    assert names[at + 1:at + 3] == ["web-config-tls-secret-key-some-secret-3556f148",
                                    "web-config-tls-configmap-cert-test-configmap-" + names[at + 2][-8:]]
    for container in ("prometheus", "config-reloader"):
        mounts = {m["mountPath"]: m for m in _container(sts, container)["volumeMounts"]}
        assert "/etc/prometheus/web_config/secret/some-secret-key" in mounts
        assert "/etc/prometheus/web_config/configmap/test-configmap-cert" in mounts
        assert "subPath" not in mounts["/etc/prometheus/web_config/secret/some-secret-key"]  # refreshed on renewal
    text = base64.b64decode(result.web_config_secret["data"]["web-config.yaml"]).decode()
    assert yaml.safe_load(text) == {"tls_server_config": {
        "cert_file": "/etc/prometheus/web_config/configmap/test-configmap-cert/tls.crt",
        "key_file": "/etc/prometheus/web_config/secret/some-secret-key/tls.key"}}


def test_without_tls_probes_and_reload_stay_http_and_http_config_still_lands(pair):
    web = {"httpConfig": {"headers": {"xFrameOptions": "Deny"}}, "pageTitle": "t", "maxConnections": 600}
    result = _render(pair, web=web)
    sts = result.statefulsets[0]
    assert _container(sts, "prometheus")["readinessProbe"]["httpGet"]["scheme"] == "HTTP"
    assert "--reload-url=http://localhost:9090/-/reload" in _container(sts, "config-reloader")["args"]
    assert {"--web.page-title=t", "--web.max-connections=600"} <= set(_container(sts, "prometheus")["args"])
    text = base64.b64decode(result.web_config_secret["data"]["web-config.yaml"]).decode()
    assert yaml.safe_load(text) == {"http_server_config": {"headers": {"X-Frame-Options": "deny"}}}
    assert not [w for w in result.warnings if w.field.startswith("spec.web")]


def test_process_signal_runtimeinfo_url_uses_https_too(pair):
    sts = _render(pair, web=LISTEN_TLS, reloadStrategy="ProcessSignal").statefulsets[0]
    args = _container(sts, "config-reloader")["args"]
    assert "--runtimeinfo-url=https://localhost:9090/api/v1/status/runtimeinfo" in args


@pytest.mark.parametrize("tls, field, words", [
    ({"cert": {"secret": {"name": "absent", "key": "tls.crt"}}, "keySecret": {"name": "some-secret", "key": "tls.key"}},
     "spec.web.tlsConfig.cert.secret", "Secret default/absent not found"),
    ({"cert": {"secret": {"name": "some-secret", "key": "tls.crt"}}}, "spec.web.tlsConfig", "keySecret"),
    ({"cert": {"secret": {"name": "some-secret", "key": "tls.crt"}}, "keySecret": {"name": "some-secret", "key": "tls.key"},
      "minVersion": "TLS13", "maxVersion": "TLS12"}, "spec.web.tlsConfig.minVersion", "above maxVersion"),
])
def test_a_bad_tls_config_stops_this_prometheus_with_one_line(pair, tls, field, words):
    with pytest.raises(InvalidPrometheus) as info:
        _render(pair, web={"tlsConfig": tls})
    (problem,) = info.value.problems
    assert problem.field == field and words in problem.message
    assert "\n" not in str(info.value)


def test_web_tls_is_not_reported_as_unsupported(pair):
    result = _render(pair, web=LISTEN_TLS)
    assert not [w for w in result.warnings if w.field.startswith("spec.web")]


def test_the_thanos_sidecar_reaches_prometheus_over_https_too(pair):
    """Upstream TestListenTLS: `--prometheus.url=https://localhost:9090/` on the sidecar (added by its own module)."""
    from promop.render.alertmanager.webtls import TLSMounts
    from promop.render.webconfig import adapt_statefulset

    sts = {"spec": {"template": {"spec": {"volumes": [], "containers": [
        {"name": "thanos-sidecar", "args": ["sidecar", "--prometheus.url=http://localhost:9090/"]}]}}}}
    adapt_statefulset(sts, {"web": {}}, TLSMounts(section={"cert_file": "x", "key_file": "y"}))
    assert sts["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "sidecar", "--prometheus.url=https://localhost:9090/"]


def test_web_settings_below_2_24_are_ignored_with_a_warning(pair):
    prom = prometheus_obj("test", NS, version="v2.23.0", web=LISTEN_TLS)
    result = render(RenderInputs(prom, secrets=_store(pair).secrets, configmaps=_store(pair).configmaps))
    assert [w.field for w in result.warnings if w.field.startswith("spec.web")] == ["spec.web.tlsConfig"]
    probe = result.statefulsets[0]["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    assert probe["httpGet"]["scheme"] == "HTTP"


def test_a_missing_optional_certificate_warns_naming_prometheus(pair):
    tls = {**LISTEN_TLS["tlsConfig"], "client_ca": {"configMap": {"name": "later", "key": "ca.crt", "optional": True}}}
    result = _render(pair, web={"tlsConfig": tls})
    (warning,) = [w for w in result.warnings if w.field == "spec.web.tlsConfig.client_ca.configMap"]
    assert "Prometheus cannot serve TLS until it exists" in warning.message
    volume = next(v for v in result.statefulsets[0]["spec"]["template"]["spec"]["volumes"]
                  if v.get("configMap", {}).get("name") == "later")
    assert volume["configMap"]["optional"] is True
