"""The Alertmanager StatefulSet and the `alertmanager-operated` Service, as upstream builds them (reference §2-§3).

The pod runs `alertmanager`, our `promop-config-reloader` sidecar (upstream's
flags; it gunzips the generated config, expands `$(VAR)` and calls
`/-/reload`) and the same reloader once as init container. Clustering is off
for one replica (`--cluster.listen-address=`) and on with one
`--cluster.peer` per replica otherwise.
"""

from __future__ import annotations

import copy
import hashlib
import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from promop.render.alertmanager.common import DEFAULT_ALERTMANAGER_BASE_IMAGE, DEFAULT_ALERTMANAGER_VERSION, Version
from promop.render.alertmanager.meta import managed_metadata, owner_reference, prefixed_name
from promop.duration import DurationError, parse_size
from promop.render.meta import MANAGED_BY_LABELS
from promop.render.model import RenderOptions
from promop.render import reloader_container
from promop.render.statefulset import (RELOADER_COMMAND, RELOADER_RESOURCES, SECURITY_CONTEXT, image_reference,
                                       pod_spec_passthrough, sanitize_volume_name, statefulset_annotations,
                                       statefulset_spec, strategic_merge)
from promop.render.versions import VersionError
from promop.render.alertmanager.webtls import CLUSTER_TLS_FILE, CLUSTER_TLS_SINCE, WEB_TLS_SINCE, TLSMounts

GOVERNING_SERVICE_NAME = "alertmanager-operated"
CONFIG_DIR = "/etc/alertmanager/config"
CONFIG_OUT_DIR = "/etc/alertmanager/config_out"
CONFIG_FILE = f"{CONFIG_DIR}/alertmanager.yaml.gz"
CONFIG_ENVSUBST_FILE = f"{CONFIG_OUT_DIR}/alertmanager.env.yaml"
CERTS_DIR = "/etc/alertmanager/certs"
TEMPLATES_DIR = "/etc/alertmanager/templates"
SECRETS_DIR = "/etc/alertmanager/secrets"
CONFIGMAPS_DIR = "/etc/alertmanager/configmaps"
WEB_CONFIG_DIR = "/etc/alertmanager/web_config"
WEB_CONFIG_FILE = f"{WEB_CONFIG_DIR}/web-config.yaml"
STORAGE_DIR = "/alertmanager"
WEB_PORT, MESH_PORT, RELOADER_PORT, RELOADER_INIT_PORT = 9093, 9094, 8080, 8081
DEFAULT_RETENTION = "120h"
DEFAULT_TERMINATION_GRACE_PERIOD = 120
LOCALHOST = "localhost"


def version_of(spec: Mapping[str, Any]) -> Version:
    try:
        return Version(spec.get("version") or DEFAULT_ALERTMANAGER_VERSION)
    except VersionError:
        return Version(DEFAULT_ALERTMANAGER_VERSION)  # reported by the config half


def replicas(spec: Mapping[str, Any]) -> int:
    value = spec.get("replicas")
    if not isinstance(value, int) or isinstance(value, bool):
        return 1
    return max(value, 0)


def image(spec: Mapping[str, Any], options: "AMRenderOptions") -> str:
    """The Alertmanager image: the same rule as Prometheus's (render.statefulset.image_reference)."""
    return image_reference(spec, options.alertmanager_default_base_image, lambda: DEFAULT_ALERTMANAGER_VERSION)


def selector_labels(alertmanager: Mapping[str, Any], options: RenderOptions) -> dict[str, str]:
    name = alertmanager["metadata"]["name"]
    return {"app.kubernetes.io/name": "alertmanager", "app.kubernetes.io/managed-by": "prometheus-operator",
            "app.kubernetes.io/instance": name, "alertmanager": name, **options.labels}


def _prefix(spec: Mapping[str, Any]) -> str:
    return spec.get("routePrefix") or "/"


