"""The thanos-ruler container's flags, in upstream's order, and the files they point at.

Config held in Secrets (object storage, tracing, alert relabeling) is mounted as files from the user's
Secret (upstream: a volume per Secret with just that key); query and Alertmanager configs come through
environment variables. Version gates as upstream's makeStatefulSetSpec.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from promop.render.thanos.sidecar import grpc_tls_args
from promop.render.versions import Version

STORAGE_DIR = "/thanos/data"
CONFIG_DIR = "/etc/thanos/config"
RULES_DIR = "/etc/thanos/rules"
WEB_CONFIG_FILE = "/etc/thanos/web_config/web-config.yaml"
REMOTE_WRITE_FILE = f"{CONFIG_DIR}/remote-write-config/remote-write.yaml"
GRPC_PORT = 10901
HTTP_PORT = 10902
REPLICA_LABEL = "thanos_ruler_replica"
DEFAULT_EVALUATION_INTERVAL = "15s"
DEFAULT_RETENTION = "24h"

# flag -> (spec field, first Thanos version that has it)
GATED_FLAGS = (
    ("for-outage-tolerance", "ruleOutageTolerance", "0.30.0"),
    ("for-grace-period", "ruleGracePeriod", "0.30.0"),
    ("resend-delay", "resendDelay", None),
    ("rule-query-offset", "ruleQueryOffset", "0.38.0"),
    ("rule-concurrent-evaluation", "ruleConcurrentEval", "0.37.0"),
)
ENABLE_FEATURES_SINCE = "0.39.0"
# spec field for a Secret, spec field for a file path, volume name, flag (the file form)
SECRET_FILES = (
    ("objectStorageConfig", "objectStorageConfigFile", "objstorage-config", "objstore.config-file"),
    ("tracingConfig", "tracingConfigFile", "tracing-config", "tracing.config-file"),
    ("alertRelabelConfigs", "alertRelabelConfigFile", "alertrelabel-config", "alert.relabel-config-file"),
)


@dataclass
class RulerArgs:
    args: list[tuple[str, Any]] = field(default_factory=list)
    env: list[dict] = field(default_factory=list)
    volumes: list[dict] = field(default_factory=list)
    mounts: list[dict] = field(default_factory=list)


def _secret_file(out: RulerArgs, spec: Mapping[str, Any], secret_key: str, file_key: str, volume: str,
                 flag: str) -> None:
    if spec.get(file_key):
        out.args.append((flag, spec[file_key]))
        return
    ref = spec.get(secret_key)
    if not isinstance(ref, Mapping) or not ref.get("key"):
        return
    key = str(ref["key"])
    out.volumes.append({"name": volume, "secret": {"secretName": ref.get("name", ""),
                                                   "items": [{"key": key, "path": key}]}})
    mount_dir = posixpath.join(CONFIG_DIR, volume)
    out.mounts.append({"mountPath": mount_dir, "name": volume, "readOnly": True})
    out.args.append((flag, posixpath.join(mount_dir, key)))


def _env_config(out: RulerArgs, spec: Mapping[str, Any], key: str, env: str, flag: str) -> bool:
    ref = spec.get(key)
    if not isinstance(ref, Mapping):
        return False
    out.args.append((flag, f"$({env})"))
    out.env.append({"name": env, "valueFrom": {"secretKeyRef": dict(ref)}})
    return True


def _labels(spec: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The replica label first, then spec.labels sorted by name (upstream keeps a replica label set
    by the user in its sorted place too); then alert.label-drop: the replica label, then the user's."""
    out: list[tuple[str, Any]] = [("label", f'{REPLICA_LABEL}="$(POD_NAME)"')]
    out += [("label", f'{k}="{v}"') for k, v in sorted((spec.get("labels") or {}).items())]
    out += [("alert.label-drop", label) for label in [REPLICA_LABEL, *(spec.get("alertDropLabels") or [])]]
    return out


def ruler_args(spec: Mapping[str, Any], version: Version, rule_configmaps: list[str]) -> RulerArgs:
    """Managed flags, env vars, and the Secret volumes/mounts those flags read."""
    out = RulerArgs()
    out.args += [("data-dir", STORAGE_DIR),
                 ("eval-interval", spec.get("evaluationInterval") or DEFAULT_EVALUATION_INTERVAL),
                 ("tsdb.retention", spec.get("retention") or DEFAULT_RETENTION)]
    for flag, key, since in GATED_FLAGS:
        if spec.get(key) is not None and (since is None or version.at_least(since)):
            out.args.append((flag, spec[key]))
    features = [f for f in spec.get("enableFeatures") or [] if f]
    if features and version.at_least(ENABLE_FEATURES_SINCE):
        out.args.append(("enable-feature", ",".join(features)))
    out.args += _labels(spec)
    if not _env_config(out, spec, "queryConfig", "QUERY_CONFIG", "query.config"):
        out.args += [("query", e) for e in spec.get("queryEndpoints") or []]
    if not _env_config(out, spec, "alertmanagersConfig", "ALERTMANAGERS_CONFIG", "alertmanagers.config"):
        out.args += [("alertmanagers.url", u) for u in spec.get("alertmanagersUrl") or []]
    for secret_key, file_key, volume, flag in SECRET_FILES:
        _secret_file(out, spec, secret_key, file_key, volume, flag)
    out.args += [("rule-file", f"{RULES_DIR}/{cm}/*.yaml") for cm in rule_configmaps]
    bind = "127.0.0.1" if spec.get("listenLocal") else ""
    out.args += [("grpc-address", f"{bind}:{GRPC_PORT}"), ("http-address", f"{bind}:{HTTP_PORT}")]
    out.args += grpc_tls_args(spec, version)
    for key, flag in (("logLevel", "log.level"), ("logFormat", "log.format"), ("alertQueryUrl", "alert.query-url"),
                      ("externalPrefix", "web.external-prefix"), ("routePrefix", "web.route-prefix")):
        if spec.get(key):
            out.args.append((flag, spec[key]))
    out.args.append(("http.config", WEB_CONFIG_FILE))
    if spec.get("remoteWrite"):  # stateless mode: samples go out by remote write, not to a local TSDB
        out.args.append(("remote-write.config-file", REMOTE_WRITE_FILE))
    return out
