"""The thanos-ruler container's flags, in upstream's order, and the files they point at.

Every config held in a Secret (remote write, query, Alertmanagers, object storage, tracing, alert
relabeling) is mounted as a file: a volume per Secret with just that key, under /etc/thanos/config/<volume>/
(upstream's mountSecretKey). Version gates as upstream's makeStatefulSetSpec.
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
TLS_ASSETS_DIR = "/etc/thanos/certs"
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
# spec field for a Secret, spec field for a file path (wins), volume name, flag
SECRET_FILES = (
    ("objectStorageConfig", "objectStorageConfigFile", "objstorage-config", "objstore.config-file"),
    ("tracingConfig", "tracingConfigFile", "tracing-config", "tracing.config-file"),
    ("alertRelabelConfigs", "alertRelabelConfigFile", "alertrelabel-config", "alert.relabel-config-file"),
)
REMOTE_WRITE_SINCE = "0.24.0"
WEB_CONFIG_SINCE = "0.21.0"


@dataclass
class RulerArgs:
    args: list[tuple[str, Any]] = field(default_factory=list)
    volumes: list[dict] = field(default_factory=list)
    mounts: list[dict] = field(default_factory=list)


def _secret_file(out: RulerArgs, spec: Mapping[str, Any], secret_key: str, file_key: str, volume: str,
                 flag: str) -> None:
    if spec.get(file_key):
        out.args.append((flag, spec[file_key]))
    elif isinstance(spec.get(secret_key), Mapping):
        out.args.append((flag, _mounted(out, spec[secret_key], volume)))


def _mounted(out: RulerArgs, ref: Mapping[str, Any], volume: str) -> str:
    """Mount one key of a Secret under /etc/thanos/config/<volume>/ (upstream's mountSecretKey); its path."""
    key = str(ref.get("key", ""))
    out.volumes.append({"name": volume, "secret": {"secretName": ref.get("name", ""),
                                                   "items": [{"key": key, "path": key}]}})
    mount_dir = posixpath.join(CONFIG_DIR, volume)
    out.mounts.append({"mountPath": mount_dir, "name": volume, "readOnly": True})
    return posixpath.join(mount_dir, key)


def _labels(spec: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The replica label first, then spec.labels sorted by name (upstream keeps a replica label set
    by the user in its sorted place too); then alert.label-drop: the replica label, then the user's."""
    out: list[tuple[str, Any]] = [("label", f'{REPLICA_LABEL}="$(POD_NAME)"')]
    out += [("label", f'{k}="{v}"') for k, v in sorted((spec.get("labels") or {}).items())]
    out += [("alert.label-drop", label) for label in [REPLICA_LABEL, *(spec.get("alertDropLabels") or [])]]
    return out


def ruler_args(spec: Mapping[str, Any], version: Version, config_secret: str) -> RulerArgs:
    """Managed flags (upstream's order), env vars, and the Secret volumes/mounts those flags read;
    the first volume is always the `-config` Secret's remote-write.yaml."""
    out = RulerArgs()
    out.args += [("data-dir", STORAGE_DIR),
                 ("eval-interval", spec.get("evaluationInterval") or DEFAULT_EVALUATION_INTERVAL),
                 ("tsdb.retention", spec.get("retention") or DEFAULT_RETENTION)]
    for flag, key, since in GATED_FLAGS:
        if spec.get(key) not in (None, "", 0) and (since is None or version.at_least(since)):
            out.args.append((flag, spec[key]))
    features = [f for f in spec.get("enableFeatures") or [] if f]
    if features and version.at_least(ENABLE_FEATURES_SINCE):
        out.args.append(("enable-feature", ",".join(features)))
    out.args += _labels(spec)
    if spec.get("listenLocal"):
        out.args.append(("http-address", f"localhost:{HTTP_PORT}"))
    if spec.get("logLevel") and spec["logLevel"] != "info":
        out.args.append(("log.level", spec["logLevel"]))
    if spec.get("logFormat"):
        out.args.append(("log.format", spec["logFormat"]))
    out.args.append(("rule-file", f"{RULES_DIR}/*/*.yaml"))
    remote_write = _mounted(out, {"name": config_secret, "key": "remote-write.yaml"}, "remote-write-config")
    if spec.get("remoteWrite") and version.at_least(REMOTE_WRITE_SINCE):  # stateless mode
        out.args.append(("remote-write.config-file", remote_write))
    if isinstance(spec.get("queryConfig"), Mapping):
        out.args.append(("query.config-file", _mounted(out, spec["queryConfig"], "query-config")))
    else:
        out.args += [("query", e) for e in spec.get("queryEndpoints") or []]
    if isinstance(spec.get("alertmanagersConfig"), Mapping):
        out.args.append(("alertmanagers.config-file", _mounted(out, spec["alertmanagersConfig"], "alertmanager-config")))
    else:
        out.args += [("alertmanagers.url", u) for u in spec.get("alertmanagersUrl") or []]
    for secret_key, file_key, volume, flag in SECRET_FILES:
        _secret_file(out, spec, secret_key, file_key, volume, flag)
    out.args += grpc_tls_args(spec, version)
    for key, flag in (("externalPrefix", "web.external-prefix"), ("routePrefix", "web.route-prefix"),
                      ("alertQueryUrl", "alert.query-url")):
        if spec.get(key):
            out.args.append((flag, spec[key]))
    return out