def _web_tls(spec: Mapping[str, Any], version: Version) -> bool:
    return bool((spec.get("web") or {}).get("tlsConfig")) and version.at_least(WEB_TLS_SINCE)


def alertmanager_args(alertmanager: Mapping[str, Any], options: "AMRenderOptions", version: Version) -> list[str]:
    """The alertmanager container's flags in upstream's order, then spec.additionalArgs."""
    md = alertmanager["metadata"]
    spec = alertmanager.get("spec") or {}
    n = replicas(spec)
    args = [f"--config.file={CONFIG_ENVSUBST_FILE}", f"--storage.path={STORAGE_DIR}",
            f"--data.retention={spec.get('retention') or DEFAULT_RETENTION}"]
    if n == 1 and not spec.get("forceEnableClusterMode"):
        args.append("--cluster.listen-address=")
    else:
        args.append(f"--cluster.listen-address=[$(POD_IP)]:{MESH_PORT}")
    args.append(f"--web.listen-address={'127.0.0.1' if spec.get('listenLocal') else ''}:{WEB_PORT}")
    if spec.get("externalUrl"):
        args.append(f"--web.external-url={spec['externalUrl']}")
    if spec.get("enableFeatures") and version.at_least("0.27.0"):
        args.append(f"--enable-feature={','.join(spec['enableFeatures'])}")
    args.append(f"--web.route-prefix={_prefix(spec)}")
    web = spec.get("web") or {}
    if version.at_least("0.17.0"):
        if web.get("getConcurrency"):
            args.append(f"--web.get-concurrency={web['getConcurrency']}")
        if web.get("timeout"):
            args.append(f"--web.timeout={web['timeout']}")
    limits = spec.get("limits") or {}
    if version.at_least("0.28.0"):
        if limits.get("maxSilences") is not None:
            args.append(f"--silences.max-silences={limits['maxSilences']}")
        if limits.get("maxPerSilenceBytes"):
            try:
                args.append(f"--silences.max-per-silence-bytes={_base2(limits['maxPerSilenceBytes'])}")
            except DurationError:
                pass
    additional = {a.get("name") for a in spec.get("additionalArgs") or [] if isinstance(a, Mapping)}
    if version.at_least("0.30.0") and "dispatch.start-delay" not in additional:
        args.append(f"--dispatch.start-delay={spec.get('minReadySeconds') or 0}s")
    if spec.get("logLevel") and spec["logLevel"] != "info":
        args.append(f"--log.level={spec['logLevel']}")
    if version.at_least("0.16.0") and spec.get("logFormat") and spec["logFormat"] != "logfmt":
        args.append(f"--log.format={spec['logFormat']}")
    for key, flag in (("clusterAdvertiseAddress", "cluster.advertise-address"), ("clusterGossipInterval",
                      "cluster.gossip-interval"), ("clusterPushpullInterval", "cluster.pushpull-interval"),
                      ("clusterPeerTimeout", "cluster.peer-timeout")):
        if spec.get(key):
            args.append(f"--{flag}={spec[key]}")
    if version.at_least("0.30.0"):
        args.append("--cluster.peer-name=$(POD_NAME)")
    if version.at_least("0.26.0"):
        args.append(f"--cluster.label={spec.get('clusterLabel') or md['namespace'] + '/' + md['name']}")
    service = spec.get("serviceName") or GOVERNING_SERVICE_NAME
    domain = f"{service}.{md['namespace']}.svc.{options.cluster_domain}." if options.cluster_domain else service
    args += [f"--cluster.peer={prefixed_name(alertmanager)}-{i}.{domain}:{MESH_PORT}" for i in range(n)]
    args += [f"--cluster.peer={p}" for p in spec.get("additionalPeers") or []]
    args.append("--cluster.reconnect-timeout=5m")
    if version.at_least("0.22.0"):
        args.append(f"--web.config.file={WEB_CONFIG_FILE}")
    if version.at_least(CLUSTER_TLS_SINCE) and spec.get("clusterTLS"):
        args.append(f"--cluster.tls-config={CLUSTER_TLS_FILE}")
    for a in spec.get("additionalArgs") or []:
        if isinstance(a, Mapping) and a.get("name"):
            args.append(f"--{a['name']}" + (f"={a['value']}" if a.get("value") not in (None, "") else ""))
    return args


