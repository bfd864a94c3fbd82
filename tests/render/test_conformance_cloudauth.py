"""Cloud authentication (promop/render/cloudauth.py): remote write `sigv4`/`azureAd` and Alertmanager
`sigv4`, against upstream's goldens (read from ../shared), upstream's validateRemoteWriteSpec cases
(operator_test.go TestValidateRemoteWriteConfig, transcribed), every version gate at its boundary,
missing Secret keys, and the references the operator fetches."""

from __future__ import annotations

import copy

import pytest
import yaml

from promop.render import ObjectRef, RenderInputs, RenderOptions, generate_config, references
from promop.render.cloudauth import is_uuid
from promop.render.schema_check import InvalidPrometheus

from .helpers import TESTDATA, run_promtool, without_kubernetes_sd
from .test_conformance_probe import golden_dir, render_case

CASES = yaml.safe_load((TESTDATA / "conformance_cloudauth" / "cases.yaml").read_text())["cases"]
MORE = yaml.safe_load((TESTDATA / "conformance_more" / "cases.yaml").read_text())["cases"]

SIGV4_SECRET = {"metadata": {"name": "sigv4-secret", "namespace": "default"},
                "stringData": {"access-key": "AKIA-test", "secret-key": "s3cr3t"}}
AZURE_SECRET = {"metadata": {"name": "azure-oauth-secret", "namespace": "default"},
                "stringData": {"secret-key": "azure-s3cr3t"}}
UUID_A = "00000000-a12b-3cd4-e56f-000000000000"
UUID_B = "11111111-a12b-3cd4-e56f-000000000000"
KEYS = {"accessKey": {"name": "sigv4-secret", "key": "access-key"},
        "secretKey": {"name": "sigv4-secret", "key": "secret-key"}}
OAUTH = {"clientId": UUID_A, "tenantId": UUID_B, "clientSecret": {"name": "azure-oauth-secret", "key": "secret-key"}}


def render(spec: dict, version: str = "v3.13.2", secrets=(SIGV4_SECRET, AZURE_SECRET)):
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "test", "namespace": "default"}, "spec": {"version": version, **copy.deepcopy(spec)}}
    keyed = {(s["metadata"]["namespace"], s["metadata"]["name"]): {"kind": "Secret", **copy.deepcopy(s)}
             for s in secrets}
    return generate_config(prom, [], [], secrets=keyed, configmaps={}, options=RenderOptions())


def remote_write(rw: dict, version: str = "v3.13.2", **kw):
    """(the rendered remote_write entries, {warning field: message})."""
    result = render({"remoteWrite": [{"url": "http://example.com", **rw}]}, version, **kw)
    return result.config.get("remote_write") or [], {w.field: w.message for w in result.warnings}


def alertmanagers(am: dict, version: str = "v3.13.2", **kw):
    spec = {"alerting": {"alertmanagers": [{"name": "alertmanager-main", "namespace": "default", "port": "web", **am}]}}
    result = render(spec, version, **kw)
    return result.config["alerting"]["alertmanagers"], {w.field: w.message for w in result.warnings}


# ---- upstream goldens ----------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c["golden"] for c in CASES])
def test_alertmanager_sigv4_goldens(case):
    expected = yaml.safe_load((golden_dir() / case["golden"]).read_text())
    result = render_case(case)
    assert result.rejected == []
    assert yaml.safe_load(result.text) == expected
    if case.get("warning_field"):  # a gated field is dropped with a warning naming it
        assert case["warning_field"] in [w.field for w in result.warnings]


def test_every_cloud_auth_golden_is_translated_and_matches():
    """Each upstream golden with sigv4 or azuread is a case here or in conformance_more, none marked
    `differs` (so test_conformance_more compares them all)."""
    d = golden_dir()
    with_cloud = {p.name for p in d.glob("*.golden") if "sigv4:" in p.read_text() or "azuread:" in p.read_text()}
    by_name = {c["golden"]: c for c in MORE + CASES}
    assert len(with_cloud) >= 13
    assert with_cloud <= set(by_name)
    assert [g for g in sorted(with_cloud) if by_name[g].get("differs")] == []
    # the AzureADScope_v3.8.0 and AlertmanagerSigv4_Invalid goldens show the gates drop, not keep
    assert {"RemoteWriteConfig_AzureADScope_v3.8.0.golden", "AlertmanagerSigv4_Invalid_Prom_Version.golden",
            "RemoteWriteConfig_3.10.0.golden", "RemoteWriteConfig_v2.53.0.golden"} <= set(by_name)


