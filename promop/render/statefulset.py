"""StatefulSets (one per shard) for a Prometheus, as upstream builds them (reference §3).

The pod runs `prometheus`, our `promop-config-reloader` sidecar (with upstream's
flags, so the rest of the pod is identical) and the same reloader once as init
container, which writes the env-substituted config before Prometheus starts.
Deliberate differences from upstream: the reloader's command and image (ours),
and the input hash (see compute_input_hash).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import posixpath
import re
from collections.abc import Mapping
from typing import Any, Callable

from promop.render import otlp, reloader_container, tsdb
from promop.duration import DurationError, parse_duration
from promop.render.globals import DEFAULT_LOG_DIRECTORY
from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import RenderOptions
from promop.render.shards import shard_count  # noqa: F401 (part of this module's interface)
from promop.render.service import GOVERNING_SERVICE_NAME, build_service  # noqa: F401 (part of this module's interface)
from promop.render.thanos import sidecar as thanos_sidecar
from promop.render.versions import Version, VersionError

# Paths inside the pod, as upstream.
CONFIG_DIR = "/etc/prometheus/config"
CONFIG_OUT_DIR = "/etc/prometheus/config_out"
CONFIG_FILE = f"{CONFIG_DIR}/prometheus.yaml.gz"
CONFIG_ENVSUBST_FILE = f"{CONFIG_OUT_DIR}/prometheus.env.yaml"
TLS_ASSETS_DIR = "/etc/prometheus/certs"
RULES_DIR = "/etc/prometheus/rules"
SECRETS_DIR = "/etc/prometheus/secrets"
CONFIGMAPS_DIR = "/etc/prometheus/configmaps"
WEB_CONFIG_DIR = "/etc/prometheus/web_config"
WEB_CONFIG_FILE = "web-config.yaml"
STORAGE_DIR = "/prometheus"
STORAGE_SUBPATH = "prometheus-db"

PROMETHEUS_PORT = 9090
RELOADER_PORT = 8080
RELOADER_INIT_PORT = 8081
RELOADER_COMMAND = ["promop-config-reloader"]  # upstream: /bin/prometheus-config-reloader
RELOADER_RESOURCES = reloader_container.ReloaderSettings().resources()  # replaced by the flags' settings in apply()
DEFAULT_RETENTION = "24h"
DEFAULT_TERMINATION_GRACE_PERIOD = 600
LOCALHOST = "localhost"

RETENTION_IN_CONFIG_SINCE = "3.11.0"  # from 3.11 retention lives in the config file
WEB_CONFIG_SINCE = "2.24.0"
REMOTE_WRITE_RECEIVER_FLAG_SINCE = "2.33.0"
WAL_COMPRESSION_FLAG_SINCE = "2.11.0"
OTLP_RECEIVER_SINCE = "2.47.0"  # as the feature flag otlp-write-receiver
RETENTION_TIME_FLAG_SINCE = "2.7.0"  # before: --storage.tsdb.retention, and no size limit
RECEIVER_MESSAGES_SINCE = "2.54.0"  # --web.remote-write-receiver.accepted-protobuf-messages
QUERY_MAX_SAMPLES_SINCE = "2.5.0"
NO_OVERLAPPING_COMPACTION_SINCE = "2.55.0"
GOGC_IN_CONFIG_SINCE = "2.53.0"  # before, spec.runtime.goGC is the GOGC environment variable
# spec.remoteWriteReceiverMessageVersions -> the protobuf message Prometheus accepts
_RECEIVER_MESSAGES = {"V1.0": "prometheus.WriteRequest", "V2.0": "io.prometheus.write.v2.Request"}

SECURITY_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
}
_INVALID_VOLUME_CHARS = re.compile(r"[^-a-z0-9]+")


LOG_FILE_VOLUME = "query-log-file"


def sanitize_volume_name(name: str) -> str:
    """A valid volume name (DNS label) from any name, as upstream's SanitizeVolumeName."""
    return _INVALID_VOLUME_CHARS.sub("-", name.lower())[:63].strip("-")


def _version(spec: Mapping[str, Any]) -> Version:
    try:
        return Version(spec.get("version"))
    except VersionError:
        return Version(None)  # reported by the config half


def statefulset_name(prometheus: Mapping[str, Any], shard: int) -> str:
    base = prefixed_name(prometheus)
    return base if shard == 0 else f"{base}-shard-{shard}"


