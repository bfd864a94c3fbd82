"""The `thanos-sidecar` container of a Prometheus with spec.thanos, as upstream's createThanosContainer.

The sidecar serves Prometheus's data over the StoreAPI (gRPC 10901, HTTP 10902) and, with object
storage configured, uploads TSDB blocks. Uploads race with Prometheus's own compaction, so upstream
either disables compaction (min = max block duration) or, for Prometheus >= 3.9 with Thanos >= 0.41,
keeps it and lets Prometheus wait on the shipper's meta file. The pipeline calls `problems()` first:
an unparsable version or a clashing additional argument refuses the whole Prometheus, as upstream.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import Problem, RenderOptions, obj_meta
from promop.render.thanos.args import ManagedArgumentError, build_args
from promop.render.thanos.versions import (
    DELAYED_COMPACTION_PROMETHEUS_SINCE, DELAYED_COMPACTION_THANOS_SINCE, HTTP_CLIENT_FILE_SINCE,
    TLS_CIPHERS_CURVES_SINCE, ThanosVersionError, thanos_image, thanos_version,
)
from promop.render.versions import Version

CONTAINER_NAME = "thanos-sidecar"
GRPC_PORT = 10901
HTTP_PORT = 10902
STORAGE_DIR = "/prometheus"
CONFIG_DIR = "/etc/thanos/config"
HTTP_CLIENT_FILE = "prometheus.http-client-file.yaml"
HTTP_CLIENT_VOLUME = "thanos-prometheus-http-client-file"  # also the Secret name's suffix
HTTP_CLIENT_CONFIG = "tls_config:\n  insecure_skip_verify: true\n"
GET_CONFIG_SINCE = "0.29.0"  # --prometheus.get_config_timeout / --prometheus.get_config_interval
SHIPPER_META_FILE = "thanos.shipper.json"
DEFAULT_BLOCK_DURATION = "2h"
SECURITY_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
}


def enabled(spec: Mapping[str, Any]) -> bool:
    return isinstance(spec.get("thanos"), Mapping)


def _has_object_storage(thanos: Mapping[str, Any]) -> bool:
    return bool(thanos.get("objectStorageConfigFile")) or thanos.get("objectStorageConfig") is not None


def delayed_compaction(spec: Mapping[str, Any], prometheus_version: Version) -> bool:
    """Prometheus keeps compacting and waits on the shipper's meta file (new enough versions only)."""
    thanos = spec.get("thanos")
    if not isinstance(thanos, Mapping) or not _has_object_storage(thanos) or spec.get("disableCompaction"):
        return False
    try:
        version = thanos_version(thanos.get("version"))
    except ThanosVersionError:
        return False
    return (version.at_least(DELAYED_COMPACTION_THANOS_SINCE)
            and prometheus_version.at_least(DELAYED_COMPACTION_PROMETHEUS_SINCE))


def compaction_args(spec: Mapping[str, Any], prometheus_version: Version) -> list[str]:
    """The Prometheus flags that coordinate compaction with block uploads (or spec.disableCompaction)."""
    thanos = spec.get("thanos") if isinstance(spec.get("thanos"), Mapping) else None
    if delayed_compaction(spec, prometheus_version):
        return [f"--storage.tsdb.delay-compact-file.path={posixpath.join(STORAGE_DIR, SHIPPER_META_FILE)}"]
    if spec.get("disableCompaction") or (thanos is not None and _has_object_storage(thanos)):
        size = (thanos or {}).get("blockSize") or DEFAULT_BLOCK_DURATION
        return [f"--storage.tsdb.max-block-duration={size}", f"--storage.tsdb.min-block-duration={size}"]
    return []


def _listen(thanos: Mapping[str, Any], key: str) -> str:
    return "127.0.0.1" if thanos.get("listenLocal") or thanos.get(key) else ""


def _web_scheme(spec: Mapping[str, Any]) -> str:
    web = spec.get("web") if isinstance(spec.get("web"), Mapping) else {}
    return "https" if web.get("tlsConfig") else "http"


_TLS_VERSIONS = {"TLS10": "1.0", "TLS11": "1.1", "TLS12": "1.2", "TLS13": "1.3"}  # the CRD's -> Thanos's