# ---- upstream's validateRemoteWriteSpec (operator_test.go), transcribed --------------------------
# Upstream's `OAuth2{}`/`BasicAuth{}` are empty structs; here they are complete (the CRD requires
# their fields, so promop refuses an empty one as a schema error before this check). `clientId: ""`
# is written as no clientId for the same reason (the CRD's minLength).
BASIC = {"username": {"name": "sigv4-secret", "key": "access-key"}}
OAUTH2 = {"clientId": {"secret": {"name": "sigv4-secret", "key": "access-key"}},
          "clientSecret": {"name": "sigv4-secret", "key": "secret-key"}, "tokenUrl": "http://token"}
GOV = {"cloud": "AzureGovernment"}
UPSTREAM_VALIDATION = [
    ("with_OAuth2", {"oauth2": OAUTH2}, "", False),
    ("with_SigV4", {"sigv4": {}}, "", False),
    ("with_OAuth2_and_SigV4", {"oauth2": OAUTH2, "sigv4": {}}, "", True),
    ("with_OAuth2_and_BasicAuth", {"oauth2": OAUTH2, "basicAuth": BASIC}, "", True),
    ("with_BasicAuth_and_SigV4", {"basicAuth": BASIC, "sigv4": {}}, "", True),
    ("with_BasicAuth_and_SigV4_and_OAuth2", {"basicAuth": BASIC, "sigv4": {}, "oauth2": OAUTH2}, "", True),
    ("with_no_azure_managed_identity_and_no_azure_oAuth_and_no_azure_sdk", {"azureAd": GOV}, "", True),
    ("with_azure_managed_identity_and_azure_oAuth",
     {"azureAd": {**GOV, "managedIdentity": {"clientId": "client-id"}, "oauth": OAUTH}}, "", True),
    ("with_azure_managed_identity_and_azure_sdk",
     {"azureAd": {**GOV, "managedIdentity": {"clientId": "client-id"}, "sdk": {"tenantId": UUID_A}}}, "", True),
    ("with_azure_managed_identity_empty_client_id", {"azureAd": {**GOV, "managedIdentity": {}}}, "3.4.0", True),
    ("with_azure_managed_identity_empty_client_id_v3.5.0", {"azureAd": {**GOV, "managedIdentity": {}}}, "3.5.0", False),
    ("with_azure_sdk_and_azure_oAuth", {"azureAd": {**GOV, "sdk": {"tenantId": UUID_A}, "oauth": OAUTH}}, "", True),
    ("with_invalid_azure_oAuth_clientID", {"azureAd": {**GOV, "oauth": {**OAUTH, "clientId": "invalid"}}}, "", True),
    ("rw_azuread_with_workload_identity",
     {"azureAd": {**GOV, "workloadIdentity": {"clientId": UUID_A, "tenantId": UUID_B}}}, "", False),
    ("with_invalid_workload_identity_clientID",
     {"azureAd": {**GOV, "workloadIdentity": {"clientId": "invalid-uuid", "tenantId": UUID_B}}}, "", True),
    ("with_invalid_workload_identity_tenantID",
     {"azureAd": {**GOV, "workloadIdentity": {"clientId": UUID_A, "tenantId": "invalid-uuid"}}}, "", True),
    ("with_workload_identity_and_managed_identity",
     {"azureAd": {**GOV, "managedIdentity": {"clientId": UUID_A},
                  "workloadIdentity": {"clientId": UUID_A, "tenantId": UUID_B}}}, "", True),
    ("with_workload_identity_and_oauth",
     {"azureAd": {**GOV, "oauth": OAUTH, "workloadIdentity": {"clientId": UUID_A, "tenantId": UUID_B}}}, "", True),
    ("with_workload_identity_and_sdk",
     {"azureAd": {**GOV, "sdk": {"tenantId": UUID_A},
                  "workloadIdentity": {"clientId": UUID_A, "tenantId": UUID_B}}}, "", True),
    ("with_workload_identity_unsupported_version",
     {"azureAd": {**GOV, "workloadIdentity": {"clientId": UUID_A, "tenantId": UUID_B}}}, "v3.6.0", True),
    ("with_oauth_unsupported_version", {"azureAd": {**GOV, "oauth": OAUTH}}, "v2.47.0", True),
    ("with_sdk_unsupported_version", {"azureAd": {**GOV, "sdk": {"tenantId": UUID_A}}}, "v2.51.0", True),
]


