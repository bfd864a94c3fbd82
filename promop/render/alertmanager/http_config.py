"""CRD `httpConfig` / `tlsConfig` -> Alertmanager `http_config` / `tls_config`.

Credentials are read from Secrets in the object's namespace and written in
clear text into the generated config Secret, as upstream does. CA, certificate
and key files are never inlined: they go into the tls-assets Secrets and the
config points at /etc/alertmanager/certs/<src>_<ns>_<name>_<key>.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from promop.render.alertmanager.common import AMScope, Reject

TLS_VERSIONS = ("TLS10", "TLS11", "TLS12", "TLS13")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2}).{0,2}")  # Go's url.Parse: "%" must start a %XX escape


def valid_url(value: Any, field: str) -> str:
    """An absolute http(s) URL, as Alertmanager's config.URL requires."""
    if not isinstance(value, str):
        raise Reject(field, f"{value!r} is not a URL")
    bad_escape = _BAD_ESCAPE.search(value)
    if bad_escape or any(ord(c) < 0x20 or ord(c) == 0x7f for c in value):
        what = f"invalid URL escape {bad_escape.group(0)!r}" if bad_escape else "a control character"
        raise Reject(field, f"{value!r} is not a valid URL ({what}, as Go's url.Parse refuses)")
    parsed = urlparse(value.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise Reject(field, f"{value!r} is not a valid URL; use an absolute http:// or https:// URL")
    return value


def url_or_template(value: Any, field: str) -> str:
    """A URL, or a Go template that produces one at notification time."""
    if isinstance(value, str) and "{{" in value:
        return value
    return valid_url(value, field)


def _check_pem(value: str, label: str, field: str) -> None:
    if "-----BEGIN " not in value or label not in value:
        raise Reject(field, f"does not hold a PEM {label.lower()}; Alertmanager would fail to load it")


def tls_config(scope: AMScope, tls: Any, field: str, register: bool = True, check_pem: bool = True) -> dict:
    """A SafeTLSConfig -> tls_config (insecure_skip_verify is always printed, as upstream's struct does)."""
    if not isinstance(tls, Mapping):
        raise Reject(field, "must be a mapping")
    out: dict = {}
    values: dict[str, str | None] = {}
    for ref_field, out_key in (("ca", "ca_file"), ("cert", "cert_file")):
        if tls.get(ref_field):
            kind, name, key, value = scope.read_secret_or_configmap(tls[ref_field], f"{field}.{ref_field}")
            if value is not None and check_pem:
                _check_pem(value, "CERTIFICATE", f"{field}.{ref_field}")
            out[out_key] = scope.asset(kind, name, key, value, register)
            values[ref_field] = value
    if tls.get("keySecret"):
        value = scope.read("Secret", tls["keySecret"], f"{field}.keySecret")
        if value is not None and check_pem:
            _check_pem(value, "PRIVATE KEY", f"{field}.keySecret")
        out["key_file"] = scope.asset("Secret", tls["keySecret"].get("name") or "", str(tls["keySecret"]["key"]), value, register)
        values["keySecret"] = value
    if ("cert_file" in out) != ("key_file" in out):
        raise Reject(field, "a client certificate needs both cert and keySecret")
    if check_pem and values.get("cert") is not None and values.get("keySecret") is not None:
        from promop.render.alertmanager.webtls import check_pair

        check_pair(values["cert"], values["keySecret"], field)
    if tls.get("serverName"):
        out["server_name"] = tls["serverName"]
    out["insecure_skip_verify"] = bool(tls.get("insecureSkipVerify"))
    for crd_key, out_key in (("minVersion", "min_version"), ("maxVersion", "max_version")):
        if tls.get(crd_key):
            if tls[crd_key] not in TLS_VERSIONS:
                raise Reject(f"{field}.{crd_key}", f"{tls[crd_key]!r} is not a TLS version; use one of {', '.join(TLS_VERSIONS)}")
            out[out_key] = tls[crd_key]
    if "min_version" in out and "max_version" in out and out["min_version"] > out["max_version"]:
        raise Reject(field, f"minVersion {out['min_version']} is above maxVersion {out['max_version']}")
    return out


def _proxy(scope: AMScope, cfg: Mapping[str, Any], field: str, out: dict) -> None:
    url = cfg.get("proxyURL") or cfg.get("proxyUrl")
    if url:
        out["proxy_url"] = valid_url(url, f"{field}.proxyUrl")
    if cfg.get("noProxy"):
        out["no_proxy"] = cfg["noProxy"]
    if cfg.get("proxyFromEnvironment"):
        out["proxy_from_environment"] = True
    headers = cfg.get("proxyConnectHeader")
    if headers:
        if not isinstance(headers, Mapping):
            raise Reject(f"{field}.proxyConnectHeader", "must map header names to lists of Secret key references")
        out["proxy_connect_header"] = {
            name: [scope.secret(ref, f"{field}.proxyConnectHeader.{name}[{i}]") for i, ref in enumerate(refs or [])]
            for name, refs in headers.items()
        }
    if out.get("proxy_from_environment") and out.get("proxy_url"):
        raise Reject(field, "set proxyUrl or proxyFromEnvironment, not both")
    if out.get("no_proxy") and not out.get("proxy_url"):
        raise Reject(f"{field}.noProxy", "noProxy needs proxyUrl")
    if out.get("proxy_connect_header") and not (out.get("proxy_url") or out.get("proxy_from_environment")):
        raise Reject(f"{field}.proxyConnectHeader", "proxyConnectHeader needs proxyUrl or proxyFromEnvironment")


def http_config(scope: AMScope, cfg: Any, field: str, amc_gates: bool = True, register_tls: bool = True) -> dict:
    """A CRD HTTPConfig -> http_config. `amc_gates`: reject fields the Alertmanager version lacks
    (an AlertmanagerConfig's receivers); the global config leaves that to sanitize, which drops them."""
    if not isinstance(cfg, Mapping):
        raise Reject(field, "must be a mapping")
    auths = [k for k in ("basicAuth", "oauth2", "bearerTokenSecret", "authorization") if cfg.get(k)]
    if len(auths) > 1:
        raise Reject(field, f"at most one of basicAuth, oauth2, bearerTokenSecret, authorization may be set; found {', '.join(auths)}")
    version = scope.version
    if amc_gates:
        for key, minimum in (("authorization", "0.22.0"), ("oauth2", "0.22.0"), ("noProxy", "0.25.0"),
                             ("proxyFromEnvironment", "0.25.0"), ("proxyConnectHeader", "0.25.0")):
            if cfg.get(key) and not version.at_least(minimum):
                raise Reject(f"{field}.{key}", f"needs Alertmanager >= v{minimum}, but spec.version is {version}")
    out: dict = {}
    auth = cfg.get("authorization")
    if auth:
        kind = auth.get("type") or "Bearer"
        if str(kind).lower() == "basic":
            raise Reject(f"{field}.authorization.type", "type Basic is not allowed here; use basicAuth")
        credentials = scope.secret(auth["credentials"], f"{field}.authorization.credentials") if auth.get("credentials") else ""
        if credentials:
            out["authorization"] = {"type": kind, "credentials": credentials}
    basic = cfg.get("basicAuth")
    if basic:
        user = scope.secret(basic["username"], f"{field}.basicAuth.username") if basic.get("username") else ""
        password = scope.secret(basic["password"], f"{field}.basicAuth.password") if basic.get("password") else ""
        if user or password:
            out["basic_auth"] = {k: v for k, v in (("username", user), ("password", password)) if v}
    oauth2 = cfg.get("oauth2")
    if oauth2:
        f = f"{field}.oauth2"
        if not oauth2.get("clientId") or not oauth2.get("clientSecret") or not oauth2.get("tokenUrl"):
            raise Reject(f, "oauth2 needs clientId, clientSecret and tokenUrl")
        o = {
            "client_id": scope.secret_or_configmap(oauth2["clientId"], f"{f}.clientId"),
            "client_secret": scope.secret(oauth2["clientSecret"], f"{f}.clientSecret"),
        }
        if oauth2.get("scopes"):
            o["scopes"] = list(oauth2["scopes"])
        o["token_url"] = valid_url(oauth2["tokenUrl"], f"{f}.tokenUrl")
        if oauth2.get("endpointParams"):
            o["endpoint_params"] = dict(oauth2["endpointParams"])
        _proxy(scope, oauth2, f, o)
        out["oauth2"] = o
    if cfg.get("bearerTokenSecret"):
        out["bearer_token"] = scope.secret(cfg["bearerTokenSecret"], f"{field}.bearerTokenSecret")
    if cfg.get("tlsConfig"):
        out["tls_config"] = tls_config(scope, cfg["tlsConfig"], f"{field}.tlsConfig", register_tls)
    if cfg.get("followRedirects") is not None:
        out["follow_redirects"] = bool(cfg["followRedirects"])
    if cfg.get("enableHttp2") is not None:
        out["enable_http2"] = bool(cfg["enableHttp2"])
    _proxy(scope, cfg, field, out)
    return out