def image(spec: Mapping[str, Any], options: RenderOptions) -> str:
    """The Prometheus image (see image_reference)."""
    return image_reference(spec, options.prometheus_default_base_image, lambda: _version(spec).text)


def image_reference(spec: Mapping[str, Any], default_base: str, default_version: Callable[[], str]) -> str:
    """spec.image wins; else <baseImage>:<version> (or @sha256:<sha> / :<tag>, deprecated): upstream's rule
    for Prometheus and Alertmanager alike. `default_version` is asked only when spec.version is not set."""
    if spec.get("image"):
        return spec["image"]
    base = spec.get("baseImage") or default_base
    if spec.get("sha"):
        return f"{base}@sha256:{spec['sha']}"
    if spec.get("tag"):
        return f"{base}:{spec['tag']}"
    return f"{base}:{spec.get('version') or default_version()}"


def selector_labels(prometheus: Mapping[str, Any], shard: int) -> dict[str, str]:
    """The StatefulSet's pod selector, upstream's (makeSelectorLabels plus the shard): the same selector means a
    StatefulSet upstream created is taken over in place (a selector is immutable; another one would recreate it)."""
    name = prometheus["metadata"]["name"]
    return {
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": "prometheus-operator",
        "app.kubernetes.io/name": "prometheus",
        "operator.prometheus.io/name": name,
        "operator.prometheus.io/shard": str(shard),
        "prometheus": name,
    }


def _route_prefix(spec: Mapping[str, Any]) -> str:
    return spec.get("routePrefix") or "/"


def _web_config_enabled(version: Version) -> bool:
    return version.at_least(WEB_CONFIG_SINCE)


def web_config_enabled(spec: Mapping[str, Any]) -> bool:
    """Whether this Prometheus version reads --web.config.file (2.24+)."""
    return _web_config_enabled(_version(spec))


def prometheus_args(spec: Mapping[str, Any], version: Version) -> list[str]:
    """The prometheus container's flags, in upstream's order, then spec.additionalArgs."""
    args = [f"--config.file={CONFIG_ENVSUBST_FILE}"]
    if version.major == 2:  # upstream keys on the major version: no console flags for 3.0.0 pre-releases
        args += ["--web.console.templates=/etc/prometheus/consoles",
                 "--web.console.libraries=/etc/prometheus/console_libraries"]
    if spec.get("reloadStrategy", "HTTP") != "ProcessSignal":
        args.append("--web.enable-lifecycle")
    web = spec.get("web") or {}
    if web.get("pageTitle"):
        args.append(f"--web.page-title={web['pageTitle']}")
    if web.get("maxConnections") is not None:
        args.append(f"--web.max-connections={web['maxConnections']}")
    if spec.get("enableRemoteWriteReceiver") and version.at_least(REMOTE_WRITE_RECEIVER_FLAG_SINCE):
        args.append("--web.enable-remote-write-receiver")
        messages = [_RECEIVER_MESSAGES[m] for m in spec.get("remoteWriteReceiverMessageVersions") or ()
                    if m in _RECEIVER_MESSAGES]
        if messages and version.at_least(RECEIVER_MESSAGES_SINCE):
            args.append("--web.remote-write-receiver.accepted-protobuf-messages=" + ",".join(messages))
    features = [f for f in spec.get("enableFeatures") or [] if f]
    # Remote write 2.0 needs metadata in the WAL, which Prometheus stores by default from 3.4.0.
    if (version.at_least("2.54.0") and not version.at_least("3.4.0") and "metadata-wal-records" not in features
            and any(isinstance(rw, Mapping) and rw.get("messageVersion") == "V2.0" for rw in spec.get("remoteWrite") or [])):
        features.insert(0, "metadata-wal-records")
    features += [f for f in tsdb.auto_features(spec, version) if f not in features]
    if otlp.receiver_enabled(spec) and version.at_least(OTLP_RECEIVER_SINCE):
        if version.major >= 3:
            args.append("--web.enable-otlp-receiver")
        elif "otlp-write-receiver" not in features:
            features.append("otlp-write-receiver")
    if features:
        args.append("--enable-feature=" + ",".join(features))
    if spec.get("externalUrl"):
        args.append(f"--web.external-url={spec['externalUrl']}")
    args.append(f"--web.route-prefix={_route_prefix(spec)}")
    if spec.get("logLevel") and spec["logLevel"] != "info":
        args.append(f"--log.level={spec['logLevel']}")
    if spec.get("logFormat") and spec["logFormat"] != "logfmt":
        args.append(f"--log.format={spec['logFormat']}")
    if spec.get("listenLocal"):
        args.append(f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}")
    if not version.at_least(RETENTION_TIME_FLAG_SINCE):
        args.append(f"--storage.tsdb.retention={spec.get('retention') or DEFAULT_RETENTION}")
    elif not version.at_least(RETENTION_IN_CONFIG_SINCE):
        if not spec.get("retention") and not spec.get("retentionSize"):
            args.append(f"--storage.tsdb.retention.time={DEFAULT_RETENTION}")
        else:
            if spec.get("retention"):
                args.append(f"--storage.tsdb.retention.time={spec['retention']}")
            if spec.get("retentionSize"):
                args.append(f"--storage.tsdb.retention.size={spec['retentionSize']}")
    args.append(f"--storage.tsdb.path={STORAGE_DIR}")
    if spec.get("enableAdminAPI"):
        args.append("--web.enable-admin-api")
    alert = (spec.get("rules") or {}).get("alert") or {}
    for key, flag in (("forOutageTolerance", "rules.alert.for-outage-tolerance"),
                      ("forGracePeriod", "rules.alert.for-grace-period"), ("resendDelay", "rules.alert.resend-delay")):
        if alert.get(key):
            args.append(f"--{flag}={alert[key]}")
    args += _query_args(spec.get("query") or {}, version)
    if spec.get("allowOverlappingBlocks") and version.at_least("2.11.0") and not version.at_least("2.39.0"):
        args.append("--storage.tsdb.allow-overlapping-blocks")
    compaction = thanos_sidecar.compaction_args(spec, version)  # spec.disableCompaction, or the Thanos sidecar's
    args += compaction
    if _out_of_order_window(spec) and version.at_least(NO_OVERLAPPING_COMPACTION_SINCE) and any(
            a.startswith("--storage.tsdb.max-block-duration=") for a in compaction):
        # upstream (issue 6829): with compaction off for the sidecar's uploads and out-of-order samples, Prometheus
        # must leave overlapping blocks alone, or it would compact what the sidecar has already uploaded
        args.append("--no-storage.tsdb.allow-overlapping-compaction")
    if spec.get("walCompression") is not None and version.at_least(WAL_COMPRESSION_FLAG_SINCE):
        args.append("--storage.tsdb.wal-compression" if spec["walCompression"]
                    else "--no-storage.tsdb.wal-compression")
    if _web_config_enabled(version):
        args.append(f"--web.config.file={WEB_CONFIG_DIR}/{WEB_CONFIG_FILE}")
    return _with_additional_args(args, spec.get("additionalArgs") or [])