@pytest.mark.parametrize("rw,version,rejected", [c[1:] for c in UPSTREAM_VALIDATION],
                         ids=[c[0] for c in UPSTREAM_VALIDATION])
def test_upstream_remote_write_validation(rw, version, rejected):
    entries, warnings = remote_write(rw, version or "v3.13.2")
    if rejected:  # only this entry is dropped, with one line saying why
        assert entries == []
        assert len(warnings) == 1
        [(field, message)] = warnings.items()
        assert field.startswith("spec.remoteWrite[0]") and "\n" not in message
        assert message.endswith("; this remote write is ignored")
    else:
        assert len(entries) == 1 and warnings == {}


def test_one_bad_remote_write_does_not_drop_the_others():
    result = render({"remoteWrite": [
        {"url": "http://a", "sigv4": {}, "azureAd": {**GOV, "sdk": {}}},
        {"url": "http://b", "sigv4": {"region": "eu-west-1"}}]})
    assert result.config["remote_write"] == [{"url": "http://b", "sigv4": {"region": "eu-west-1"}}]
    assert [w.field for w in result.warnings] == ["spec.remoteWrite[0]"]
    assert "sigv4 and azureAd are mutually exclusive" in result.warnings[0].message


def test_conflict_message_names_every_method():
    _, warnings = remote_write({"basicAuth": BASIC, "sigv4": {}, "oauth2": OAUTH2})
    assert warnings["spec.remoteWrite[0]"].startswith("basicAuth and oauth2 and sigv4 are mutually exclusive")


@pytest.mark.parametrize("other", [{"bearerTokenFile": "/t"}, {"bearerToken": "t"},
                                   {"authorization": {"credentials": {"name": "sigv4-secret", "key": "secret-key"}}}])
def test_sigv4_with_a_token_is_refused(other):
    """Prometheus turns bearer tokens into authorization, which it refuses beside sigv4/azuread."""
    entries, warnings = remote_write({"sigv4": {"region": "r"}, **other})
    assert entries == [] and "mutually exclusive" in warnings["spec.remoteWrite[0]"]


def test_azure_methods_conflict_message():
    _, warnings = remote_write({"azureAd": {**GOV, "managedIdentity": {"clientId": UUID_A}, "sdk": {}}})
    assert warnings["spec.remoteWrite[0].azureAd"].startswith("managedIdentity and sdk are mutually exclusive")


# ---- version gates, each at its boundary --------------------------------------------------------

SIGV4_FULL = {"region": "us-central-0", **KEYS, "profile": "p", "roleArn": "arn:r", "externalId": "abc",
              "useFIPSSTSEndpoint": True}


@pytest.mark.parametrize("below,at,key", [
    ("v2.53.1", "v2.54.0", "use_fips_sts_endpoint"),
    ("v3.10.9", "v3.11.0", "external_id"),
    ("v3.11.0-rc.0", "v3.11.0", "external_id"),  # a pre-release sorts before its release
])
def test_sigv4_key_gates(below, at, key):
    [old], warnings = remote_write({"sigv4": SIGV4_FULL}, below)
    [new], _ = remote_write({"sigv4": SIGV4_FULL}, at)
    assert key not in old["sigv4"] and key in new["sigv4"]
    crd_key = {"use_fips_sts_endpoint": "useFIPSSTSEndpoint", "external_id": "externalId"}[key]
    assert f"ignored: {key} needs Prometheus >= " in warnings[f"spec.remoteWrite[0].sigv4.{crd_key}"]
    assert new["sigv4"]["access_key"] == "AKIA-test" and new["sigv4"]["secret_key"] == "s3cr3t"


def test_use_fips_false_is_written():
    """upstream writes the pointer's value, false included."""
    [entry], _ = remote_write({"sigv4": {"useFIPSSTSEndpoint": False}})
    assert entry["sigv4"] == {"use_fips_sts_endpoint": False}


def test_remote_write_sigv4_gate_2_26():
    [old], warnings = remote_write({"sigv4": {"region": "r"}}, "v2.25.2")
    [new], _ = remote_write({"sigv4": {"region": "r"}}, "v2.26.0")
    assert "sigv4" not in old and new["sigv4"] == {"region": "r"}
    assert "needs Prometheus >= 2.26.0" in warnings["spec.remoteWrite[0].sigv4"]


