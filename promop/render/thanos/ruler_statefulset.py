"""The StatefulSet `thanos-ruler-<name>` of a ThanosRuler, as upstream's pkg/thanos makeStatefulSet.

The pod runs `thanos rule` and, to reload rule ConfigMaps, our config reloader (upstream's flags).
Shared with the Prometheus StatefulSet: the pod pass-through fields, the strategic merge of
spec.containers, the StatefulSet spec shape and the annotations (promop/render/statefulset.py).
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Mapping
from typing import Any

from promop.render.model import RenderOptions
from promop.render.statefulset import (
    RELOADER_COMMAND, RELOADER_PORT, RELOADER_RESOURCES, SECURITY_CONTEXT, pod_spec_passthrough,
    statefulset_annotations, statefulset_spec, strategic_merge,
)
from promop.render.thanos.args import build_args
from promop.render.thanos.ruler_args import (
    HTTP_PORT, GRPC_PORT, RULES_DIR, STORAGE_DIR, WEB_CONFIG_FILE, RulerArgs, ruler_args,
)
from promop.render.thanos.ruler_meta import (
    GOVERNING_SERVICE_NAME, managed_metadata, prefixed_name, selector_labels,
)
from promop.render.thanos.versions import DEFAULT_THANOS_BASE_IMAGE, DEFAULT_THANOS_VERSION, thanos_version

CONTAINER_NAME = "thanos-ruler"
DEFAULT_TERMINATION_GRACE_PERIOD = 120
STORAGE_SUBPATH = "thanos-ruler-db"


def image(spec: Mapping[str, Any], default_base: str = DEFAULT_THANOS_BASE_IMAGE) -> str:
    """spec.image, else <base>:<version> (ThanosRuler has no tag/sha fields)."""
    return spec.get("image") or f"{default_base}:{spec.get('version') or DEFAULT_THANOS_VERSION}"


def _storage(ruler: Mapping[str, Any]) -> tuple[dict | None, dict | None, str]:
    """(pod volume or None, volumeClaimTemplate or None, data mount subPath), as for Prometheus."""
    storage = (ruler.get("spec") or {}).get("storage")
    vol = f"{prefixed_name(ruler)}-data"
    if not storage:
        return {"name": vol, "emptyDir": {}}, None, ""
    sub_path = "" if storage.get("disableMountSubPath") else STORAGE_SUBPATH
    for kind in ("emptyDir", "ephemeral"):
        if storage.get(kind) is not None:
            return {"name": vol, kind: dict(storage[kind])}, None, sub_path
    template = storage.get("volumeClaimTemplate")
    if not template:
        return {"name": vol, "emptyDir": {}}, None, sub_path
    md = template.get("metadata") or {}
    pvc_md: dict = {"name": md.get("name") or vol, **{k: dict(md[k]) for k in ("labels", "annotations") if md.get(k)}}
    pvc_spec = {"accessModes": ["ReadWriteOnce"], **(template.get("spec") or {})}
    return None, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": pvc_md, "spec": pvc_spec}, sub_path


def _volumes(ruler: Mapping[str, Any], rule_cms: list[str], tls_secrets: list[str], extra: list[dict],
             extra_mounts: list[dict]) -> tuple[list[dict], list[dict], dict | None]:
    """(pod volumes, thanos-ruler mounts, volumeClaimTemplate) in upstream's order."""
    spec = ruler.get("spec") or {}
    base = prefixed_name(ruler)
    volumes: list[dict] = [
        {"name": "remote-write-config", "secret": {"secretName": f"{base}-config",
                                                   "items": [{"key": "remote-write.yaml", "path": "remote-write.yaml"}]}},
        {"name": "tls-assets", "projected": {"sources": [{"secret": {"name": s}} for s in tls_secrets]}},
        {"name": "web-config", "secret": {"secretName": f"{base}-web-config"}},
        *extra,
    ]
    mounts: list[dict] = [
        {"mountPath": "/etc/thanos/config/remote-write-config", "name": "remote-write-config", "readOnly": True},
        {"mountPath": "/etc/thanos/certs", "name": "tls-assets", "readOnly": True},
        {"mountPath": WEB_CONFIG_FILE, "name": "web-config", "readOnly": True, "subPath": "web-config.yaml"},
        *extra_mounts,
    ]
    db_volume, pvc, sub_path = _storage(ruler)
    data_mount: dict = {"mountPath": STORAGE_DIR, "name": pvc["metadata"]["name"] if pvc else f"{base}-data"}
    if sub_path:
        data_mount["subPath"] = sub_path
    mounts.append(data_mount)
    for cm in rule_cms:
        volumes.append({"name": cm, "configMap": {"name": cm, "optional": True}})
        mounts.append({"mountPath": f"{RULES_DIR}/{cm}", "name": cm, "readOnly": True})
    if db_volume is not None:
        volumes.append(db_volume)
    volumes += [dict(v) for v in spec.get("volumes") or []]
    mounts += [dict(m) for m in spec.get("volumeMounts") or []]
    return volumes, mounts, pvc