def conflicting_additional_args(alertmanager: Mapping[str, Any], options: "AMRenderOptions") -> list[str]:
    """additionalArgs that collide with a flag the operator manages (upstream refuses the object)."""
    spec = alertmanager.get("spec") or {}
    managed = {a.split("=", 1)[0].lstrip("-") for a in alertmanager_args(
        {**alertmanager, "spec": {**spec, "additionalArgs": []}}, options, version_of(spec))}
    return [a["name"] for a in spec.get("additionalArgs") or []
            if isinstance(a, Mapping) and a.get("name") in managed and a["name"] != "cluster.peer"]


def _base2(text: str) -> int:
    """A byte size like 4KiB or 10MB read base-2 (upstream parses silence sizes that way)."""
    value = parse_size(text)
    for unit, power in (("E", 6), ("P", 5), ("T", 4), ("G", 3), ("M", 2), ("K", 1)):
        if unit in text and "i" not in text:
            return value // (1000 ** power) * (1024 ** power)
    return value


def _probes(spec: Mapping[str, Any], version: Version) -> tuple[dict | None, dict | None]:
    if spec.get("listenLocal"):
        return None, None
    scheme = "HTTPS" if _web_tls(spec, version) else "HTTP"
    port = spec.get("portName") or "web"
    prefix = _prefix(spec)

    def get(path: str) -> dict:
        return {"httpGet": {"path": posixpath.join(prefix, path), "port": port, "scheme": scheme}}

    liveness = {**get("-/healthy"), "failureThreshold": 10, "timeoutSeconds": 3}
    readiness = {**get("-/ready"), "failureThreshold": 10, "initialDelaySeconds": 3, "periodSeconds": 5,
                 "timeoutSeconds": 3}
    return liveness, readiness


def _storage(alertmanager: Mapping[str, Any]) -> tuple[dict | None, dict | None, str, str]:
    """(pod volume or None, volumeClaimTemplate or None, volume name, db mount subPath)."""
    spec = alertmanager.get("spec") or {}
    storage = spec.get("storage")
    name = f"{prefixed_name(alertmanager)}-db"
    if not storage:
        return {"name": name, "emptyDir": {}}, None, name, ""
    sub_path = "" if storage.get("disableMountSubPath") else "alertmanager-db"
    if storage.get("emptyDir") is not None:
        return {"name": name, "emptyDir": dict(storage["emptyDir"])}, None, name, sub_path
    if storage.get("ephemeral") is not None:
        return {"name": name, "ephemeral": dict(storage["ephemeral"])}, None, name, sub_path
    template = storage.get("volumeClaimTemplate") or {}
    md = template.get("metadata") or {}
    pvc_md: dict = {"name": md.get("name") or name}
    for key in ("labels", "annotations"):
        if md.get(key):
            pvc_md[key] = dict(md[key])
    pvc_spec = dict(template.get("spec") or {})
    pvc_spec.setdefault("accessModes", ["ReadWriteOnce"])
    return None, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": pvc_md, "spec": pvc_spec}, \
        pvc_md["name"], sub_path


def _template_items(spec: Mapping[str, Any]) -> list[dict]:
    """Projected sources for alertmanagerConfiguration.templates (duplicate keys skipped)."""
    sources, seen = [], set()
    for t in (spec.get("alertmanagerConfiguration") or {}).get("templates") or []:
        for kind in ("secret", "configMap"):
            ref = t.get(kind) if isinstance(t, Mapping) else None
            if ref and ref.get("key") and ref["key"] not in seen:
                seen.add(ref["key"])
                sources.append({kind: {"name": ref.get("name"), "items": [{"key": ref["key"], "path": ref["key"]}]}})
    return sources