def test_alertmanager_sigv4_gate_2_48():
    [old], warnings = alertmanagers({"sigv4": {"region": "r"}}, "v2.47.2")
    [new], _ = alertmanagers({"sigv4": {"region": "r"}}, "v2.48.0")
    assert "sigv4" not in old and new["sigv4"] == {"region": "r"}
    assert "needs Prometheus >= 2.48.0" in warnings["spec.alerting.alertmanagers[0].sigv4"]


def test_azuread_gate_2_45():
    az = {"azureAd": {**GOV, "managedIdentity": {"clientId": UUID_A}}}
    [old], warnings = remote_write(az, "v2.44.1")
    [new], _ = remote_write(az, "v2.45.0")
    assert "azuread" not in old
    assert new["azuread"] == {"managed_identity": {"client_id": UUID_A}, "cloud": "AzureGovernment"}
    assert "needs Prometheus >= 2.45.0" in warnings["spec.remoteWrite[0].azureAd"]


@pytest.mark.parametrize("method,value,below,at,out_key", [
    ("oauth", OAUTH, "v2.47.9", "v2.48.0", "oauth"),
    ("sdk", {"tenantId": UUID_A}, "v2.51.9", "v2.52.0", "sdk"),
    ("workloadIdentity", {"clientId": UUID_A, "tenantId": UUID_B}, "v3.6.9", "v3.7.0", "workload_identity"),
    ("workloadIdentity", {"clientId": UUID_A, "tenantId": UUID_B}, "v3.7.0-rc.1", "v3.7.0", "workload_identity"),
    ("managedIdentity", {}, "v3.4.9", "v3.5.0", "managed_identity"),
])
def test_azure_method_gates_reject_below(method, value, below, at, out_key):
    """Below its version an Azure method is an error upstream (the entry is dropped), not a silent drop."""
    az = {"azureAd": {"cloud": "AzurePublic", method: value}}
    old, warnings = remote_write(az, below)
    [new], new_warnings = remote_write(az, at)
    assert old == [] and len(warnings) == 1
    assert "needs Prometheus >= " + at.lstrip("v").split("-")[0] in next(iter(warnings.values()))
    assert out_key in new["azuread"] and new_warnings == {}


def test_azure_outputs():
    [oauth], _ = remote_write({"azureAd": {**GOV, "oauth": OAUTH}})
    assert oauth["azuread"] == {"oauth": {"client_id": UUID_A, "client_secret": "azure-s3cr3t", "tenant_id": UUID_B},
                                "cloud": "AzureGovernment"}
    [system], _ = remote_write({"azureAd": {"managedIdentity": {}}}, "v3.5.0")
    assert system["azuread"] == {"managed_identity": {"client_id": ""}}


def test_azure_scope_gate_3_9():
    az = {"azureAd": {"cloud": "AzurePublic", "managedIdentity": {"clientId": UUID_A}, "scope": "https://s/.default"}}
    [old], warnings = remote_write(az, "v3.8.9")
    [new], _ = remote_write(az, "v3.9.0")
    assert "scope" not in old["azuread"] and new["azuread"]["scope"] == "https://s/.default"
    assert "needs Prometheus >= 3.9.0" in warnings["spec.remoteWrite[0].azureAd.scope"]


# ---- Secrets ---------------------------------------------------------------------------------

@pytest.mark.parametrize("rw,field", [
    ({"sigv4": {"accessKey": {"name": "sigv4-secret", "key": "nope"}, "secretKey": KEYS["secretKey"]}},
     "spec.remoteWrite[0].sigv4.accessKey"),
    ({"sigv4": {"accessKey": KEYS["accessKey"], "secretKey": {"name": "gone", "key": "secret-key"}}},
     "spec.remoteWrite[0].sigv4.secretKey"),
    ({"azureAd": {**GOV, "oauth": {**OAUTH, "clientSecret": {"name": "azure-oauth-secret", "key": "nope"}}}},
     "spec.remoteWrite[0].azureAd.oauth.clientSecret"),
])
def test_a_missing_secret_key_drops_the_remote_write(rw, field):
    """Upstream fails to load the key; promop drops this entry (not the others) and names the reference."""
    result = render({"remoteWrite": [{"url": "http://a", **rw}, {"url": "http://b"}]})
    assert result.config["remote_write"] == [{"url": "http://b"}]
    [warning] = result.warnings
    assert warning.field == field and "not found" in warning.message