def grpc_tls_args(thanos: Mapping[str, Any], version: Version) -> list[tuple[str, Any]]:
    """The gRPC server TLS flags (sidecar and ruler alike): the only TLS fields upstream reads."""
    tls = thanos.get("grpcServerTlsConfig")
    if not isinstance(tls, Mapping):
        return []
    out: list[tuple[str, Any]] = []
    for key, flag in (("certFile", "grpc-server-tls-cert"), ("keyFile", "grpc-server-tls-key"),
                      ("caFile", "grpc-server-tls-client-ca")):
        if tls.get(key):
            out.append((flag, tls[key]))
    if tls.get("minVersion"):
        out.append(("grpc-server-tls-min-version", _TLS_VERSIONS.get(tls["minVersion"], tls["minVersion"])))
    if version.at_least(TLS_CIPHERS_CURVES_SINCE):
        for key, flag in (("cipherSuites", "grpc-server-tls-ciphers"), ("curves", "grpc-server-tls-curves")):
            if tls.get(key):
                out.append((flag, ",".join(tls[key])))
    return out


def _secret_env(name: str, ref: Mapping[str, Any]) -> dict:
    return {"name": name, "valueFrom": {"secretKeyRef": dict(ref)}}


def sidecar_args(spec: Mapping[str, Any], prometheus_version: Version) -> tuple[list[tuple[str, Any]], list[dict]]:
    """(managed flags as (name, value), env vars) in upstream's order."""
    thanos = spec["thanos"]
    version = thanos_version(thanos.get("version"))
    prefix = posixpath.normpath(spec.get("routePrefix") or "/")
    args: list[tuple[str, Any]] = [
        ("prometheus.url", f"{_web_scheme(spec)}://localhost:9090{prefix}"),
        ("grpc-address", f"{_listen(thanos, 'grpcListenLocal')}:{GRPC_PORT}"),
        ("http-address", f"{_listen(thanos, 'httpListenLocal')}:{HTTP_PORT}"),
    ]
    args += grpc_tls_args(thanos, version)
    env: list[dict] = []
    if _has_object_storage(thanos):
        if thanos.get("objectStorageConfigFile"):
            args.append(("objstore.config-file", thanos["objectStorageConfigFile"]))
        else:
            args.append(("objstore.config", "$(OBJSTORE_CONFIG)"))
            env.append(_secret_env("OBJSTORE_CONFIG", thanos["objectStorageConfig"]))
        args.append(("tsdb.path", STORAGE_DIR))
    if thanos.get("tracingConfigFile"):
        args.append(("tracing.config-file", thanos["tracingConfigFile"]))
    elif thanos.get("tracingConfig") is not None:
        args.append(("tracing.config", "$(TRACING_CONFIG)"))
        env.append(_secret_env("TRACING_CONFIG", thanos["tracingConfig"]))
    for key, flag in (("logLevel", "log.level"), ("logFormat", "log.format")):
        if thanos.get(key) or spec.get(key):  # the Prometheus's own level/format when the sidecar has none
            args.append((flag, thanos.get(key) or spec[key]))
    for key, flag in (("minTime", "min-time"), ("readyTimeout", "prometheus.ready_timeout")):
        if thanos.get(key):
            args.append((flag, thanos[key]))
    if version.at_least(GET_CONFIG_SINCE):
        for key, flag in (("getConfigTimeout", "prometheus.get_config_timeout"),
                          ("getConfigInterval", "prometheus.get_config_interval")):
            if thanos.get(key):
                args.append((flag, thanos[key]))
    if version.at_least(HTTP_CLIENT_FILE_SINCE):
        args.append(("prometheus.http-client-file", posixpath.join(CONFIG_DIR, HTTP_CLIENT_FILE)))
    if delayed_compaction(spec, prometheus_version):
        args += [("shipper.meta-file-name", SHIPPER_META_FILE), ("shipper.ignore-unequal-block-size", "")]
    return args, env