def reloader_args(spec: Mapping[str, Any], version: Version, watched: list[str], init: bool) -> list[str]:
    if init:
        args = ["--watch-interval=0", f"--listen-address=:{RELOADER_INIT_PORT}"]
    else:
        host = LOCALHOST
        args = [f"--listen-address={host if spec.get('listenLocal') else ''}:{RELOADER_PORT}"]
        if version.at_least("0.22.0"):
            args.append(f"--web-config-file={WEB_CONFIG_FILE}")
        scheme = "https" if _web_tls(spec, version) else "http"
        args.append(f"--reload-url={scheme}://{host}:{WEB_PORT}{posixpath.join(_prefix(spec), '-/reload')}")
    args += [f"--config-file={CONFIG_FILE}", f"--config-envsubst-file={CONFIG_ENVSUBST_FILE}"]
    args += [f"--watched-dir={d}" for d in watched]
    return args


def _reloader(name: str, spec: Mapping[str, Any], options: RenderOptions, version: Version, watched: list[str],
              mounts: list[dict], init: bool) -> dict:
    port_name, port = ("reloader-init", RELOADER_INIT_PORT) if init else ("reloader-web", RELOADER_PORT)
    container = {
        "name": name,
        "image": options.config_reloader_image,
        "command": list(RELOADER_COMMAND),
        "args": reloader_args(spec, version, watched, init),
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "SHARD", "value": "-1"}],
        "ports": [{"containerPort": port, "name": port_name, "protocol": "TCP"}],
        "resources": RELOADER_RESOURCES,
        "securityContext": SECURITY_CONTEXT,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [dict(m) for m in mounts],
    }
    if spec.get("listenLocal") and not init:
        del container["ports"]
    # the flags' resources and probes (exec probes when it listens on localhost only, as upstream)
    return reloader_container.apply(container, options.config_reloader, init, bool(spec.get("listenLocal")))


@dataclass
class _Mounts:
    """The pod's volumes, what the alertmanager and reloader containers mount, and what the reloader watches."""

    volumes: list[dict] = field(default_factory=list)
    alertmanager: list[dict] = field(default_factory=list)
    reloader: list[dict] = field(default_factory=list)
    watched: list[str] = field(default_factory=list)

    def shared(self, volume: dict, mount: dict, watch: str | None = None) -> None:
        """A volume both containers mount (and the reloader watches, with `watch`)."""
        self.volumes.append(volume)
        self.alertmanager.append(mount)
        self.reloader.append(dict(mount))
        if watch:
            self.watched.append(watch)