def _out_of_order_window(spec: Mapping[str, Any]) -> bool:
    """Whether spec.tsdb.outOfOrderTimeWindow is set to more than zero."""
    tsdb = spec.get("tsdb")
    window = tsdb.get("outOfOrderTimeWindow") if isinstance(tsdb, Mapping) else None
    if not window:
        return False
    try:
        return parse_duration(window) > 0
    except DurationError:
        return False  # reported by the config half


def _query_args(query: Mapping[str, Any], version: Version) -> list[str]:
    """spec.query's flags, as upstream: zero counts are left out (Prometheus would take 0 literally), and
    --query.max-samples only from 2.5.0, which introduced it."""
    out = []
    if query.get("lookbackDelta"):
        out.append(f"--query.lookback-delta={query['lookbackDelta']}")
    for key, flag in (("maxConcurrency", "query.max-concurrency"), ("maxSamples", "query.max-samples")):
        value = query.get(key)
        if isinstance(value, int) and value > 0 and (key != "maxSamples" or version.at_least(QUERY_MAX_SAMPLES_SINCE)):
            out.append(f"--{flag}={value}")
    if query.get("timeout"):
        out.append(f"--query.timeout={query['timeout']}")
    return out


def _with_additional_args(args: list[str], additional: list[Mapping[str, Any]]) -> list[str]:
    """Append spec.additionalArgs, skipping any flag the operator already manages (upstream errors)."""
    managed = {a.split("=", 1)[0].lstrip("-").removeprefix("no-") for a in args}
    out = list(args)
    for arg in additional:
        name = str(arg.get("name", "")).lstrip("-")
        if not name or name.removeprefix("no-") in managed:
            continue
        out.append(f"--{name}={arg['value']}" if arg.get("value") not in (None, "") else f"--{name}")
    return out


