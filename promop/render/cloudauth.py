"""Cloud authentication: AWS SigV4 (remote write, Alertmanager endpoints) and Azure AD (remote write).

Keys and version gates as upstream's generator writes them (pkg/prometheus goldens
RemoteWriteConfig_3*, _v2.53.0/_v2.54.0, the AzureAD ones, AlertmanagerSigv4_*), and the
combinations upstream's validateRemoteWriteSpec refuses are rejected with a one-line reason
(the caller drops that one entry with a warning). Credentials are read from Secrets in the
Prometheus' namespace and inlined, as for basicAuth; the operator fetches them because
`accessKey`, `secretKey` and `clientSecret` are Secret reference keys of the render pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from promop.render.store import Reject, Scope

# Minimum Prometheus versions (upstream's WithMinimumVersion / validation gates).
REMOTE_WRITE_SIGV4_SINCE = "2.26.0"
ALERTMANAGER_SIGV4_SINCE = "2.48.0"
FIPS_STS_SINCE = "2.54.0"
EXTERNAL_ID_SINCE = "3.11.0"
AZURE_AD_SINCE = "2.45.0"
AZURE_OAUTH_SINCE = "2.48.0"
AZURE_SDK_SINCE = "2.52.0"
AZURE_SYSTEM_IDENTITY_SINCE = "3.5.0"  # managedIdentity without clientId
AZURE_WORKLOAD_IDENTITY_SINCE = "3.7.0"
AZURE_SCOPE_SINCE = "3.9.0"

AZURE_METHODS = ("managedIdentity", "oauth", "sdk", "workloadIdentity")

# The forms Go's github.com/google/uuid Parse accepts (upstream checks client and tenant IDs with it).
_HEX_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_UUID = re.compile(rf"(?:{_HEX_UUID}|\{{{_HEX_UUID}\}}|[uU][rR][nN]:[uU][uU][iI][dD]:{_HEX_UUID}|[0-9a-fA-F]{{32}})")


def is_uuid(value: Any) -> bool:
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


REMOTE_WRITE_METHODS = ("basicAuth", "oauth2", "authorization", "sigv4", "azureAd")
ALERTMANAGER_METHODS = ("basicAuth", "authorization", "sigv4")


def check_methods(src: Mapping[str, Any], field: str, methods: tuple[str, ...]) -> None:
    """At most one authentication method, as upstream's validation: a field counts once set, even
    empty (upstream's nil check); bearer tokens count when non-empty. Prometheus refuses the whole
    config for e.g. basic_auth with sigv4, so only this entry is dropped instead."""
    used = [m for m in methods if src.get(m) is not None]
    used += [m for m in ("bearerToken", "bearerTokenFile") if src.get(m)]
    if len(used) > 1:
        raise Reject(field, f"{' and '.join(used)} are mutually exclusive; keep only one authentication method")


def sigv4(scope: Scope, sig: Any, field: str) -> dict:
    """The `sigv4` block; a gated key is dropped with a warning, the block's own gate is the caller's."""
    if not isinstance(sig, Mapping):
        raise Reject(field, "must be a mapping (region, accessKey, secretKey, profile, roleArn, ...)")
    out: dict = {}
    if sig.get("region"):
        out["region"] = sig["region"]
    _access_keys(scope, sig, out, field)
    if sig.get("profile"):
        out["profile"] = sig["profile"]
    if sig.get("roleArn"):
        out["role_arn"] = sig["roleArn"]
    if sig.get("useFIPSSTSEndpoint") is not None:
        scope.put(out, "use_fips_sts_endpoint", bool(sig["useFIPSSTSEndpoint"]), FIPS_STS_SINCE,
                  f"{field}.useFIPSSTSEndpoint")
    if sig.get("externalId"):  # the CRD refuses it without roleArn
        scope.put(out, "external_id", sig["externalId"], EXTERNAL_ID_SINCE, f"{field}.externalId")
    return out


def _access_keys(scope: Scope, sig: Mapping[str, Any], out: dict, field: str) -> None:
    """access_key and secret_key come as a pair: Prometheus refuses one without the other."""
    has_access, has_secret = sig.get("accessKey") is not None, sig.get("secretKey") is not None
    if has_access != has_secret:
        missing = "secretKey" if has_access else "accessKey"
        raise Reject(f"{field}.{missing}", "accessKey and secretKey must be set together; set both or neither "
                                           "(the AWS credential chain is used when neither is set)")
    if not has_access:
        return
    access = scope.read("Secret", sig["accessKey"], f"{field}.accessKey")
    secret = scope.read("Secret", sig["secretKey"], f"{field}.secretKey")
    if access is None or secret is None:  # an optional reference that is missing: leave the pair out
        scope.warn(field, "an optional accessKey/secretKey is missing; the AWS credential chain is used instead")
        return
    out["access_key"] = access
    out["secret_key"] = secret


def azure_ad(scope: Scope, az: Any, field: str) -> dict:
    """The `azuread` block, after upstream's checks: exactly one method, each from its Prometheus version."""
    if not isinstance(az, Mapping):
        raise Reject(field, "must be a mapping (cloud and one of managedIdentity, oauth, sdk, workloadIdentity)")
    methods = [m for m in AZURE_METHODS if az.get(m) is not None]
    if not methods:
        raise Reject(field, "azureAd needs one of managedIdentity, oauth, sdk or workloadIdentity")
    if len(methods) > 1:
        raise Reject(field, f"{' and '.join(methods)} are mutually exclusive; set only one of "
                            "managedIdentity, oauth, sdk or workloadIdentity")
    method = methods[0]
    value = az[method]
    if not isinstance(value, Mapping):
        raise Reject(f"{field}.{method}", "must be a mapping")
    out: dict = {}
    if method == "managedIdentity":
        out["managed_identity"] = _managed_identity(scope, value, f"{field}.managedIdentity")
    elif method == "oauth":
        out["oauth"] = _oauth(scope, value, f"{field}.oauth")
    elif method == "sdk":
        _needs(scope, AZURE_SDK_SINCE, f"{field}.sdk", "Azure SDK authentication")
        out["sdk"] = {"tenant_id": value.get("tenantId") or ""}
    else:
        out["workload_identity"] = _workload_identity(scope, value, f"{field}.workloadIdentity")
    if az.get("cloud"):
        out["cloud"] = az["cloud"]
    if az.get("scope"):
        scope.put(out, "scope", az["scope"], AZURE_SCOPE_SINCE, f"{field}.scope")
    return out


def _needs(scope: Scope, minimum: str, field: str, what: str) -> None:
    if not scope.version.at_least(minimum):
        raise Reject(field, f"{what} needs Prometheus >= {minimum}, but spec.version is {scope.version}; "
                            "raise spec.version or use another method")


def _managed_identity(scope: Scope, mi: Mapping[str, Any], field: str) -> dict:
    client_id = mi.get("clientId") or ""
    if not client_id:
        _needs(scope, AZURE_SYSTEM_IDENTITY_SINCE, f"{field}.clientId",
               "a managed identity without clientId (system-assigned)")
    return {"client_id": client_id}


def _oauth(scope: Scope, o: Mapping[str, Any], field: str) -> dict:
    _needs(scope, AZURE_OAUTH_SINCE, field, "Azure OAuth authentication")
    if not is_uuid(o.get("clientId")):
        raise Reject(f"{field}.clientId", f"{o.get('clientId')!r} is not a UUID; set the application's client ID")
    if not o.get("tenantId"):
        raise Reject(f"{field}.tenantId", "oauth needs tenantId")
    if not o.get("clientSecret"):
        raise Reject(f"{field}.clientSecret", "oauth needs clientSecret (a Secret key)")
    secret = scope.read("Secret", o["clientSecret"], f"{field}.clientSecret")
    return {"client_id": o["clientId"], "client_secret": secret or "", "tenant_id": o["tenantId"]}


def _workload_identity(scope: Scope, wi: Mapping[str, Any], field: str) -> dict:
    _needs(scope, AZURE_WORKLOAD_IDENTITY_SINCE, field, "Azure workload identity")
    for key in ("clientId", "tenantId"):
        if not is_uuid(wi.get(key)):
            raise Reject(f"{field}.{key}", f"{wi.get(key)!r} is not a UUID")
    return {"client_id": wi["clientId"], "tenant_id": wi["tenantId"]}


def remote_write_cloud_auth(scope: Scope, rw: Mapping[str, Any], out: dict, field: str) -> None:
    """`sigv4` (from 2.26) and `azuread` (from 2.45) of one remote write; each gate warns and drops."""
    if rw.get("sigv4") is not None:
        scope.put(out, "sigv4", sigv4(scope, rw["sigv4"], f"{field}.sigv4"), REMOTE_WRITE_SIGV4_SINCE,
                  f"{field}.sigv4")
    if rw.get("azureAd") is not None:
        scope.put(out, "azuread", azure_ad(scope, rw["azureAd"], f"{field}.azureAd"), AZURE_AD_SINCE,
                  f"{field}.azureAd")


def alertmanager_sigv4(scope: Scope, am: Mapping[str, Any], out: dict, field: str) -> None:
    """`sigv4` of one Alertmanager endpoint, from Prometheus 2.48 (AlertmanagerSigv4_*.golden)."""
    if am.get("sigv4") is not None:
        scope.put(out, "sigv4", sigv4(scope, am["sigv4"], f"{field}.sigv4"), ALERTMANAGER_SIGV4_SINCE,
                  f"{field}.sigv4")