def build_statefulset(alertmanager: dict, options: "AMRenderOptions", tls_secret_names: list[str],
                      input_hash: str, web: TLSMounts | None = None, cluster: TLSMounts | None = None) -> dict:
    """The StatefulSet; `web`/`cluster` are the volumes and mounts of web.tlsConfig and clusterTLS (webtls)."""
    md = alertmanager["metadata"]
    spec = alertmanager.get("spec") or {}
    version = version_of(spec)
    base = prefixed_name(alertmanager)
    sel = selector_labels(alertmanager, options)
    mounts, pvc = _mounts(alertmanager, version, tls_secret_names, web, cluster)
    containers = [_alertmanager_container(alertmanager, options, version, mounts.alertmanager),
                  _reloader("config-reloader", spec, options, version, mounts.watched, mounts.reloader, init=False)]
    init_containers = [_reloader("init-config-reloader", spec, options, version, mounts.watched, mounts.reloader,
                                 init=True)]
    if spec.get("imagePullPolicy"):
        for c in containers + init_containers:
            c["imagePullPolicy"] = spec["imagePullPolicy"]
    containers = strategic_merge(containers, spec.get("containers") or [], "containers")
    init_containers = strategic_merge(init_containers, spec.get("initContainers") or [], "initContainers")

    pod_md = spec.get("podMetadata") or {}
    pod_labels = {**(pod_md.get("labels") or {}), "app.kubernetes.io/version": str(version).lstrip("v"), **sel}
    pod_annotations = {**(pod_md.get("annotations") or {}), "kubectl.kubernetes.io/default-container": "alertmanager"}
    pod_spec: dict = {
        "automountServiceAccountToken": spec.get("automountServiceAccountToken", True),
        "containers": containers,
        "initContainers": init_containers,
        "terminationGracePeriodSeconds": spec.get("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD),
        "volumes": mounts.volumes,
        **pod_spec_passthrough(spec),
    }
    labels = {**(md.get("labels") or {}), **sel}
    annotations = statefulset_annotations(md, input_hash)
    sts_spec = statefulset_spec(spec, replicas(spec), sel, pod_labels, pod_annotations, pod_spec, pvc,
                                GOVERNING_SERVICE_NAME)
    return copy.deepcopy({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": managed_metadata(alertmanager, base, options, labels=labels, annotations=annotations),
        "spec": sts_spec,
    })


def _mounts(alertmanager: dict, version: Version, tls_secret_names: list[str], web: TLSMounts | None,
            cluster: TLSMounts | None) -> tuple[_Mounts, dict | None]:
    """Every volume and mount, in upstream's order, and the storage's PVC template (None without one)."""
    spec = alertmanager.get("spec") or {}
    base = prefixed_name(alertmanager)
    m = _Mounts(
        volumes=[
            {"name": "config-volume", "secret": {"secretName": f"{base}-generated"}},
            {"name": "tls-assets", "projected": {"sources": [{"secret": {"name": s}} for s in tls_secret_names]}},
            {"name": "config-out", "emptyDir": {"medium": "Memory"}},
        ],
        alertmanager=[
            {"mountPath": CONFIG_DIR, "name": "config-volume"},
            {"mountPath": CONFIG_OUT_DIR, "name": "config-out", "readOnly": True},
            {"mountPath": CERTS_DIR, "name": "tls-assets", "readOnly": True},
        ],
        reloader=[
            {"mountPath": CONFIG_DIR, "name": "config-volume", "readOnly": True},
            {"mountPath": CONFIG_OUT_DIR, "name": "config-out"},
        ],
        watched=[CONFIG_DIR],
    )
    db_volume, pvc, db_name, sub_path = _storage(alertmanager)
    db_mount: dict = {"mountPath": STORAGE_DIR, "name": db_name}
    if sub_path:
        db_mount["subPath"] = sub_path
    m.alertmanager.append(db_mount)
    templates = _template_items(spec)
    if templates:
        m.shared({"name": "notification-templates", "projected": {"sources": templates}},
                 {"mountPath": TEMPLATES_DIR, "name": "notification-templates", "readOnly": True}, TEMPLATES_DIR)
    for kind, dir_, items in (("secret", SECRETS_DIR, spec.get("secrets")),
                              ("configmap", CONFIGMAPS_DIR, spec.get("configMaps"))):
        for item in items or []:
            vol = sanitize_volume_name(f"{kind}-{item}")
            source = {"secret": {"secretName": item}} if kind == "secret" else {"configMap": {"name": item}}
            m.shared({"name": vol, **source}, {"mountPath": f"{dir_}/{item}", "name": vol, "readOnly": True},
                     f"{dir_}/{item}")
    m.alertmanager += [dict(v) for v in spec.get("volumeMounts") or []]
    if version.at_least("0.22.0"):
        m.shared({"name": "web-config", "secret": {"secretName": f"{base}-web-config"}},
                 {"mountPath": WEB_CONFIG_FILE, "name": "web-config", "readOnly": True, "subPath": "web-config.yaml"})
        if web is not None:  # the reloader serves its own endpoint with the same web config file
            m.volumes += [dict(v) for v in web.volumes]
            m.alertmanager += [dict(v) for v in web.mounts]
            m.reloader += [dict(v) for v in web.mounts]
    if version.at_least(CLUSTER_TLS_SINCE) and spec.get("clusterTLS"):
        m.volumes.append({"name": "cluster-tls-config", "secret": {"secretName": f"{base}-cluster-tls-config"}})
        m.alertmanager.append({"mountPath": CLUSTER_TLS_FILE, "name": "cluster-tls-config", "readOnly": True,
                               "subPath": "cluster-tls-config.yaml"})
        if cluster is not None:
            m.volumes += [dict(v) for v in cluster.volumes]
            m.alertmanager += [dict(v) for v in cluster.mounts]
    if db_volume is not None:
        m.volumes.append(db_volume)
    m.volumes += [dict(v) for v in spec.get("volumes") or []]
    return m, pvc


def _alertmanager_container(alertmanager: dict, options: "AMRenderOptions", version: Version,
                            mounts: list[dict]) -> dict:
    """The alertmanager container: image, args, env, ports, resources (200Mi memory by default), probes."""
    spec = alertmanager.get("spec") or {}
    liveness, readiness = _probes(spec, version)
    resources = copy.deepcopy(spec.get("resources") or {})
    if not (resources.get("requests") or {}).get("memory"):
        resources.setdefault("requests", {})["memory"] = "200Mi"
    port_name = spec.get("portName") or "web"
    ports = [] if spec.get("listenLocal") else [{"containerPort": WEB_PORT, "name": port_name, "protocol": "TCP"}]
    ports += [{"containerPort": MESH_PORT, "name": "mesh-tcp", "protocol": "TCP"},
              {"containerPort": MESH_PORT, "name": "mesh-udp", "protocol": "UDP"}]
    env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}]
    if version.at_least("0.30.0"):
        env.append({"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}})
    am: dict = {
        "name": "alertmanager",
        "image": image(spec, options),
        "args": alertmanager_args(alertmanager, options, version),
        "env": env,
        "ports": ports,
        "resources": resources,
        "securityContext": SECURITY_CONTEXT,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": mounts,
    }
    if liveness:
        am["livenessProbe"], am["readinessProbe"] = liveness, readiness
    return am


def build_service(alertmanager: dict, options: RenderOptions) -> dict:
    """Headless `alertmanager-operated` (shared by the namespace's Alertmanagers: non-controller owner)."""
    spec = alertmanager.get("spec") or {}
    port_name = spec.get("portName") or "web"
    labels = {**MANAGED_BY_LABELS, "operated-alertmanager": "true", **options.labels}
    md: dict = {"name": GOVERNING_SERVICE_NAME, "namespace": alertmanager["metadata"]["namespace"],
                "labels": dict(sorted(labels.items())),
                "ownerReferences": [owner_reference(alertmanager, controller=False)]}
    if options.annotations:
        md["annotations"] = dict(sorted(options.annotations.items()))
    return {"apiVersion": "v1", "kind": "Service", "metadata": md, "spec": {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "ports": [{"name": port_name, "port": WEB_PORT, "protocol": "TCP", "targetPort": port_name},
                  {"name": "tcp-mesh", "port": MESH_PORT, "protocol": "TCP", "targetPort": "mesh-tcp"},
                  {"name": "udp-mesh", "port": MESH_PORT, "protocol": "UDP", "targetPort": "mesh-udp"}],
        "selector": {"app.kubernetes.io/name": "alertmanager"},
    }}


def compute_input_hash(alertmanager: Mapping[str, Any], options: "AMRenderOptions", tls_secret_names: list[str]) -> str:
    """A decimal hash of what the StatefulSet is built from (not the generated config: the reloader handles it)."""
    md = alertmanager.get("metadata") or {}
    payload = {"labels": md.get("labels") or {}, "annotations": md.get("annotations") or {},
               "generation": md.get("generation"), "spec": alertmanager.get("spec") or {},
               "options": repr(options), "tls_shards": len(tls_secret_names)}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).digest()
    return str(int.from_bytes(digest[:8], "big"))


from promop.render.alertmanager.model import AMRenderOptions  # noqa: E402  (type used in annotations above)
