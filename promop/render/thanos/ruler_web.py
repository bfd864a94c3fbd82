"""ThanosRuler spec.web: the `--http.config` file (Secret `thanos-ruler-<name>-web-config`) and its TLS volumes.

As upstream (pkg/thanos: webconfig.New("/etc/thanos/web_config", ...)): the file is exporter-toolkit's
web config, `tls_server_config` from spec.web.tlsConfig and `http_server_config` from spec.web.httpConfig
(the same builder as the Prometheus and Alertmanager web configs: render/webconfig.py and
render/alertmanager/webtls.py), empty when neither is set. Each Secret/ConfigMap the TLS section names is
mounted whole at /etc/thanos/web_config/<secret|configmap>/<name>-<key|cert|ca>, in the thanos-ruler
container and in the config reloader (which serves its own endpoint with the same file and reloads
Thanos over HTTPS). The Secret is written whatever the Thanos version; it is mounted and passed with
`--http.config` only from Thanos 0.21 (and, as upstream, with the reloader).

Like upstream, the referenced Secrets/ConfigMaps need not exist when the ruler is rendered (the kubelet
waits for them): only the objects the caller handed in are read, and for those a missing key, a
certificate that is not PEM, or a key that does not belong to the certificate refuses the ThanosRuler.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from promop.render.alertmanager.webtls import TLSMounts, server_tls, tls_references
from promop.render.model import RenderOptions
from promop.render.store import Reject, Scope, Store
from promop.render.thanos.ruler_meta import KIND, managed_metadata, prefixed_name
from promop.render.versions import Version
from promop.render.webconfig import web_config_text

WEB_CONFIG_DIR = "/etc/thanos/web_config"
WEB_CONFIG_KEY = "web-config.yaml"
TLS_VOLUME_PREFIX = "web-config-tls"

__all__ = ["TLSMounts", "WEB_CONFIG_DIR", "WEB_CONFIG_KEY", "ruler_web_tls", "web_config_secret",
           "web_tls_references"]


class _PresentOnlyScope(Scope):
    """Reads only the objects in the store: an absent Secret/ConfigMap is not an error (upstream reads none)."""

    def read(self, kind: str, ref: Any, field: str) -> str | None:
        if isinstance(ref, Mapping) and ref.get("name") and ref.get("key") \
                and not self.store.exists(kind, self.namespace, str(ref["name"])):
            return None
        return super().read(kind, ref, field)


def ruler_web_tls(ruler: Mapping[str, Any], store: Store, version: Version) -> TLSMounts | None:
    """spec.web.tlsConfig -> `tls_server_config` with its volumes and mounts, or None. Raises store.Reject."""
    web = (ruler.get("spec") or {}).get("web")
    if web is None:
        return None
    if not isinstance(web, Mapping):
        raise Reject("spec.web", "must be a mapping with tlsConfig and/or httpConfig")
    if web.get("tlsConfig") is None:
        return None
    md = ruler.get("metadata") or {}
    scope = _PresentOnlyScope(store, KIND, md.get("namespace", ""), md.get("name", ""), version)
    return server_tls(scope, web["tlsConfig"], "spec.web.tlsConfig", WEB_CONFIG_DIR, TLS_VOLUME_PREFIX)


def web_tls_references(ruler: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of each Secret/ConfigMap spec.web.tlsConfig names: what a caller should
    fetch into the render's store so the certificate and key are checked before the pods mount them."""
    ns = (ruler.get("metadata") or {}).get("namespace", "")
    spec = ruler.get("spec") or {}
    web = spec.get("web") if isinstance(spec.get("web"), Mapping) else {}
    return [(kind, ns, name) for kind, name in tls_references({"web": {"tlsConfig": web.get("tlsConfig")}})]


def web_config_secret(ruler: Mapping[str, Any], options: RenderOptions, tls: TLSMounts | None) -> dict:
    """Secret `thanos-ruler-<name>-web-config` with `web-config.yaml` (empty when nothing is configured)."""
    web = (ruler.get("spec") or {}).get("web")
    text = web_config_text(web if isinstance(web, Mapping) else None, tls.section if tls else None)
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": managed_metadata(ruler, f"{prefixed_name(ruler)}-web-config", options),
            "data": {WEB_CONFIG_KEY: base64.b64encode(text.encode()).decode()}}
