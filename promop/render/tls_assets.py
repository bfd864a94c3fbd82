"""TLS configs and the `prometheus-<name>-tls-assets-<n>` Secrets that carry their files.

CA/cert/key material referenced from Secrets or ConfigMaps is copied into
sharded Secrets mounted at /etc/prometheus/certs, and the config refers to it
by path; `caFile`/`certFile`/`keyFile` paths pass through verbatim.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import RenderOptions
from promop.render.store import Reject, Scope

# Upstream's limit per sharded Secret: the 1 MiB Secret limit minus headroom.
MAX_SECRET_DATA = 1048576 - 50000
_TLS_VERSIONS = ("TLS10", "TLS11", "TLS12", "TLS13")


def tls_config(scope: Scope, tls: Mapping[str, Any], field: str, files_allowed: bool = True) -> dict:
    """A Prometheus tls_config from a CRD (Safe)TLSConfig; records asset files in `scope`."""
    if not isinstance(tls, Mapping):
        raise Reject(field, "must be a mapping")
    out: dict = {}
    if tls.get("insecureSkipVerify") is not None:
        out["insecure_skip_verify"] = bool(tls["insecureSkipVerify"])
    for ref_field, file_field, out_key, pem in (
        ("ca", "caFile", "ca_file", "CERTIFICATE"),
        ("cert", "certFile", "cert_file", "CERTIFICATE"),
    ):
        if tls.get(ref_field):
            kind, name, key, value = scope.read_secret_or_configmap(tls[ref_field], f"{field}.{ref_field}")
            _check_pem(value, pem, f"{field}.{ref_field}", kind, name, key)
            out[out_key] = scope.asset(kind, name, key, value)
        elif tls.get(file_field) and files_allowed:
            out[out_key] = tls[file_field]
    if tls.get("keySecret"):
        value = scope.read("Secret", tls["keySecret"], f"{field}.keySecret")
        _check_pem(value, "PRIVATE KEY", f"{field}.keySecret", "Secret", tls["keySecret"].get("name"), tls["keySecret"]["key"])
        out["key_file"] = scope.asset("Secret", tls["keySecret"].get("name") or "", str(tls["keySecret"]["key"]), value)
    elif tls.get("keyFile") and files_allowed:
        out["key_file"] = tls["keyFile"]
    if ("cert_file" in out) != ("key_file" in out):
        missing = "key (keySecret or keyFile)" if "cert_file" in out else "cert (cert or certFile)"
        raise Reject(field, f"a client certificate needs both cert and key; the {missing} is missing")
    if tls.get("serverName"):
        out["server_name"] = tls["serverName"]
    for crd_key, out_key, minimum in (("minVersion", "min_version", "2.35.0"), ("maxVersion", "max_version", "2.41.0")):
        if tls.get(crd_key):
            if tls[crd_key] not in _TLS_VERSIONS:
                raise Reject(f"{field}.{crd_key}", f"{tls[crd_key]!r} is not a TLS version; use one of {', '.join(_TLS_VERSIONS)}")
            scope.put(out, out_key, tls[crd_key], minimum, f"{field}.{crd_key}")
    if "min_version" in out and "max_version" in out and out["min_version"] > out["max_version"]:
        raise Reject(field, f"minVersion {out['min_version']} is above maxVersion {out['max_version']}")
    return out


def _check_pem(value: str | None, label: str, field: str, kind: str, name: Any, key: Any) -> None:
    if value is not None and ("-----BEGIN " not in value or label not in value):
        raise Reject(field, f"{kind} {name} key {key!r} does not hold a PEM {label.lower()}; Prometheus would fail to load it")


def tls_secrets(prometheus: Mapping[str, Any], options: RenderOptions, assets: Mapping[str, str]) -> list[dict]:
    """The sharded TLS asset Secrets (always at least `-tls-assets-0`), keys sorted, first-fit."""
    shards: list[dict[str, str]] = [{}]
    size = 0
    for filename in sorted(assets):
        encoded = base64.b64encode(assets[filename].encode("utf-8")).decode("ascii")
        item = len(assets[filename].encode("utf-8")) + len(filename)
        if shards[-1] and size + item > MAX_SECRET_DATA:
            shards.append({})
            size = 0
        shards[-1][filename] = encoded
        size += item
    base = prefixed_name(prometheus)
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": managed_metadata(prometheus, f"{base}-tls-assets-{i}", options),
            "data": data,
        }
        for i, data in enumerate(shards)
    ]