def _probe(spec: Mapping[str, Any], path: str, failures: int) -> dict:
    prefix = spec.get("routePrefix") or "/"
    return {"httpGet": {"path": posixpath.join(prefix, path), "port": spec.get("portName") or "web",
                        "scheme": "HTTP"}, "failureThreshold": failures, "periodSeconds": 5, "timeoutSeconds": 3}


def _reloader(spec: Mapping[str, Any], options: RenderOptions, rule_cms: list[str]) -> dict:
    prefix = spec.get("routePrefix") or "/"
    args = [f"--listen-address=:{RELOADER_PORT}",
            f"--reload-url=http://localhost:{HTTP_PORT}{posixpath.join(prefix, '-/reload')}"]
    args += [f"--watched-dir={RULES_DIR}/{cm}" for cm in rule_cms]
    return {
        "name": "config-reloader",
        "image": options.config_reloader_image,
        "command": list(RELOADER_COMMAND),
        "args": args,
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "SHARD", "value": "-1"}],
        "ports": [{"containerPort": RELOADER_PORT, "name": "reloader-web", "protocol": "TCP"}],
        "resources": RELOADER_RESOURCES,
        "securityContext": SECURITY_CONTEXT,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [{"mountPath": f"{RULES_DIR}/{cm}", "name": cm, "readOnly": True} for cm in rule_cms],
    }


def _ruler_container(spec: Mapping[str, Any], built: RulerArgs, mounts: list[dict], default_base_image: str) -> dict:
    """The thanos-ruler container."""
    args = ["rule", *build_args(built.args, spec.get("additionalArgs"), "spec.additionalArgs")]
    env = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
           *built.env]
    container: dict = {
        "name": CONTAINER_NAME,
        "image": image(spec, default_base_image),
        "args": args,
        "env": env,
        "ports": [] if spec.get("listenLocal") else [
            {"containerPort": GRPC_PORT, "name": "grpc", "protocol": "TCP"},
            {"containerPort": HTTP_PORT, "name": spec.get("portName") or "web", "protocol": "TCP"}],
        "livenessProbe": _probe(spec, "-/healthy", 24),
        "readinessProbe": _probe(spec, "-/ready", 18),
        "resources": dict(spec.get("resources") or {}),
        "securityContext": SECURITY_CONTEXT,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": mounts,
    }
    if not container["ports"]:
        del container["ports"], container["livenessProbe"], container["readinessProbe"]
    return container


def build_ruler_statefulset(ruler: dict, options: RenderOptions, rule_configmap_names: list[str],
                            tls_secret_names: list[str], input_hash: str,
                            default_base_image: str = DEFAULT_THANOS_BASE_IMAGE) -> dict:
    """The StatefulSet; raises ThanosVersionError / ManagedArgumentError (one line) for a bad spec."""
    md = ruler["metadata"]
    spec = ruler.get("spec") or {}
    version = thanos_version(spec.get("version"))
    rule_cms = list(rule_configmap_names)
    built = ruler_args(spec, version, rule_cms)
    volumes, mounts, pvc = _volumes(ruler, rule_cms, list(tls_secret_names), built.volumes, built.mounts)
    containers = [_ruler_container(spec, built, mounts, default_base_image)]
    if rule_cms:
        containers.append(_reloader(spec, options, rule_cms))
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
