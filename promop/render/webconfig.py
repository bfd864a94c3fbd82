"""Prometheus spec.web: the --web.config.file Secret, its TLS volumes, and HTTPS probes and reloads.

As upstream (pkg/webconfig): the Secret `prometheus-<name>-web-config` holds
`web-config.yaml` in exporter-toolkit's format: `tls_server_config` from
spec.web.tlsConfig and `http_server_config` from spec.web.httpConfig, empty
when neither is set. The TLS section, its checks and its volumes are the ones the
Alertmanager's web TLS uses (alertmanager/webtls.server_tls): one code path for
both, so a fix to either is a fix to both. Each referenced Secret/ConfigMap is
mounted whole under /etc/prometheus/web_config/<secret|configmap>/<name>-<role>
(never with subPath: the kubelet must be able to refresh a renewed certificate).

When TLS is on, the kubelet probes and the config reloader must speak HTTPS to
Prometheus, or the pod never becomes ready and never reloads: the probes get
`scheme: HTTPS` and the reload/runtimeinfo URLs `https://` (the reloader does
not verify the serving certificate, as upstream's, since it dials localhost).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from promop.render.alertmanager.webtls import TLSMounts, server_tls
from promop.render.emit import emit
from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import RenderOptions
from promop.render.store import Scope

WEB_CONFIG_KEY = "web-config.yaml"
PROMETHEUS_WEB_CONFIG_DIR = "/etc/prometheus/web_config"
TLS_VOLUME_PREFIX = "web-config-tls"

# spec.web.httpConfig.headers -> the response header exporter-toolkit sets
_HEADERS = (("contentSecurityPolicy", "Content-Security-Policy"),
            ("strictTransportSecurity", "Strict-Transport-Security"),
            ("xContentTypeOptions", "X-Content-Type-Options"),
            ("xFrameOptions", "X-Frame-Options"),
            ("xXSSProtection", "X-XSS-Protection"))
# exporter-toolkit accepts these two only in lower case; the CRD enums are NoSniff / Deny, SameOrigin
_LOWERCASED = frozenset({"xContentTypeOptions", "xFrameOptions"})


def http_server_config(http: Mapping[str, Any] | None) -> dict:
    """spec.web.httpConfig -> `http_server_config` ({} when nothing is set)."""
    http = http or {}
    out: dict = {}
    if http.get("http2") is not None:
        out["http2"] = bool(http["http2"])
    headers = http.get("headers") or {}
    chosen = {}
    for field, header in _HEADERS:
        value = headers.get(field)
        if value:
            chosen[header] = str(value).lower() if field in _LOWERCASED else str(value)
    if chosen:
        out["headers"] = chosen
    return out


def web_config_document(web: Mapping[str, Any] | None, tls_section: Mapping[str, Any] | None) -> dict:
    """The web config file as a mapping: `tls_server_config` then `http_server_config`, each only when set."""
    out: dict = {}
    if tls_section:
        out["tls_server_config"] = dict(tls_section)
    http = http_server_config((web or {}).get("httpConfig"))
    if http:
        out["http_server_config"] = http
    return out


def web_config_text(web: Mapping[str, Any] | None, tls_section: Mapping[str, Any] | None) -> str:
    """The file's text: empty (as upstream writes it) when there is nothing to configure."""
    doc = web_config_document(web, tls_section)
    return emit(doc) if doc else ""


def prometheus_web_tls(scope: Scope, spec: Mapping[str, Any]) -> TLSMounts | None:
    """spec.web.tlsConfig -> `tls_server_config` with its volumes, or None. Raises store.Reject."""
    tls = (spec.get("web") or {}).get("tlsConfig")
    if tls is None:
        return None
    return server_tls(scope, tls, "spec.web.tlsConfig", PROMETHEUS_WEB_CONFIG_DIR, TLS_VOLUME_PREFIX)


def build_web_config_secret(prometheus: Mapping[str, Any], options: RenderOptions,
                            tls: TLSMounts | None = None) -> dict:
    """Secret `prometheus-<name>-web-config` with `web-config.yaml`."""
    text = web_config_text((prometheus.get("spec") or {}).get("web"), tls.section if tls else None)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": managed_metadata(prometheus, f"{prefixed_name(prometheus)}-web-config", options),
        "data": {WEB_CONFIG_KEY: base64.b64encode(text.encode()).decode()},
    }


def _insert_after(items: list[dict], name: str, new: list[dict]) -> list[dict]:
    """`items` with `new` right after the item named `name` (at the end when there is none)."""
    names = [i.get("name") for i in items]
    at = len(items) if name not in names else names.index(name) + 1
    return items[:at] + [dict(n) for n in new] + items[at:]


def _https(container: dict) -> None:
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = (container.get(probe) or {}).get("httpGet")
        if get is not None:
            get["scheme"] = "HTTPS"


def _https_urls(args: list[str]) -> list[str]:
    """The reloader's reload/runtimeinfo URLs and the Thanos sidecar's Prometheus URL, over HTTPS."""
    prefixes = ("--reload-url=http://", "--runtimeinfo-url=http://", "--prometheus.url=http://")
    return [a.replace("=http://", "=https://", 1) if a.startswith(prefixes) else a for a in args]


def adapt_statefulset(statefulset: dict, spec: Mapping[str, Any], tls: TLSMounts | None) -> dict:
    """Mount the web TLS files (prometheus and, as upstream, the reloader that reads the same web config)
    and switch the probes and reload URLs to HTTPS. Modifies and returns `statefulset`."""
    if tls is None:
        return statefulset
    pod = statefulset["spec"]["template"]["spec"]
    pod["volumes"] = _insert_after(pod.get("volumes") or [], "web-config", tls.volumes)
    for container in pod.get("containers") or []:
        if container.get("name") == "prometheus":
            container["volumeMounts"] = _insert_after(container.get("volumeMounts") or [], "web-config", tls.mounts)
            _https(container)
        elif container.get("name") == "config-reloader":
            if spec.get("web") is not None:
                container["volumeMounts"] = _insert_after(container.get("volumeMounts") or [], "web-config",
                                                          tls.mounts)
            container["args"] = _https_urls(container.get("args") or [])
        elif container.get("name") == "thanos-sidecar":  # upstream: --prometheus.url=https://localhost:9090/
            container["args"] = _https_urls(container.get("args") or [])
    return statefulset
