"""The Secrets a ThanosRuler's pods read: `-config` (remote-write.yaml) and `-tls-assets-0` (`-web-config`:
ruler_web.py).

Remote write (stateless mode) is generated with the Prometheus remote write code, for the Prometheus
release the Thanos version embeds (Thanos has no flag of its own per field): upstream does the same.
sigv4 is added here (Thanos takes it; `external_id` is not supported by any Thanos version).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from promop.render.emit import emit
from promop.render.generate import new_context
from promop.render.model import Problem, RenderOptions, obj_meta
from promop.render.remote_write import remote_write_section
from promop.render.store import CERTS_DIR, Reject, Store
from promop.render.thanos.ruler_meta import KIND, managed_metadata, prefixed_name
from promop.render.versions import Version

REMOTE_WRITE_KEY = "remote-write.yaml"
THANOS_CERTS_DIR = "/etc/thanos/certs"

# Thanos minor release -> the Prometheus release it embeds (approximately: from Thanos's go.mod history).
_PROMETHEUS_FOR_THANOS = (
    ("0.42.0", "3.7.0"), ("0.40.0", "3.5.0"), ("0.39.0", "3.4.0"), ("0.38.0", "3.1.0"), ("0.37.0", "3.0.0"),
    ("0.36.0", "2.53.0"), ("0.35.0", "2.51.0"), ("0.34.0", "2.49.0"), ("0.32.0", "2.45.0"),
    ("0.30.0", "2.40.0"), ("0.28.0", "2.37.0"), ("0.24.0", "2.32.0"),
)


def prometheus_equivalent(thanos: Version) -> str:
    """The Prometheus version whose config fields this Thanos understands."""
    for since, prometheus in _PROMETHEUS_FOR_THANOS:
        if thanos.at_least(since):
            return prometheus
    return "2.30.0"


def _sigv4(scope_read, sigv4: Mapping[str, Any], field: str) -> dict:
    out: dict = {}
    if sigv4.get("region"):
        out["region"] = sigv4["region"]
    for key, name in (("accessKey", "access_key"), ("secretKey", "secret_key")):
        if sigv4.get(key):
            out[name] = scope_read("Secret", sigv4[key], f"{field}.sigv4.{key}")
    for key, name in (("profile", "profile"), ("roleArn", "role_arn")):
        if sigv4.get(key):
            out[name] = sigv4[key]
    return out


def _relocated(value: Any) -> Any:
    """TLS asset paths from /etc/prometheus/certs to where the ruler mounts them."""
    if isinstance(value, str) and value.startswith(CERTS_DIR + "/"):
        return THANOS_CERTS_DIR + value[len(CERTS_DIR):]
    if isinstance(value, dict):
        return {k: _relocated(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_relocated(v) for v in value]
    return value


def remote_write_config(ruler: Mapping[str, Any], version: Version, store: Store,
                        warnings: list[Problem]) -> tuple[str, dict[str, str]]:
    """(remote-write.yaml text, TLS asset files); a bad entry is skipped with a warning."""
    ns, name = obj_meta(ruler)
    entries: list[dict] = []
    assets: dict[str, str] = {}
    for i, rw in enumerate((ruler.get("spec") or {}).get("remoteWrite") or []):
        field = f"spec.remoteWrite[{i}]"
        plain = {k: v for k, v in rw.items() if k != "sigv4"} if isinstance(rw, Mapping) else rw
        shadow = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": dict(ruler["metadata"]),
                  "spec": {"version": prometheus_equivalent(version), "remoteWrite": [plain]}}
        ctx, scope = new_context(shadow, RenderOptions(), store)
        section = remote_write_section(ctx, scope)
        warnings += [Problem(KIND, ns, name, p.field.replace("spec.remoteWrite[0]", field), p.message)
                     for p in scope.warnings]
        if not section:
            continue
        entry = section[0]
        if isinstance(rw.get("sigv4"), Mapping):
            try:
                sig = _sigv4(scope.read, rw["sigv4"], field)
            except Reject as err:
                warnings.append(Problem(KIND, ns, name, err.field, f"{err.message}; this remote write is ignored"))
                continue
            entry = _with_sigv4(entry, sig)
        entries.append(_relocated(entry))
        assets.update(scope.assets)
    return emit({"remote_write": entries}), assets


def _with_sigv4(entry: dict, sigv4: dict) -> dict:
    """sigv4 goes before round_robin_dns, as upstream's key order."""
    out = {k: v for k, v in entry.items() if k != "round_robin_dns"}
    out["sigv4"] = sigv4
    if "round_robin_dns" in entry:
        out["round_robin_dns"] = entry["round_robin_dns"]
    return out


def config_secret(ruler: Mapping[str, Any], options: RenderOptions, text: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": managed_metadata(ruler, f"{prefixed_name(ruler)}-config", options),
            "data": {REMOTE_WRITE_KEY: base64.b64encode(text.encode()).decode()}}


def tls_assets_secret(ruler: Mapping[str, Any], options: RenderOptions, assets: Mapping[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": managed_metadata(ruler, f"{prefixed_name(ruler)}-tls-assets-0", options),
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in sorted(assets.items())}}