def conflicting_additional_args(spec: Mapping[str, Any]) -> list[str]:
    """Names in spec.additionalArgs that clash with operator-managed flags (they are skipped)."""
    managed = {a.split("=", 1)[0].lstrip("-").removeprefix("no-")
               for a in prometheus_args({**spec, "additionalArgs": []}, _version(spec))}
    return [str(a.get("name")) for a in spec.get("additionalArgs") or []
            if str(a.get("name", "")).lstrip("-").removeprefix("no-") in managed]


def _probes(spec: Mapping[str, Any]) -> tuple[dict, dict, dict]:
    """(startup, readiness, liveness) as upstream's BuildProbes."""
    prefix = _route_prefix(spec)
    if spec.get("listenLocal"):
        def handler(path: str) -> dict:
            url = f"http://localhost:{PROMETHEUS_PORT}{posixpath.join(prefix, path.lstrip('/'))}"
            script = (f'if [ -x "$(command -v curl)" ]; then exec curl --fail {url}; '
                      f'elif [ -x "$(command -v wget)" ]; then exec wget -q -O /dev/null {url}; else exit 1; fi')
            return {"exec": {"command": ["sh", "-c", script]}}
    else:
        def handler(path: str) -> dict:
            return {"httpGet": {"path": posixpath.join(prefix, path.lstrip("/")), "port": spec.get("portName") or "web",
                                "scheme": "HTTP"}}
    ready = handler("/-/ready")
    period, failures = startup_period_and_failures(spec.get("maximumStartupDurationSeconds"))
    startup = {**ready, "failureThreshold": failures, "periodSeconds": period, "timeoutSeconds": 3}
    readiness = {**ready, "failureThreshold": 3, "periodSeconds": 5, "timeoutSeconds": 3}
    liveness = {**handler("/-/healthy"), "failureThreshold": 6, "periodSeconds": 5, "timeoutSeconds": 3}
    return startup, readiness, liveness


# promop's deliberate deviation (docs/reloader.md "Resources"): the startup probe polls every second
# for upstream's whole budget. Upstream's 15 s period (or up to 60 s from maximumStartupDurationSeconds)
# makes a Prometheus that answers /-/ready 2-3 s after it starts wait for the second probe: Ready in
# 17-18 s on the real node instead of 7-8 s.
STARTUP_PROBE_PERIOD_SECONDS = 1


def upstream_startup_period_and_failures(maximum: Any) -> tuple[int, int]:
    """(periodSeconds, failureThreshold) of upstream's startup probe: 15s x 60 by default; from
    spec.maximumStartupDurationSeconds (>= 60) one probe a minute or more often, covering that duration."""
    if not isinstance(maximum, int) or isinstance(maximum, bool) or maximum < 60:
        return 15, 60
    failures = math.ceil(maximum / 60)
    return math.ceil(maximum / failures), failures


