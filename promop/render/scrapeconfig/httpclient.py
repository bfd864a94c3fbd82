"""The HTTP client options a ScrapeConfig and most of its service discoveries share.

Prometheus's HTTPClientConfig: credentials (inlined from Secrets in the object's namespace),
OAuth2, TLS (files copied into the tls-assets Secret), proxy settings, redirects and HTTP/2.
The same helpers the ServiceMonitor path uses do the reading, so errors read the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render import auth
from promop.render.store import Reject, Scope
from promop.render.tls_assets import tls_config

HTTP_CLIENT_FIELDS = frozenset({
    "authorization", "basicAuth", "oauth2", "tlsConfig", "proxyUrl", "noProxy", "proxyFromEnvironment",
    "proxyConnectHeader", "followRedirects", "enableHTTP2",
})


def check_one_auth(src: Mapping[str, Any], field: str) -> None:
    """Prometheus refuses a client with more than one of basic_auth, authorization and oauth2."""
    used = [f for f in ("basicAuth", "authorization", "oauth2") if src.get(f)]
    if len(used) > 1:
        raise Reject(field, f"{' and '.join(used)} are mutually exclusive; keep only one authentication method")


def credentials(scope: Scope, src: Mapping[str, Any], out: dict, field: str) -> None:
    """basic_auth, authorization and oauth2 (oauth2 needs Prometheus >= 2.27)."""
    check_one_auth(src, field)
    if src.get("basicAuth"):
        out["basic_auth"] = auth.basic_auth(scope, src["basicAuth"], f"{field}.basicAuth")
    if src.get("authorization"):
        out["authorization"] = auth.authorization(scope, src["authorization"], f"{field}.authorization")
    if src.get("oauth2"):
        scope.put(out, "oauth2", auth.oauth2(scope, src["oauth2"], f"{field}.oauth2"), "2.27.0", f"{field}.oauth2")


def tls(scope: Scope, src: Mapping[str, Any], out: dict, field: str) -> None:
    if src.get("tlsConfig"):
        cfg = tls_config(scope, src["tlsConfig"], f"{field}.tlsConfig")
        if cfg:
            out["tls_config"] = cfg


def client_options(scope: Scope, src: Mapping[str, Any], out: dict, field: str) -> None:
    """follow_redirects (>= 2.26) and enable_http2 (>= 2.35)."""
    if src.get("followRedirects") is not None:
        scope.put(out, "follow_redirects", bool(src["followRedirects"]), "2.26.0", f"{field}.followRedirects")
    if src.get("enableHTTP2") is not None:
        scope.put(out, "enable_http2", bool(src["enableHTTP2"]), "2.35.0", f"{field}.enableHTTP2")


def http_client(scope: Scope, src: Mapping[str, Any], out: dict, field: str) -> None:
    """Every HTTP client option `src` sets, into `out` (Prometheus keys)."""
    auth.proxy(scope, src, out, field)
    credentials(scope, src, out, field)
    tls(scope, src, out, field)
    client_options(scope, src, out, field)
