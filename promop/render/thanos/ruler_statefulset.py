"""The StatefulSet `thanos-ruler-<name>` of a ThanosRuler, as upstream's pkg/thanos makeStatefulSet.

The pod runs `thanos rule` and, to reload rule ConfigMaps, our config reloader (upstream's flags).
Like upstream: no probes, a 200Mi memory request by default, one `--rule-file` glob over every ConfigMap.
Shared with the Prometheus StatefulSet: the pod pass-through fields, the strategic merge of
spec.containers, the StatefulSet spec shape and the annotations (promop/render/statefulset.py).
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Mapping
from typing import Any

from promop.render import reloader_container
from promop.render.model import RenderOptions
from promop.render.statefulset import (
    RELOADER_COMMAND, RELOADER_PORT, RELOADER_RESOURCES, SECURITY_CONTEXT, pod_spec_passthrough,
    statefulset_annotations, statefulset_spec, strategic_merge,
)
from promop.render.thanos.args import build_args
from promop.render.thanos.ruler_args import (
    GRPC_PORT, HTTP_PORT, RULES_DIR, STORAGE_DIR, TLS_ASSETS_DIR, WEB_CONFIG_FILE, WEB_CONFIG_SINCE, RulerArgs,
    ruler_args,
)
from promop.render.thanos.ruler_meta import (
    GOVERNING_SERVICE_NAME, managed_metadata, prefixed_name, selector_labels,
)
from promop.render.thanos.ruler_web import TLSMounts
from promop.render.thanos.versions import DEFAULT_THANOS_BASE_IMAGE, DEFAULT_THANOS_VERSION, thanos_version
from promop.render.versions import Version

CONTAINER_NAME = "thanos-ruler"
DEFAULT_TERMINATION_GRACE_PERIOD = 120
DEFAULT_MEMORY_REQUEST = "200Mi"
WEB_CONFIG_MOUNT = {"mountPath": WEB_CONFIG_FILE, "name": "web-config", "readOnly": True, "subPath": "web-config.yaml"}


def image(spec: Mapping[str, Any], default_base: str = DEFAULT_THANOS_BASE_IMAGE) -> str:
    """spec.image, else <base>:<version> (ThanosRuler has no baseImage/tag/sha fields); `default_base`
    is --thanos-default-base-image."""
    return spec.get("image") or f"{default_base}:{spec.get('version') or DEFAULT_THANOS_VERSION}"


def _storage(ruler: Mapping[str, Any]) -> tuple[dict | None, dict | None]:
    """(pod volume or None, volumeClaimTemplate or None); the data mount has no subPath (upstream)."""
    storage = (ruler.get("spec") or {}).get("storage")
    vol = f"{prefixed_name(ruler)}-data"
    if not storage:
        return {"name": vol, "emptyDir": {}}, None
    for kind in ("emptyDir", "ephemeral"):
        if storage.get(kind) is not None:
            return {"name": vol, kind: dict(storage[kind])}, None
    template = storage.get("volumeClaimTemplate") or {}
    md = template.get("metadata") or {}
    pvc_md: dict = {"name": md.get("name") or vol, **{k: dict(md[k]) for k in ("labels", "annotations") if md.get(k)}}
    pvc_spec = {"accessModes": ["ReadWriteOnce"], **(template.get("spec") or {})}
    return None, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": pvc_md, "spec": pvc_spec}


def _web_config_enabled(version: Version, rule_cms: list[str]) -> bool:
    """Upstream mounts the web config (and passes --http.config) with the reloader, from Thanos 0.21."""
    return bool(rule_cms) and version.at_least(WEB_CONFIG_SINCE)


def _web_mounts(web_tls: TLSMounts | None) -> list[dict]:
    """The web config file's mount, then its TLS Secrets/ConfigMaps (thanos-ruler and the reloader both)."""
    return [dict(WEB_CONFIG_MOUNT), *[dict(m) for m in (web_tls.mounts if web_tls else [])]]


