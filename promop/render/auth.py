"""HTTP authentication for scrape, remote-write and API-server configs.

Credentials come only from Secrets in the namespace of the object that names
them, and are inlined as upstream does. At most one method may be set per
endpoint, or Prometheus refuses the whole config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.store import Reject, Scope
from promop.render.tls_assets import tls_config

# CRD field -> what users call it, in the order we report conflicts.
AUTH_FIELDS = ("authorization", "basicAuth", "oauth2", "bearerTokenSecret", "bearerTokenFile")


def set_auth_fields(ep: Mapping[str, Any]) -> list[str]:
    """Which authentication methods an endpoint sets (empty bearerTokenSecret names don't count)."""
    out = []
    for f in AUTH_FIELDS:
        v = ep.get(f)
        if f == "bearerTokenSecret":
            if isinstance(v, Mapping) and v.get("name"):
                out.append(f)
        elif v:
            out.append(f)
    return out


def check_exclusive(ep: Mapping[str, Any], field: str) -> None:
    used = set_auth_fields(ep)
    if len(used) > 1:
        raise Reject(field, f"{' and '.join(used)} are mutually exclusive; keep only one authentication method")


def basic_auth(scope: Scope, ba: Mapping[str, Any], field: str) -> dict:
    if not isinstance(ba, Mapping):
        raise Reject(field, "must be a mapping with username and password")
    out = {}
    if ba.get("username"):
        out["username"] = scope.read("Secret", ba["username"], f"{field}.username") or ""
    if ba.get("password"):
        out["password"] = scope.read("Secret", ba["password"], f"{field}.password") or ""
    if ba.get("passwordFile"):
        out["password_file"] = ba["passwordFile"]
    return out


def authorization(scope: Scope, authz: Mapping[str, Any], field: str, files_allowed: bool = True) -> dict:
    if not isinstance(authz, Mapping):
        raise Reject(field, "must be a mapping with type and credentials")
    typ = str(authz.get("type") or "Bearer").strip()
    if typ.lower() == "basic":
        raise Reject(f"{field}.type", 'type "Basic" is not allowed here; use basicAuth instead')
    out: dict = {"type": typ}
    if authz.get("credentials"):
        out["credentials"] = scope.read("Secret", authz["credentials"], f"{field}.credentials") or ""
    elif authz.get("credentialsFile") and files_allowed:
        out["credentials_file"] = authz["credentialsFile"]
    else:
        raise Reject(f"{field}.credentials", "authorization needs credentials (a Secret key)")
    return out


def bearer_token(scope: Scope, sel: Mapping[str, Any], field: str) -> str:
    return scope.read("Secret", sel, field) or ""


def oauth2(scope: Scope, o: Mapping[str, Any], field: str) -> dict:
    if not isinstance(o, Mapping):
        raise Reject(field, "must be a mapping with clientId, clientSecret and tokenUrl")
    if not o.get("clientId") or not o.get("clientSecret") or not o.get("tokenUrl"):
        raise Reject(field, "oauth2 needs clientId, clientSecret and tokenUrl")
    _, _, _, client_id = scope.read_secret_or_configmap(o["clientId"], f"{field}.clientId")
    out: dict = {
        "client_id": client_id or "",
        "client_secret": scope.read("Secret", o["clientSecret"], f"{field}.clientSecret") or "",
        "token_url": o["tokenUrl"],
    }
    if o.get("scopes"):
        out["scopes"] = list(o["scopes"])
    if o.get("endpointParams"):
        out["endpoint_params"] = dict(o["endpointParams"])
    if o.get("tlsConfig"):
        scope.put(out, "tls_config", tls_config(scope, o["tlsConfig"], f"{field}.tlsConfig", files_allowed=False), "2.43.0", f"{field}.tlsConfig")
    proxy(scope, o, out, field)
    return out


def proxy(scope: Scope, src: Mapping[str, Any], out: dict, field: str) -> None:
    """proxy_url, no_proxy, proxy_from_environment, proxy_connect_header (secret values inlined)."""
    if src.get("proxyUrl"):
        out["proxy_url"] = src["proxyUrl"]
    if src.get("noProxy"):
        scope.put(out, "no_proxy", src["noProxy"], "2.43.0", f"{field}.noProxy")
    if src.get("proxyFromEnvironment") is not None:
        scope.put(out, "proxy_from_environment", bool(src["proxyFromEnvironment"]), "2.43.0", f"{field}.proxyFromEnvironment")
    headers = src.get("proxyConnectHeader")
    if headers:
        values = {
            name: [scope.read("Secret", sel, f"{field}.proxyConnectHeader.{name}[{i}]") or "" for i, sel in enumerate(sels or ())]
            for name, sels in sorted(headers.items())
        }
        scope.put(out, "proxy_connect_header", values, "2.43.0", f"{field}.proxyConnectHeader")
    if out.get("proxy_from_environment") and ("proxy_url" in out or "no_proxy" in out):
        raise Reject(field, "proxyFromEnvironment cannot be combined with proxyUrl or noProxy")
    if "no_proxy" in out and "proxy_url" not in out:
        raise Reject(f"{field}.noProxy", "noProxy needs proxyUrl")
    if "proxy_connect_header" in out and not ("proxy_url" in out or out.get("proxy_from_environment")):
        raise Reject(f"{field}.proxyConnectHeader", "proxyConnectHeader needs proxyUrl or proxyFromEnvironment")


def credentials(
    scope: Scope, ep: Mapping[str, Any], out: dict, field: str, class_authz: Mapping[str, Any] | None = None
) -> None:
    """bearer_token_file, bearer_token, basic_auth and authorization, in upstream's order.

    A scrape class's authorization applies only when the endpoint sets no
    authentication of its own.
    """
    check_exclusive(ep, field)
    if ep.get("bearerTokenFile"):
        out["bearer_token_file"] = ep["bearerTokenFile"]
    bts = ep.get("bearerTokenSecret")
    if isinstance(bts, Mapping) and bts.get("name"):
        out["bearer_token"] = bearer_token(scope, bts, f"{field}.bearerTokenSecret")
    if ep.get("basicAuth"):
        out["basic_auth"] = basic_auth(scope, ep["basicAuth"], f"{field}.basicAuth")
    if ep.get("authorization"):
        out["authorization"] = authorization(scope, ep["authorization"], f"{field}.authorization")
    elif class_authz and not set_auth_fields(ep):
        out["authorization"] = authorization(scope, class_authz, "scrapeClass.authorization")
