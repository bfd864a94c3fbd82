"""The Secrets the operator writes for an Alertmanager: generated config, TLS assets, web and cluster TLS config."""

from __future__ import annotations

import base64
import gzip
from collections.abc import Mapping
from typing import Any

from promop.render.alertmanager.meta import managed_metadata, prefixed_name
from promop.render.emit import emit
from promop.render.model import RenderOptions
from promop.render.tls_assets import MAX_SECRET_DATA

CONFIG_GZ_KEY = "alertmanager.yaml.gz"
WEB_CONFIG_KEY = "web-config.yaml"
CLUSTER_TLS_KEY = "cluster-tls-config.yaml"


FAST_GZIP_LIMIT = 256 * 1024


def compress(text: str) -> bytes:
    """gzip with mtime 0: equal configs give equal bytes, so an unchanged config is never rewritten.

    Level 1 first (4x faster than 6 on a 3 MB config, which is mostly repeated keys, and ~35% larger);
    level 9 when that is above 256 KiB, so a config that compresses badly still fits the 1 MiB Secret."""
    raw = text.encode("utf-8")
    fast = gzip.compress(raw, compresslevel=1, mtime=0)
    return fast if len(fast) <= FAST_GZIP_LIMIT else gzip.compress(raw, compresslevel=9, mtime=0)


def generated_secret(alertmanager: Mapping[str, Any], options: RenderOptions, text: str,
                     extra_data: Mapping[str, str]) -> dict:
    """`alertmanager-<name>-generated`: alertmanager.yaml.gz plus the user Secret's other keys."""
    data = dict(sorted(extra_data.items()))
    data[CONFIG_GZ_KEY] = base64.b64encode(compress(text)).decode("ascii")
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": managed_metadata(alertmanager, f"{prefixed_name(alertmanager)}-generated", options),
        "data": data,
    }


def tls_asset_secrets(alertmanager: Mapping[str, Any], options: RenderOptions, assets: Mapping[str, str]) -> list[dict]:
    """`alertmanager-<name>-tls-assets-<n>`, sharded below the Secret size limit (always at least one)."""
    shards: list[dict[str, str]] = [{}]
    size = 0
    for filename in sorted(assets):
        raw = assets[filename].encode("utf-8")
        item = len(raw) + len(filename)
        if shards[-1] and size + item > MAX_SECRET_DATA:
            shards.append({})
            size = 0
        shards[-1][filename] = base64.b64encode(raw).decode("ascii")
        size += item
    base = prefixed_name(alertmanager)
    return [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
             "metadata": managed_metadata(alertmanager, f"{base}-tls-assets-{i}", options), "data": data}
            for i, data in enumerate(shards)]


def web_config(spec: Mapping[str, Any], tls_section: Mapping[str, Any] | None = None) -> str:
    """The --web.config.file content: empty unless spec.web.tlsConfig (`tls_server_config`, from
    webtls.web_tls) or spec.web.httpConfig is set (built as Prometheus's: render/webconfig.py)."""
    from promop.render.webconfig import web_config_text  # webconfig imports this package's webtls

    return web_config_text(spec.get("web"), tls_section)


def web_config_secret(alertmanager: Mapping[str, Any], options: RenderOptions,
                      tls_section: Mapping[str, Any] | None = None) -> dict:
    text = web_config(alertmanager.get("spec") or {}, tls_section)
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": managed_metadata(alertmanager, f"{prefixed_name(alertmanager)}-web-config", options),
            "data": {WEB_CONFIG_KEY: base64.b64encode(text.encode()).decode()}}


def cluster_tls_secret(alertmanager: Mapping[str, Any], options: RenderOptions,
                       sections: Mapping[str, Any] | None = None) -> dict:
    """`alertmanager-<name>-cluster-tls-config`: `tls_server_config` + `tls_client_config` (webtls.cluster_tls)."""
    text = emit(dict(sections)) if sections else ""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": managed_metadata(alertmanager, f"{prefixed_name(alertmanager)}-cluster-tls-config", options),
            "data": {CLUSTER_TLS_KEY: base64.b64encode(text.encode()).decode()}}