def build_container(spec: Mapping[str, Any], prometheus_version: Version, prometheus_mounts: list[dict],
                    default_base_image: str | None = None) -> dict:
    """The thanos-sidecar container; it shares the prometheus container's /prometheus mount when it uploads."""
    thanos = spec["thanos"]
    version = thanos_version(thanos.get("version"))
    managed, env = sidecar_args(spec, prometheus_version)
    args = ["sidecar", *build_args(managed, thanos.get("additionalArgs"), "spec.thanos.additionalArgs")]
    # upstream's order: the user's mounts (name and path only), the data mount, the http-client file
    mounts = [{"mountPath": m.get("mountPath"), "name": m.get("name")} for m in thanos.get("volumeMounts") or []]
    if _has_object_storage(thanos):
        mounts += [dict(m) for m in prometheus_mounts if m.get("mountPath") == STORAGE_DIR][:1]
    if version.at_least(HTTP_CLIENT_FILE_SINCE):
        mounts.append({"mountPath": CONFIG_DIR, "name": HTTP_CLIENT_VOLUME})
    container: dict = {
        "name": CONTAINER_NAME,
        "image": thanos_image(thanos, *(() if default_base_image is None else (default_base_image,))),
        "args": args,
        "ports": [{"containerPort": HTTP_PORT, "name": "http", "protocol": "TCP"},
                  {"containerPort": GRPC_PORT, "name": "grpc", "protocol": "TCP"}],
        "resources": dict(thanos.get("resources") or {}),
        "securityContext": dict(SECURITY_CONTEXT),
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": mounts,
    }
    if env:
        container["env"] = env
    if spec.get("imagePullPolicy"):
        container["imagePullPolicy"] = spec["imagePullPolicy"]
    return container


def with_volumes(volumes: list[dict], prometheus: Mapping[str, Any]) -> list[dict]:
    """The pod volumes with the sidecar's inserted before the storage volume (upstream's order)."""
    extra = sidecar_volumes(prometheus)
    db = f"{prefixed_name(prometheus)}-db"
    at = next((i for i, v in enumerate(volumes) if v.get("name") == db), None)
    if at is None:  # storage from a volumeClaimTemplate: before the user's volumes
        at = len(volumes) - len((prometheus.get("spec") or {}).get("volumes") or [])
    return [*volumes[:at], *extra, *volumes[at:]]


def http_client_secret_name(prometheus: Mapping[str, Any]) -> str:
    return f"{prefixed_name(prometheus)}-{HTTP_CLIENT_VOLUME}"


def sidecar_volumes(prometheus: Mapping[str, Any]) -> list[dict]:
    """The pod volumes the sidecar needs (the http-client file Secret, for Thanos >= 0.24)."""
    spec = prometheus.get("spec") or {}
    if not enabled(spec) or not thanos_version(spec["thanos"].get("version")).at_least(HTTP_CLIENT_FILE_SINCE):
        return []
    return [{"name": HTTP_CLIENT_VOLUME, "secret": {"secretName": http_client_secret_name(prometheus)}}]


def http_client_secret(prometheus: Mapping[str, Any], options: RenderOptions) -> dict | None:
    """Secret prometheus-<name>-thanos-prometheus-http-client-file: how the sidecar talks to Prometheus on
    localhost (upstream always skips certificate verification); None without a sidecar."""
    spec = prometheus.get("spec") or {}
    if not enabled(spec):
        return None
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": managed_metadata(prometheus, http_client_secret_name(prometheus), options),
        "stringData": {HTTP_CLIENT_FILE: HTTP_CLIENT_CONFIG},
    }


def service_ports(spec: Mapping[str, Any]) -> list[dict]:
    """The governing Service's extra port for the StoreAPI (upstream: grpc 10901 -> grpc)."""
    if not enabled(spec):
        return []
    return [{"name": "grpc", "port": GRPC_PORT, "protocol": "TCP", "targetPort": "grpc"}]


def problems(prometheus: Mapping[str, Any]) -> list[Problem]:
    """Why no StatefulSet can be built from this spec.thanos (upstream fails the reconcile)."""
    spec = prometheus.get("spec") or {}
    if not enabled(spec):
        return []
    ns, name = obj_meta(prometheus)
    thanos = spec["thanos"]
    try:
        thanos_version(thanos.get("version"))
        managed, _ = sidecar_args(spec, Version(None))
        build_args(managed, thanos.get("additionalArgs"), "spec.thanos.additionalArgs")
    except (ThanosVersionError, ManagedArgumentError) as err:
        field, _, message = str(err).partition(": ")
        return [Problem("Prometheus", ns, name, field, message)]
    return []
