"""ThanosRuler remote write per Thanos version, as upstream's createOrUpdateRulerConfigSecret: the fields a
Thanos version does not read are removed (each at its boundary), the rest is generated for the current
Prometheus, and a remote write Thanos cannot run refuses the ruler (upstream fails the sync).
The four goldens of pkg/thanos/testdata are in test_thanos_ruler.py."""

from __future__ import annotations

import base64

import pytest
import yaml

from promop.render.thanos.ruler_render import InvalidThanosRuler, RulerInputs, render_ruler

SECRETS = {("ns", "s"): {"stringData": {"k": "v"}}}


def _render(version: str, rw: dict):
    ruler = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler",
             "metadata": {"name": "r", "namespace": "ns", "uid": "u"},
             "spec": {"queryEndpoints": ["q"], "version": version, "remoteWrite": [{"url": "http://x", **rw}]}}
    return render_ruler(RulerInputs(ruler=ruler, secrets=SECRETS))


def _entry(result) -> dict:
    (entry,) = yaml.safe_load(base64.b64decode(result.config_secret["data"]["remote-write.yaml"]))["remote_write"]
    return entry


@pytest.mark.parametrize("rw, path, since", [
    ({"roundRobinDNS": True}, ("round_robin_dns",), "0.38.0"),
    ({"messageVersion": "V2.0"}, ("protobuf_message",), "0.37.0"),
    ({"queueConfig": {"sampleAgeLimit": "1m"}}, ("queue_config", "sample_age_limit"), "0.32.0"),
    ({"proxyUrl": "http://p:1", "noProxy": "a"}, ("no_proxy",), "0.32.0"),
    ({"proxyFromEnvironment": False}, ("proxy_from_environment",), "0.32.0"),
    ({"proxyUrl": "http://p:1", "proxyConnectHeader": {"h": [{"name": "s", "key": "k"}]}},
     ("proxy_connect_header",), "0.32.0"),
    ({"tlsConfig": {"maxVersion": "TLS13"}}, ("tls_config", "max_version"), "0.30.0"),
    ({"sendNativeHistograms": True}, ("send_native_histograms",), "0.30.0"),
    ({"tlsConfig": {"minVersion": "TLS12"}}, ("tls_config", "min_version"), "0.28.0"),
])
def test_a_field_is_written_from_the_thanos_version_that_reads_it(rw, path, since):
    major, minor, _ = since.split(".")
    before = f"v{major}.{int(minor) - 1}.9"

    def has(entry: dict) -> bool:
        for key in path:
            if not isinstance(entry, dict) or key not in entry:
                return False
            entry = entry[key]
        return True

    at = _render(f"v{since}", rw)
    assert has(_entry(at)) and not at.warnings
    below = _render(before, rw)
    assert not has(_entry(below))
    (warning,) = below.warnings
    assert warning.kind == "ThanosRuler" and warning.field.startswith("spec.remoteWrite[0].")
    assert f"not supported by Thanos < {since}" in warning.message and before in warning.message


def test_fields_of_a_newer_prometheus_are_kept_for_a_current_thanos():
    # upstream generates without a version check: nothing beyond its reset list is dropped
    entry = _entry(_render("v0.42.0", {"messageVersion": "V2.0", "roundRobinDNS": True,
                                        "queueConfig": {"sampleAgeLimit": "1m"}}))
    assert entry["protobuf_message"] == "io.prometheus.write.v2.Request"
    assert entry["round_robin_dns"] is True and entry["queue_config"]["sample_age_limit"] == "1m"


def test_the_other_fields_stay_when_one_is_removed():
    entry = _entry(_render("v0.27.0", {"tlsConfig": {"minVersion": "TLS12", "insecureSkipVerify": True},
                                        "remoteTimeout": "10s"}))
    assert entry == {"url": "http://x", "remote_timeout": "10s", "tls_config": {"insecure_skip_verify": True}}


@pytest.mark.parametrize("version, refused", [("v0.23.9", True), ("v0.24.0", False)])
def test_remote_write_needs_thanos_0_24(version, refused):
    if refused:
        with pytest.raises(InvalidThanosRuler) as err:
            _render(version, {})
        (problem,) = err.value.problems
        assert problem.field == "spec.remoteWrite"
        assert "requires at least version 0.24.0: current version v0.23.9" in problem.message
    else:
        assert _entry(_render(version, {})) == {"url": "http://x"}


@pytest.mark.parametrize("version, client_id, refused", [
    ("v0.39.9", None, True), ("v0.39.9", "", True), ("v0.39.9", "id", False), ("v0.40.0", None, False)])
def test_azure_managed_identity_without_client_id_needs_thanos_0_40(version, client_id, refused):
    from promop.render.thanos.ruler_config import remote_write_problem
    from promop.render.thanos.versions import thanos_version

    managed = {} if client_id is None else {"clientId": client_id}
    spec = {"remoteWrite": [{"url": "http://x"}, {"url": "http://y", "azureAd": {"managedIdentity": managed}}]}
    problem = remote_write_problem(spec, thanos_version(version))
    if refused:
        assert problem.field == "spec.remoteWrite[1].azureAd.managedIdentity.clientId"
        assert problem.message == f"is required with Thanos < 0.40.0, current = {version}"
    else:
        assert problem is None


def _texts(result) -> str:
    return base64.b64decode(result.config_secret["data"]["remote-write.yaml"]).decode()


def test_two_authentication_methods_drop_that_remote_write_only():
    """sigv4 is rendered apart from the shared remote-write code, but the one-method rule still sees it."""
    result = _render("v0.42.0", {"sigv4": {"region": "eu"},
                                 "basicAuth": {"username": {"name": "s", "key": "k"}, "password": {"name": "s", "key": "k"}}})
    assert "http://x" not in _texts(result)
    assert any(p.field == "spec.remoteWrite[0]" and "mutually exclusive" in p.message for p in result.warnings)
    assert "http://x" in _texts(_render("v0.42.0", {"sigv4": {"region": "eu"}}))


def test_azure_ad_fields_thanos_cannot_read_are_dropped():
    """The CRD's key is azureAd: workloadIdentity and scope are never read by Thanos."""
    result = _render("v0.42.0", {"azureAd": {"cloud": "AzurePublic", "scope": "x",
                                             "managedIdentity": {"clientId": "00000000-0000-0000-0000-000000000000"}}})
    assert "scope" not in _entry(result)["azuread"]
    assert any(p.field == "spec.remoteWrite[0].azureAd.scope" for p in result.warnings)