def startup_period_and_failures(maximum: Any) -> tuple[int, int]:
    """(periodSeconds, failureThreshold) of promop's startup probe: upstream's total budget (its period
    times its failure threshold) probed every STARTUP_PROBE_PERIOD_SECONDS, so the pod is Ready within
    a second of Prometheus answering, yet a slow WAL replay gets as long as upstream gives it."""
    period, failures = upstream_startup_period_and_failures(maximum)
    return STARTUP_PROBE_PERIOD_SECONDS, -(-period * failures // STARTUP_PROBE_PERIOD_SECONDS)


def topology_spread_constraints(spec: Mapping[str, Any], selector: Mapping[str, str]) -> list[dict]:
    """spec.topologySpreadConstraints as the pod's: `additionalLabelSelectors` (not a Kubernetes field) adds
    the pods' selector labels to the constraint's labelSelector: all of them (ShardAndResourceName) or all
    but the shard label (ResourceName), as upstream."""
    out = []
    for tsc in spec.get("topologySpreadConstraints") or ():
        if not isinstance(tsc, Mapping):
            continue
        core = {k: copy.deepcopy(v) for k, v in tsc.items() if k != "additionalLabelSelectors"}
        mode = tsc.get("additionalLabelSelectors")
        if mode in ("ShardAndResourceName", "ResourceName"):
            label_selector = core.setdefault("labelSelector", {})
            match = label_selector.setdefault("matchLabels", {})
            for key, value in selector.items():
                if not (mode == "ResourceName" and key == "operator.prometheus.io/shard"):
                    match[key] = value
        out.append(core)
    return out


def _storage(prometheus: Mapping[str, Any]) -> tuple[dict | None, dict | None, str]:
    """(pod volume or None, volumeClaimTemplate or None, db mount subPath)."""
    spec = prometheus.get("spec") or {}
    storage = spec.get("storage")
    vol_name = f"{prefixed_name(prometheus)}-db"
    if not storage:
        return {"name": vol_name, "emptyDir": {}}, None, ""
    sub_path = "" if storage.get("disableMountSubPath") else STORAGE_SUBPATH
    if storage.get("emptyDir") is not None:
        return {"name": vol_name, "emptyDir": dict(storage["emptyDir"])}, None, sub_path
    if storage.get("ephemeral") is not None:
        return {"name": vol_name, "ephemeral": dict(storage["ephemeral"])}, None, sub_path
    template = storage.get("volumeClaimTemplate")
    if not template:
        return {"name": vol_name, "emptyDir": {}}, None, sub_path
    md = template.get("metadata") or {}
    pvc_md: dict = {"name": md.get("name") or vol_name}
    for key in ("labels", "annotations"):
        if md.get(key):
            pvc_md[key] = dict(md[key])
    pvc_spec = dict(template.get("spec") or {})
    pvc_spec.setdefault("accessModes", ["ReadWriteOnce"])
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": pvc_md, "spec": pvc_spec}
    return None, pvc, sub_path


def _volumes_and_mounts(prometheus: Mapping[str, Any], rule_cms: list[str], tls_secrets: list[str],
                        version: Version) -> tuple[list[dict], list[dict], list[dict], dict | None]:
    """(pod volumes, prometheus mounts, reloader mounts, volumeClaimTemplate) in upstream order."""
    spec = prometheus.get("spec") or {}
    base = prefixed_name(prometheus)
    volumes: list[dict] = [
        {"name": "config", "secret": {"secretName": base}},
        {"name": "tls-assets", "projected": {"sources": [{"secret": {"name": s}} for s in tls_secrets]}},
        {"name": "config-out", "emptyDir": {"medium": "Memory"}},
    ]
    prom_mounts: list[dict] = [
        {"mountPath": CONFIG_OUT_DIR, "name": "config-out", "readOnly": True},
        {"mountPath": TLS_ASSETS_DIR, "name": "tls-assets", "readOnly": True},
    ]
    db_volume, pvc, sub_path = _storage(prometheus)
    db_mount: dict = {"mountPath": STORAGE_DIR, "name": f"{base}-db"}
    if pvc is not None:
        db_mount["name"] = pvc["metadata"]["name"]
    if sub_path:
        db_mount["subPath"] = sub_path
    prom_mounts.append(db_mount)
    prom_mounts += [dict(m) for m in spec.get("volumeMounts") or []]
    for kind, dir_, items in (("secret", SECRETS_DIR, spec.get("secrets")), ("configmap", CONFIGMAPS_DIR,
                                                                              spec.get("configMaps"))):
        for item in items or []:
            vol = sanitize_volume_name(f"{kind}-{item}")
            source = {"secret": {"secretName": item}} if kind == "secret" else {"configMap": {"name": item}}
            volumes.append({"name": vol, **source})
            prom_mounts.append({"mountPath": f"{dir_}/{item}", "name": vol, "readOnly": True})
    if any(spec.get(k) and "/" not in str(spec[k]) for k in ("queryLogFile", "scrapeFailureLogFile")):
        # upstream: a bare log file name lives on an emptyDir at /var/log/prometheus
        volumes.append({"name": LOG_FILE_VOLUME, "emptyDir": {}})
        prom_mounts.append({"mountPath": DEFAULT_LOG_DIRECTORY, "name": LOG_FILE_VOLUME})
    reloader_mounts: list[dict] = [
        {"mountPath": CONFIG_DIR, "name": "config"},
        {"mountPath": CONFIG_OUT_DIR, "name": "config-out"},
    ]
    for cm in rule_cms:
        volumes.append({"name": cm, "configMap": {"name": cm, "optional": True}})
        mount = {"mountPath": f"{RULES_DIR}/{cm}", "name": cm, "readOnly": True}
        prom_mounts.append(mount)
        reloader_mounts.append(dict(mount))
    if _web_config_enabled(version):
        volumes.append({"name": "web-config", "secret": {"secretName": f"{base}-web-config"}})
        web_mount = {"mountPath": f"{WEB_CONFIG_DIR}/{WEB_CONFIG_FILE}", "name": "web-config", "readOnly": True,
                     "subPath": WEB_CONFIG_FILE}
        prom_mounts.append(web_mount)
        if spec.get("web") is not None:  # upstream: the reloader reads the web config only when spec.web is set
            reloader_mounts.append(dict(web_mount))
    if db_volume is not None:
        volumes.append(db_volume)
    volumes += [dict(v) for v in spec.get("volumes") or []]
    return volumes, prom_mounts, reloader_mounts, pvc


def reloader_args(spec: Mapping[str, Any], rule_cms: list[str], init: bool) -> list[str]:
    """Upstream-compatible flags for promop-config-reloader (main sidecar or init container)."""
    if init:
        args = ["--watch-interval=0", f"--listen-address=:{RELOADER_INIT_PORT}"]
    else:
        args = [f"--listen-address={LOCALHOST if reloader_listens_locally(spec, init) else ''}:{RELOADER_PORT}"]
        if spec.get("web") is not None:
            args.append(f"--web-config-file={WEB_CONFIG_DIR}/{WEB_CONFIG_FILE}")
        base = f"http://{LOCALHOST}:{PROMETHEUS_PORT}"
        if spec.get("reloadStrategy") == "ProcessSignal":
            args += ["--reload-method=signal",
                     f"--runtimeinfo-url={base}{posixpath.join(_route_prefix(spec), 'api/v1/status/runtimeinfo')}"]
        else:
            args.append(f"--reload-url={base}{posixpath.join(_route_prefix(spec), '-/reload')}")
    args += [f"--config-file={CONFIG_FILE}", f"--config-envsubst-file={CONFIG_ENVSUBST_FILE}"]
    args += [f"--watched-dir={RULES_DIR}/{cm}" for cm in rule_cms]
    args.append(f"--watched-dir={CONFIG_DIR}")
    return args


def reloader_listens_locally(spec: Mapping[str, Any], init: bool) -> bool:
    """Upstream passes `listenLocal` to the main reloader in HTTP reload mode only: then it listens on
    localhost:8080 with no container port. The init container, and the reloader of ProcessSignal mode,
    listen on every address whatever listenLocal says."""
    return bool(spec.get("listenLocal")) and not init and spec.get("reloadStrategy") != "ProcessSignal"


def _reloader(name: str, spec: Mapping[str, Any], options: RenderOptions, rule_cms: list[str], shard: int,
              mounts: list[dict], init: bool) -> dict:
    port_name, port = ("reloader-init", RELOADER_INIT_PORT) if init else ("reloader-web", RELOADER_PORT)
    container = {
        "name": name,
        "image": options.config_reloader_image,
        "command": list(RELOADER_COMMAND),
        "args": reloader_args(spec, rule_cms, init),
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "SHARD", "value": str(shard)},
        ],
        "ports": [{"containerPort": port, "name": port_name, "protocol": "TCP"}],
        "resources": RELOADER_RESOURCES,
        "securityContext": SECURITY_CONTEXT,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [dict(m) for m in mounts],
    }
    local = reloader_listens_locally(spec, init)
    if local:
        del container["ports"]
    # the flags' resources and probes (exec probes when it listens on localhost only, as upstream)
    return reloader_container.apply(container, options.config_reloader, init, local)