def test_a_missing_secret_key_drops_the_alertmanager_endpoint():
    ams, warnings = alertmanagers({"sigv4": {**KEYS, "secretKey": {"name": "sigv4-secret", "key": "nope"}}})
    assert ams == []
    message = warnings["spec.alerting.alertmanagers[0].sigv4.secretKey"]
    assert "key 'nope' not found in Secret default/sigv4-secret" in message


def test_an_optional_missing_key_falls_back_to_the_credential_chain():
    optional = {"name": "sigv4-secret", "key": "nope", "optional": True}
    [entry], warnings = remote_write({"sigv4": {"region": "r", **KEYS, "secretKey": optional}})
    assert entry["sigv4"] == {"region": "r"}
    assert "credential chain" in warnings["spec.remoteWrite[0].sigv4"]


@pytest.mark.parametrize("half", ["accessKey", "secretKey"])
def test_half_a_key_pair_is_refused(half):
    """Prometheus refuses access_key without secret_key (and the reverse)."""
    entries, warnings = remote_write({"sigv4": {half: KEYS[half]}})
    missing = "secretKey" if half == "accessKey" else "accessKey"
    assert entries == [] and f"spec.remoteWrite[0].sigv4.{missing}" in warnings


def test_external_id_needs_role_arn():
    """The CRD's rule (checked before rendering) refuses the Prometheus, as an apiserver would."""
    with pytest.raises(InvalidPrometheus, match="externalId can only be used when roleArn is specified"):
        remote_write({"sigv4": {"externalId": "abc"}})


@pytest.mark.parametrize("other", [{"basicAuth": BASIC}, {"bearerTokenFile": "/t"},
                                   {"authorization": {"credentials": {"name": "sigv4-secret", "key": "secret-key"}}}])
def test_alertmanager_sigv4_is_exclusive(other):
    ams, warnings = alertmanagers({"sigv4": {}, **other})
    assert ams == [] and "mutually exclusive" in warnings["spec.alerting.alertmanagers[0]"]


def test_the_operator_fetches_the_referenced_secrets():
    """references() is what the operator reads before rendering (promop/operator/sync.py)."""
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"remoteWrite": [
                {"url": "http://a", "sigv4": {"accessKey": {"name": "ak", "key": "a"},
                                              "secretKey": {"name": "sk", "key": "s"}}},
                {"url": "http://b", "azureAd": {"oauth": {**OAUTH, "clientSecret": {"name": "az", "key": "c"}}}}],
                "alerting": {"alertmanagers": [{"name": "am", "port": "web", "sigv4": {
                    "accessKey": {"name": "am-ak", "key": "a"}, "secretKey": {"name": "am-sk", "key": "s"}}}]}}}
    refs = references(RenderInputs(prometheus=prom))
    assert {ObjectRef("Secret", "ns", n) for n in ("ak", "sk", "az", "am-ak", "am-sk")} <= refs


# ---- UUIDs as Go's google/uuid Parse takes them ------------------------------------------------

@pytest.mark.parametrize("value,ok", [
    (UUID_A, True), (UUID_A.upper(), True), ("{" + UUID_A + "}", True), ("urn:uuid:" + UUID_A, True),
    (UUID_A.replace("-", ""), True), ("invalid", False), ("", False), (None, False),
    (UUID_A[:-1], False), (UUID_A + "0", False), ("0000000-0a12b-3cd4-e56f-000000000000", False),
    (UUID_A.replace("0", "g", 1), False), ("{" + UUID_A, False), (" " + UUID_A, False),
])
def test_uuid_forms(value, ok):
    assert is_uuid(value) is ok


# ---- real Prometheus ------------------------------------------------------------------------

def test_promtool_accepts_sigv4(tmp_path):
    """Debian's promtool (2.42) checks a rendered remote write with sigv4 and credentials."""
    result = render({"remoteWrite": [{"url": "http://example.com", "sigv4": {
        "region": "us-central-0", **KEYS, "profile": "p", "roleArn": "arn:aws:iam::1:role/r",
        "useFIPSSTSEndpoint": True}}]}, "v2.42.0")
    assert result.config["remote_write"][0]["sigv4"]["access_key"] == "AKIA-test"
    path = tmp_path / "prometheus.yaml"
    path.write_text(without_kubernetes_sd(result.text))
    checked = run_promtool("check", "config", "--syntax-only", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