def _volumes(ruler: Mapping[str, Any], version: Version, rule_cms: list[str], tls_secrets: list[str],
             built: RulerArgs, web_tls: TLSMounts | None) -> tuple[list[dict], list[dict], dict | None]:
    """(pod volumes, thanos-ruler mounts, volumeClaimTemplate) in upstream's order: the config Secrets,
    TLS assets, web config (and its TLS files), rule ConfigMaps (data mount before them), storage, the user's."""
    spec = ruler.get("spec") or {}
    volumes = [*built.volumes, {"name": "tls-assets",
                                "projected": {"sources": [{"secret": {"name": s}} for s in tls_secrets]}}]
    mounts = [*built.mounts, {"mountPath": TLS_ASSETS_DIR, "name": "tls-assets", "readOnly": True}]
    if _web_config_enabled(version, rule_cms):
        volumes.append({"name": "web-config", "secret": {"secretName": f"{prefixed_name(ruler)}-web-config"}})
        volumes += [dict(v) for v in (web_tls.volumes if web_tls else [])]
        mounts += _web_mounts(web_tls)
    db_volume, pvc = _storage(ruler)
    mounts.append({"mountPath": STORAGE_DIR, "name": pvc["metadata"]["name"] if pvc else f"{prefixed_name(ruler)}-data"})
    for cm in rule_cms:
        volumes.append({"name": cm, "configMap": {"name": cm, "optional": True}})
        mounts.append({"mountPath": f"{RULES_DIR}/{cm}", "name": cm, "readOnly": True})
    if db_volume is not None:
        volumes.append(db_volume)
    volumes += [dict(v) for v in spec.get("volumes") or []]
    mounts += [dict(m) for m in spec.get("volumeMounts") or []]
    return volumes, mounts, pvc


def _reloader(spec: Mapping[str, Any], options: RenderOptions, version: Version, rule_cms: list[str],
              web_tls: TLSMounts | None) -> dict:
    """The config reloader: it watches the rule ConfigMaps and calls Thanos's /-/reload, over HTTPS when
    Thanos serves TLS (upstream's isHTTPS: spec.web.tlsConfig and Thanos >= 0.21)."""
    web = spec.get("web") if isinstance(spec.get("web"), Mapping) else {}
    scheme = "https" if web.get("tlsConfig") is not None and version.at_least(WEB_CONFIG_SINCE) else "http"
    prefix = spec.get("routePrefix") or "/"
    args = [f"--listen-address={'localhost' if spec.get('listenLocal') else ''}:{RELOADER_PORT}"]
    mounts = [{"mountPath": f"{RULES_DIR}/{cm}", "name": cm} for cm in rule_cms]
    if _web_config_enabled(version, rule_cms):
        args.append(f"--web-config-file={WEB_CONFIG_FILE}")
        mounts += _web_mounts(web_tls)
    args.append(f"--reload-url={scheme}://localhost:{HTTP_PORT}{posixpath.normpath(posixpath.join(prefix, '-/reload'))}")
    args += [f"--watched-dir={RULES_DIR}/{cm}" for cm in rule_cms]
    for key, flag in (("logFormat", "log-format"), ("logLevel", "log-level")):
        if spec.get(key):
            args.append(f"--{flag}={spec[key]}")
    container = {
        "name": "config-reloader",
        "image": options.config_reloader_image,
        "command": list(RELOADER_COMMAND),
        "args": args,
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "SHARD", "value": "-1"}],
        "resources": RELOADER_RESOURCES,
        "securityContext": SECURITY_CONTEXT,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": mounts,
    }
    if not spec.get("listenLocal"):
        container["ports"] = [{"containerPort": RELOADER_PORT, "name": "reloader-web", "protocol": "TCP"}]
    # the flags' resources and probes (exec probes when it listens on localhost only, as upstream)
    return reloader_container.apply(container, options.config_reloader, False, bool(spec.get("listenLocal")))


