"""Fast reload: the reloader sidecar reads the config Secret and rule ConfigMaps through the API.

kubelet refreshes mounted Secrets and ConfigMaps only on its periodic sync, so a
change waits one to three minutes before Prometheus sees it. In this mode the
reloader watches the objects themselves (`--watch-secret`, `--watch-configmap`)
and the mounted volumes stay its fallback. The pod changes accordingly:

- the rule files Prometheus reads live in an emptyDir the reloader writes
  (`/etc/prometheus/rules/<configmap>`, the paths the config already names);
- the rule ConfigMap volumes move to the reloader only, under
  `/etc/prometheus/rules-mounted/<configmap>`;
- a Role and RoleBinding let the pod's ServiceAccount `get` and `watch` exactly
  its own config Secret and rule ConfigMaps, by name, and nothing else.

Opt in per Prometheus with the annotation `promop.dev/fast-reload: "true"`
(the CRD is upstream's, so not a spec field), or for all with the operator's
`--fast-reload` flag; the annotation set to "false" opts a Prometheus out.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import RenderOptions

ANNOTATION = "promop.dev/fast-reload"
RULES_DIR = "/etc/prometheus/rules"
MOUNTED_RULES_DIR = "/etc/prometheus/rules-mounted"
CONFIG_KEY = "prometheus.yaml.gz"
RULES_VOLUME = "rules-from-api"
RELOADER_CONTAINERS = ("config-reloader", "init-config-reloader")


@dataclass(frozen=True)
class Mode:
    """Whether a Prometheus runs in fast-reload mode, and why (for its status)."""

    fast: bool
    reason: str  # CamelCase, as condition reasons
    message: str


def requested(prometheus: Mapping[str, Any], options: RenderOptions) -> bool:
    """Whether anyone asked about fast reload for this Prometheus (the annotation or the flag).

    Only then does its status get a FastReload condition: a Prometheus nobody opted in keeps
    exactly upstream's status."""
    return options.fast_reload or ANNOTATION in ((prometheus.get("metadata") or {}).get("annotations") or {})


def mode(prometheus: Mapping[str, Any], options: RenderOptions) -> Mode:
    md = prometheus.get("metadata") or {}
    spec = prometheus.get("spec") or {}
    value = str((md.get("annotations") or {}).get(ANNOTATION, "")).strip().lower()
    if value not in ("", "true", "false"):
        return Mode(False, "InvalidAnnotation",
                    f'annotation {ANNOTATION}: {value!r} is neither "true" nor "false"; the reloader reads '
                    "mounted files (changes wait for kubelet's sync)")
    wanted = value == "true" or (value == "" and options.fast_reload)
    if not wanted:
        return Mode(False, "MountedFiles",
                    "the reloader reads mounted files: changes reach Prometheus after kubelet's sync (about "
                    f'1-2 minutes); annotate {ANNOTATION}: "true" to read them through the API')
    if spec.get("automountServiceAccountToken") is False:
        return Mode(False, "NoServiceAccountToken",
                    "fast reload needs the pod's ServiceAccount token, but spec.automountServiceAccountToken is "
                    "false; the reloader reads mounted files")
    source = "annotation" if value == "true" else "--fast-reload"
    return Mode(True, "APIWatch",
                f"the reloader reads the config Secret and rule ConfigMaps through the API ({source}); "
                "the mounted files are its fallback")


def role_name(prometheus: Mapping[str, Any]) -> str:
    return f"{prefixed_name(prometheus)}-config-reader"


def rbac_objects(prometheus: Mapping[str, Any], options: RenderOptions, rule_configmaps: list[str]) -> list[dict]:
    """The Role and RoleBinding: get/watch on exactly this Prometheus's config Secret and rule ConfigMaps."""
    spec = prometheus.get("spec") or {}
    namespace = prometheus["metadata"]["namespace"]
    name = role_name(prometheus)
    rules = [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [prefixed_name(prometheus)],
              "verbs": ["get", "watch"]}]
    if rule_configmaps:
        rules.append({"apiGroups": [""], "resources": ["configmaps"], "resourceNames": sorted(rule_configmaps),
                      "verbs": ["get", "watch"]})
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": managed_metadata(prometheus, name, options), "rules": rules}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": managed_metadata(prometheus, name, options),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": spec.get("serviceAccountName") or "default",
                      "namespace": namespace}],
    }
    return [role, binding]


def adapt_statefulset(statefulset: dict, prometheus: Mapping[str, Any], rule_configmaps: list[str]) -> dict:
    """The StatefulSet with its reloaders on the API and rule files in a shared emptyDir (in place)."""
    namespace = prometheus["metadata"]["namespace"]
    pod = statefulset["spec"]["template"]["spec"]
    rule_paths = {f"{RULES_DIR}/{cm}": cm for cm in rule_configmaps}
    pod["volumes"].append({"name": RULES_VOLUME, "emptyDir": {}})
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        mounts = container.get("volumeMounts") or []
        reloader = container.get("name") in RELOADER_CONTAINERS
        kept = []
        for m in mounts:
            cm = rule_paths.get(m.get("mountPath", ""))
            if cm is None:
                kept.append(m)
            elif reloader:
                kept.append({**m, "mountPath": f"{MOUNTED_RULES_DIR}/{cm}"})
        if container.get("name") == "prometheus" and rule_configmaps:
            kept.append({"mountPath": RULES_DIR, "name": RULES_VOLUME, "readOnly": True})
        if reloader:
            kept.append({"mountPath": RULES_DIR, "name": RULES_VOLUME})
            container["args"] = _reloader_args(container.get("args") or [], namespace,
                                               prefixed_name(prometheus), rule_configmaps)
        container["volumeMounts"] = kept
    return statefulset


def _reloader_args(args: list[str], namespace: str, secret: str, rule_configmaps: list[str]) -> list[str]:
    watched_rules = {f"--watched-dir={RULES_DIR}/{cm}" for cm in rule_configmaps}
    out = [a for a in args if a not in watched_rules]
    out.append(f"--watch-secret={namespace}/{secret}:{CONFIG_KEY}")
    out += [f"--watch-configmap={namespace}/{cm}={RULES_DIR}/{cm},mount={MOUNTED_RULES_DIR}/{cm}"
            for cm in rule_configmaps]
    return out