_MERGE_KEYS = {"env": "name", "ports": "containerPort", "volumeMounts": "mountPath", "containers": "name",
               "initContainers": "name", "envFrom": None}


def strategic_merge(base: Any, patch: Any, key: str = "") -> Any:
    """A small strategic merge: maps merge, lists of named items merge by key, other lists replace."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = strategic_merge(base[k], v, k) if k in base else v
        return out
    merge_key = _MERGE_KEYS.get(key)
    if merge_key and isinstance(base, list) and isinstance(patch, list):
        out = list(base)
        index = {item.get(merge_key): i for i, item in enumerate(out) if isinstance(item, dict)}
        for item in patch:
            k = item.get(merge_key) if isinstance(item, dict) else None
            if k is not None and k in index:
                out[index[k]] = strategic_merge(out[index[k]], item)
            else:
                out.append(item)
        return out
    return patch


def pod_spec_passthrough(spec: Mapping[str, Any]) -> dict:
    out: dict = {}
    for key in ("serviceAccountName", "nodeSelector", "priorityClassName", "tolerations", "affinity",
                "topologySpreadConstraints", "imagePullSecrets", "securityContext",
                "dnsConfig", "enableServiceLinks", "hostUsers", "schedulerName"):
        if spec.get(key) not in (None, [], {}):
            out[key] = spec[key]
    if spec.get("hostAliases"):
        out["hostAliases"] = [{"hostnames": h.get("hostnames", []), "ip": h.get("ip")} for h in spec["hostAliases"]]
    if spec.get("hostNetwork"):
        out["hostNetwork"] = True
        out["dnsPolicy"] = "ClusterFirstWithHostNet"
    if spec.get("dnsPolicy"):
        out["dnsPolicy"] = spec["dnsPolicy"]
    return out


def build_statefulset(prometheus: dict, options: RenderOptions, rule_configmap_names: list[str],
                      tls_secret_names: list[str], input_hash: str, shard: int) -> dict:
    """The StatefulSet for one shard."""
    md = prometheus["metadata"]
    spec = prometheus.get("spec") or {}
    version = _version(spec)
    tls_secrets = list(tls_secret_names) or [f"{prefixed_name(prometheus)}-tls-assets-0"]
    rule_cms = list(rule_configmap_names)
    volumes, prom_mounts, reloader_mounts, pvc = _volumes_and_mounts(prometheus, rule_cms, tls_secrets, version)
    sel = selector_labels(prometheus, shard)

    startup, readiness, liveness = _probes(spec)
    prom: dict = {
        "name": "prometheus",
        "image": image(spec, options),
        "args": prometheus_args(spec, version),
        "ports": [] if spec.get("listenLocal") else [
            {"containerPort": PROMETHEUS_PORT, "name": spec.get("portName") or "web", "protocol": "TCP"}],
        "startupProbe": startup,
        "readinessProbe": readiness,
        "livenessProbe": liveness,
        "resources": dict(spec.get("resources") or {}),
        "securityContext": SECURITY_CONTEXT,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": prom_mounts,
    }
    if not prom["ports"]:
        del prom["ports"]
    gogc = (spec.get("runtime") or {}).get("goGC") if isinstance(spec.get("runtime"), Mapping) else None
    if gogc is not None and not version.at_least(GOGC_IN_CONFIG_SINCE):  # upstream: the config has no gogc yet
        prom["env"] = [{"name": "GOGC", "value": str(gogc)}]
    containers = [prom, _reloader("config-reloader", spec, options, rule_cms, shard, reloader_mounts, init=False)]
    if thanos_sidecar.enabled(spec):  # the Thanos sidecar hook (promop/render/thanos/sidecar.py)
        containers.append(thanos_sidecar.build_container(spec, version, prom_mounts, options.thanos_default_base_image))
        volumes = thanos_sidecar.with_volumes(volumes, prometheus)
    init_containers = [_reloader("init-config-reloader", spec, options, rule_cms, shard, reloader_mounts, init=True)]
    if spec.get("imagePullPolicy"):
        for c in containers + init_containers:
            c["imagePullPolicy"] = spec["imagePullPolicy"]
    containers = strategic_merge(containers, spec.get("containers") or [], "containers")
    init_containers = strategic_merge(init_containers, spec.get("initContainers") or [], "initContainers")

    pod_md = spec.get("podMetadata") or {}
    pod_labels = {**(pod_md.get("labels") or {}), "app.kubernetes.io/version": str(version).lstrip("v"),
                  "app.kubernetes.io/managed-by": "prometheus-operator", **sel}
    pod_annotations = {**(pod_md.get("annotations") or {}), "kubectl.kubernetes.io/default-container": "prometheus"}
    pod_spec: dict = {
        "automountServiceAccountToken": spec.get("automountServiceAccountToken", True),
        "containers": containers,
        "initContainers": init_containers,
        "terminationGracePeriodSeconds": spec.get("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD),
        "volumes": volumes,
        **pod_spec_passthrough(spec),
    }
    spread = topology_spread_constraints(spec, {**sel, "app.kubernetes.io/managed-by": "prometheus-operator"})
    if spread:  # replaces the passed-through list (Prometheus's constraints carry additionalLabelSelectors)
        pod_spec["topologySpreadConstraints"] = spread
    if spec.get("reloadStrategy") == "ProcessSignal":
        pod_spec["shareProcessNamespace"] = True

    labels = {**(md.get("labels") or {}), "operator.prometheus.io/mode": "server", **sel}
    annotations = statefulset_annotations(md, input_hash)
    replicas = spec.get("replicas", 1) if spec.get("replicas") is not None else 1
    sts_spec = statefulset_spec(spec, replicas, sel, pod_labels, pod_annotations, pod_spec, pvc,
                                GOVERNING_SERVICE_NAME)
    return copy.deepcopy({  # no shared sub-objects between fields or shards
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": managed_metadata(prometheus, statefulset_name(prometheus, shard), options, labels=labels,
                                     annotations=annotations),
        "spec": sts_spec,
    })


def statefulset_annotations(metadata: Mapping[str, Any], input_hash: str) -> dict[str, str]:
    """The owner's annotations (but kubectl's own) and the input hash that says when to update."""
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items()
                   if not k.startswith("kubectl.kubernetes.io/")}
    annotations["prometheus-operator-input-hash"] = input_hash
    return annotations


def statefulset_spec(spec: Mapping[str, Any], replicas: int, selector: Mapping[str, str],
                     pod_labels: Mapping[str, str], pod_annotations: Mapping[str, str], pod_spec: dict,
                     pvc: dict | None, governing_service: str) -> dict:
    """The StatefulSet spec around a pod spec, the same for Prometheus and Alertmanager (upstream builds
    both the same way): policy, selector, governing Service (spec.serviceName, else `governing_service`),
    update strategy, PVC template."""
    sts_spec: dict = {
        "podManagementPolicy": spec.get("podManagementPolicy") or "Parallel",
        "replicas": replicas,
        "selector": {"matchLabels": dict(sorted(selector.items()))},
        "serviceName": spec.get("serviceName") or governing_service,
        "template": {
            "metadata": {"annotations": dict(sorted(pod_annotations.items())),
                         "labels": dict(sorted(pod_labels.items()))},
            "spec": pod_spec,
        },
        "updateStrategy": dict(spec.get("updateStrategy") or {"type": "RollingUpdate"}),
    }
    if spec.get("minReadySeconds") is not None:
        sts_spec["minReadySeconds"] = spec["minReadySeconds"]
    if spec.get("persistentVolumeClaimRetentionPolicy"):
        sts_spec["persistentVolumeClaimRetentionPolicy"] = spec["persistentVolumeClaimRetentionPolicy"]
    if pvc is not None:
        sts_spec["volumeClaimTemplates"] = [pvc]
    return sts_spec


def build_statefulsets(
    prometheus: dict,
    options: RenderOptions,
    rule_configmap_names: list[str],
    tls_secret_names: list[str],
    input_hash: str,
) -> list[dict]:
    """One StatefulSet per shard: prometheus-<name>, prometheus-<name>-shard-<n>."""
    return [build_statefulset(prometheus, options, rule_configmap_names, tls_secret_names, input_hash, shard)
            for shard in range(shard_count(prometheus.get("spec") or {}))]


def compute_input_hash(
    prometheus: dict, options: RenderOptions, rule_configmap_names: list[str], tls_secret_names: list[str]
) -> str:
    """A deterministic decimal hash of what the StatefulSets are built from.

    Covers what upstream's covers (labels, annotations, generation, operator
    options, rule ConfigMap names as a set, the number of TLS Secrets), plus the
    Prometheus spec itself, since objects read from files carry no generation.
    Unlike upstream it does not cover the existing StatefulSet (the renderer is
    pure), and like upstream not the generated config (the reloader handles that).
    """
    md = prometheus.get("metadata") or {}
    payload = {
        "labels": md.get("labels") or {},
        "annotations": md.get("annotations") or {},
        "generation": md.get("generation"),
        "spec": prometheus.get("spec") or {},
        "options": {
            "labels": dict(options.labels),
            "annotations": dict(options.annotations),
            "config_reloader_image": options.config_reloader_image,
            "prometheus_default_base_image": options.prometheus_default_base_image,
            "operator_version": options.operator_version,
        },
        "rule_configmap_names": sorted(set(rule_configmap_names)),
        "tls_shards": len(tls_secret_names),
    }
    if options.thanos_default_base_image != RenderOptions().thanos_default_base_image:  # only when changed
        payload["options"]["thanos_default_base_image"] = options.thanos_default_base_image
    if options.fast_reload:  # only when on, so turning the feature out does not roll every StatefulSet
        payload["options"]["fast_reload"] = True
    if not options.config_reloader.is_default():  # only when changed, as above
        payload["options"]["config_reloader"] = options.config_reloader.hash_fields()
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).digest()
    return str(int.from_bytes(digest[:8], "big"))
