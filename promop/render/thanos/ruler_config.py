"""The Secrets a ThanosRuler's pods read: `-config` (remote-write.yaml) and `-tls-assets-<i>` (`-web-config`:
ruler_web.py).

Remote write (stateless mode) is generated with the Prometheus remote write code, as upstream: first the
fields the ruler's Thanos version does not read are removed (upstream's list, with a warning each), then
the config is generated for the current Prometheus. A remote write before Thanos 0.24, or an Azure managed
identity without clientId before Thanos 0.40, refuses the ThanosRuler (upstream fails the sync).
sigv4 is added here (Thanos takes it; `external_id` is not supported by any Thanos version).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from promop.render.cloudauth import REMOTE_WRITE_METHODS, check_methods
from promop.render.emit import emit
from promop.render.generate import new_context
from promop.render.model import Problem, RenderOptions, obj_meta
from promop.render.remote_write import remote_write_section
from promop.render.store import CERTS_DIR, Reject, Store
from promop.render.tls_assets import MAX_SECRET_DATA
from promop.render.thanos.ruler_meta import KIND, managed_metadata, prefixed_name
from promop.render.versions import Version

REMOTE_WRITE_KEY = "remote-write.yaml"
THANOS_CERTS_DIR = "/etc/thanos/certs"

# Remote-write fields a Thanos older than the version shown does not read, as upstream's
# createOrUpdateRulerConfigSecret resets them (a path in spec.remoteWrite[i], "" = every version).
_UNSUPPORTED_BEFORE = (
    ("", ("azureAd", "workloadIdentity")), ("", ("azureAd", "scope")), ("", ("sigv4", "externalId")),
    ("0.38.0", ("roundRobinDNS",)),  # Prometheus 3.1
    ("0.37.0", ("messageVersion",)),  # Prometheus 2.54
    ("0.36.0", ("azureAd", "sdk")),
    ("0.32.0", ("queueConfig", "sampleAgeLimit")), ("0.32.0", ("noProxy",)), ("0.32.0", ("proxyFromEnvironment",)),
    ("0.32.0", ("proxyConnectHeader",)),
    ("0.31.0", ("azureAd", "oauth")), ("0.31.0", ("azureAd",)),
    ("0.30.0", ("tlsConfig", "maxVersion")), ("0.30.0", ("sendNativeHistograms",)),
    ("0.28.0", ("tlsConfig", "minVersion")),
)
EMPTY_CLIENT_ID_SINCE = "0.40.0"  # azureAd.managedIdentity without clientId (system-assigned identity)
REMOTE_WRITE_SINCE = "0.24.0"


class RemoteWriteError(ValueError):
    """A remote write this Thanos cannot run at all (upstream fails the sync); `field` says where."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def remote_write_problem(spec: Mapping[str, Any], version: Version) -> RemoteWriteError | None:
    """Why upstream refuses this ThanosRuler's remote write, or None."""
    remote_write = spec.get("remoteWrite") or []
    if remote_write and not version.at_least(REMOTE_WRITE_SINCE):
        return RemoteWriteError("spec.remoteWrite", f"thanos remote-write configuration requires at least version "
                                f"{REMOTE_WRITE_SINCE}: current version {version}; raise spec.version or remove it")
    for i, rw in enumerate(remote_write if isinstance(remote_write, list) else []):
        managed = ((rw or {}).get("azureAd") or {}).get("managedIdentity") if isinstance(rw, Mapping) else None
        if isinstance(managed, Mapping) and not managed.get("clientId") and not version.at_least(EMPTY_CLIENT_ID_SINCE):
            return RemoteWriteError(f"spec.remoteWrite[{i}].azureAd.managedIdentity.clientId",
                                    f"is required with Thanos < {EMPTY_CLIENT_ID_SINCE}, current = {version}")
    return None


def thanos_supported(rw: Mapping[str, Any], version: Version, field: str, warn) -> dict:
    """A copy of one remote write without the fields this Thanos does not read (a warning each)."""
    out = json.loads(json.dumps(rw))
    for since, path in _UNSUPPORTED_BEFORE:
        if since and version.at_least(since):
            continue
        parent = out
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and parent.get(path[-1]) not in (None, ""):
            del parent[path[-1]]
            warn(f"{field}.{'.'.join(path)}", f"ignored: not supported by Thanos "
                 f"{'in any version' if not since else f'< {since}'} (this ThanosRuler runs {version})")
    return out


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
    """(remote-write.yaml text, TLS asset files); a bad entry is skipped with a warning.

    As upstream: the fields this Thanos does not read are removed first (thanos_supported), then the
    config is generated by the Prometheus remote-write code without a version check (the current
    Prometheus), so no field is dropped twice or by an approximate Thanos -> Prometheus mapping."""
    ns, name = obj_meta(ruler)
    entries: list[dict] = []
    assets: dict[str, str] = {}
    for i, rw in enumerate((ruler.get("spec") or {}).get("remoteWrite") or []):
        field = f"spec.remoteWrite[{i}]"
        if isinstance(rw, Mapping):
            rw = thanos_supported(rw, version, field,
                                  lambda f, m: warnings.append(Problem(KIND, ns, name, f, m)))
            try:  # sigv4 is taken out below: the one-method rule must see it first
                check_methods(rw, field, REMOTE_WRITE_METHODS)
            except Reject as err:
                warnings.append(Problem(KIND, ns, name, err.field, f"{err.message}; this remote write is ignored"))
                continue
        plain = {k: v for k, v in rw.items() if k != "sigv4"} if isinstance(rw, Mapping) else rw
        shadow = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": dict(ruler["metadata"]),
                  "spec": {"remoteWrite": [plain]}}
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


def tls_assets_secrets(ruler: Mapping[str, Any], options: RenderOptions, assets: Mapping[str, str]) -> list[dict]:
    """`thanos-ruler-<name>-tls-assets-<i>`: the TLS asset files sharded as upstream's ShardedSecret (keys
    sorted, first fit under a Secret's size), always at least `-tls-assets-0`."""
    shards: list[dict[str, str]] = [{}]
    size = 0
    for filename in sorted(assets):
        item = len(assets[filename].encode()) + len(filename)
        if shards[-1] and size + item > MAX_SECRET_DATA:
            shards.append({})
            size = 0
        shards[-1][filename] = base64.b64encode(assets[filename].encode()).decode()
        size += item
    return [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
             "metadata": managed_metadata(ruler, f"{prefixed_name(ruler)}-tls-assets-{i}", options), "data": data}
            for i, data in enumerate(shards)]