def _resources(spec: Mapping[str, Any]) -> dict:
    """spec.resources, with upstream's default memory request (200Mi) when none is set."""
    resources = dict(spec.get("resources") or {})
    requests = dict(resources.get("requests") or {})
    requests.setdefault("memory", DEFAULT_MEMORY_REQUEST)
    return {**resources, "requests": requests}


def _ruler_container(spec: Mapping[str, Any], version: Version, built: RulerArgs, rule_cms: list[str],
                     mounts: list[dict], default_base_image: str) -> dict:
    """The thanos-ruler container; --http.config comes after additionalArgs, as upstream appends it."""
    args = ["rule", *build_args(built.args, spec.get("additionalArgs"), "spec.additionalArgs")]
    if _web_config_enabled(version, rule_cms):
        args.append(f"--http.config={WEB_CONFIG_FILE}")
    ports = [{"containerPort": GRPC_PORT, "name": "grpc", "protocol": "TCP"}]
    if not spec.get("listenLocal"):
        ports.append({"containerPort": HTTP_PORT, "name": spec.get("portName") or "web", "protocol": "TCP"})
    return {
        "name": CONTAINER_NAME,
        "image": image(spec, default_base_image),
        "args": args,
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
        "ports": ports,
        "resources": _resources(spec),
        "securityContext": SECURITY_CONTEXT,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": mounts,
    }


def build_ruler_statefulset(ruler: dict, options: RenderOptions, rule_configmap_names: list[str],
                            tls_secret_names: list[str], input_hash: str,
                            default_base_image: str | None = None, web_tls: TLSMounts | None = None) -> dict:
    """The StatefulSet; raises ThanosVersionError / ManagedArgumentError (one line) for a bad spec.
    `default_base_image` (else options.thanos_default_base_image) names the image without a tag; `web_tls`
    (ruler_web.ruler_web_tls) adds the web TLS files' volumes and mounts."""
    default_base_image = default_base_image or options.thanos_default_base_image
    md = ruler["metadata"]
    spec = ruler.get("spec") or {}
    version = thanos_version(spec.get("version"))
    rule_cms = list(rule_configmap_names)
    built = ruler_args(spec, version, f"{prefixed_name(ruler)}-config")
    volumes, mounts, pvc = _volumes(ruler, version, rule_cms, list(tls_secret_names), built, web_tls)
    containers = [_ruler_container(spec, version, built, rule_cms, mounts, default_base_image)]
    if rule_cms:
        containers.append(_reloader(spec, options, version, rule_cms, web_tls))
    if spec.get("imagePullPolicy"):
        for c in containers:
            c["imagePullPolicy"] = spec["imagePullPolicy"]
    containers = strategic_merge(containers, spec.get("containers") or [], "containers")
    init_containers = strategic_merge([], spec.get("initContainers") or [], "initContainers")

    sel = selector_labels(ruler, options)
    pod_md = spec.get("podMetadata") or {}
    pod_labels = {**sel, "app.kubernetes.io/version": str(version).lstrip("v")}
    pod_annotations = {**(pod_md.get("annotations") or {}), "kubectl.kubernetes.io/default-container": CONTAINER_NAME}
    pod_spec: dict = {
        "containers": containers,
        "terminationGracePeriodSeconds": spec.get("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD),
        "volumes": volumes,
        **pod_spec_passthrough(spec),
    }
    if init_containers:
        pod_spec["initContainers"] = init_containers
    labels = {**(md.get("labels") or {}), **sel}
    replicas = spec.get("replicas") if spec.get("replicas") is not None else 1
    sts_spec = statefulset_spec(spec, replicas, sel, pod_labels, pod_annotations, pod_spec, pvc,
                                GOVERNING_SERVICE_NAME)
    return copy.deepcopy({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": managed_metadata(ruler, prefixed_name(ruler), options, labels=labels,
                                     annotations=statefulset_annotations(md, input_hash)),
        "spec": sts_spec,
    })
