"""ServiceMonitor endpoints to Prometheus scrape jobs, in upstream's exact relabel order."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

from promop.labelselector import parse_selector
from promop.render import relabel, topology
from promop.render.context import GenContext
from promop.render.emit import Frozen
from promop.render.job import endpoint_label, enforced_namespace_rules, http_part, job_head, job_tail, relabel_tail, scrape_class
from promop.render.model import obj_meta
from promop.render.store import Scope

KIND_PLURAL = "servicemonitors"


def endpoint_role(ctx: GenContext, spec: Mapping[str, Any]) -> str:
    """`endpointslice` only if the cluster serves it, Prometheus >= 2.21 and it is asked for."""
    wanted = spec.get("serviceDiscoveryRole") or ctx.spec.get("serviceDiscoveryRole")
    if wanted == "EndpointSlice" and ctx.options.endpointslice_supported and ctx.version.at_least("2.21.0"):
        return "endpointslice"
    return "endpoints"


def sd_namespaces(ctx: GenContext, namespace: str, ns_selector: Mapping[str, Any] | None) -> list[str] | None:
    """The namespaces to discover in; None means all namespaces."""
    if ctx.spec.get("ignoreNamespaceSelectors"):
        return [namespace]
    ns_selector = ns_selector or {}
    if ns_selector.get("any"):
        return None
    return list(ns_selector.get("matchNames") or ()) or [namespace]


def k8s_sd_config(
    ctx: GenContext,
    scope: Scope,
    role: str,
    namespace: str,
    spec: Mapping[str, Any],
    cls: Mapping[str, Any],
    role_selector_roles: tuple[str, ...] = (),
) -> dict:
    """One kubernetes_sd_configs entry: role, namespaces, API server, attach_metadata, selectors."""
    sd: dict = {"role": role}
    names = sd_namespaces(ctx, namespace, spec.get("namespaceSelector"))
    if names is not None:
        sd["namespaces"] = {"names": names}
    sd.update(copy.deepcopy(ctx.apiserver_sd))
    attach = spec.get("attachMetadata") or cls.get("attachMetadata")
    zones = topology.for_context(ctx)
    if zones is not None and zones.attach_node_metadata:
        attach = {"node": True}  # topology sharding reads the zone from the node's labels: forced, as upstream
    if attach:
        scope.put(sd, "attach_metadata", {"node": bool(attach.get("node"))}, "2.37.0", "spec.attachMetadata")
    if role_selector_roles:
        label = str(parse_selector(spec.get("selector") or {}, "spec.selector"))
        if label:
            sd["selectors"] = [{"role": r, "label": label} for r in role_selector_roles]
    if ctx.daemonset and role == "pod":  # upstream: an agent DaemonSet pod discovers its own node's pods only
        node = {"role": "pod", "field": "spec.nodeName=$(NODE_NAME)"}
        pods = [s for s in sd.get("selectors", ()) if s["role"] == "pod"]
        if pods:
            pods[0]["field"] = node["field"]
        else:
            sd.setdefault("selectors", []).append(node)
    return sd


def service_monitor_jobs(ctx: GenContext, sm: Mapping[str, Any], scope: Scope) -> list[dict]:
    """One scrape job per endpoint of a (validated) ServiceMonitor; raises Reject."""
    namespace, name = obj_meta(sm)
    spec = sm.get("spec") or {}
    cls = scrape_class(ctx, spec)
    role = endpoint_role(ctx, spec)
    role_selector = spec.get("selectorMechanism") == "RoleSelector"
    meta = "__meta_kubernetes_endpointslice" if role == "endpointslice" else "__meta_kubernetes_endpoint"
    enforced = enforced_namespace_rules(ctx, KIND_PLURAL, namespace, name)
    jobs = []
    for i, ep in enumerate(spec.get("endpoints") or ()):
        field = f"spec.endpoints[{i}]"
        job = job_head(ctx, scope, f"serviceMonitor/{namespace}/{name}/{i}", ep, field)
        job["kubernetes_sd_configs"] = [
            k8s_sd_config(ctx, scope, role, namespace, spec, cls, (role, "service") if role_selector else ())
        ]
        http_part(ctx, scope, ep, job, field, cls)
        job["relabel_configs"] = _relabels(ctx, spec, ep, meta, role_selector, cls, enforced)
        job_tail(ctx, scope, job, spec, ep, field, cls, enforced)
        jobs.append(job)
    return jobs


def _relabels(
    ctx: GenContext,
    spec: Mapping[str, Any],
    ep: Mapping[str, Any],
    meta: str,
    role_selector: bool,
    cls: Mapping[str, Any],
    enforced: list[dict],
) -> list[dict]:
    san = relabel.sanitize_label_name
    rules: list[dict] = [_JOB_NAME_RULE]
    if not role_selector:
        rules += relabel.selector_relabels(spec.get("selector"), "__meta_kubernetes_service")
    port, target_port = ep.get("port"), ep.get("targetPort")
    if port:
        rules.append(_keep_port(f"{meta}_port_name", port) if type(port) is str
                     else {"action": "keep", "source_labels": [f"{meta}_port_name"], "regex": port})
    elif isinstance(target_port, str) and target_port:
        rules.append(_keep_port("__meta_kubernetes_pod_container_port_name", target_port))
    elif isinstance(target_port, int) and target_port:
        rules.append({"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": target_port})
    rules += _target_rules(meta, ep.get("filterRunning") is not False)
    for label in spec.get("targetLabels") or ():
        rules.append({
            "source_labels": [f"__meta_kubernetes_service_label_{san(label)}"],
            "target_label": san(label), "regex": "(.+)", "replacement": "${1}",
        })
    for label in [*(spec.get("podTargetLabels") or ()), *(ctx.spec.get("podTargetLabels") or ())]:
        rules.append({
            "source_labels": [f"__meta_kubernetes_pod_label_{san(label)}"],
            "target_label": san(label), "regex": "(.+)", "replacement": "${1}",
        })
    rules.append(_JOB_RULE)
    if spec.get("jobLabel"):
        rules.append({
            "source_labels": [f"__meta_kubernetes_service_label_{san(spec['jobLabel'])}"],
            "target_label": "job", "regex": "(.+)", "replacement": "${1}",
        })
    return rules + relabel_tail(ctx, endpoint_label(port, target_port), cls, ep, enforced)


# The rules every ServiceMonitor job has, built once and emitted once per indentation (Frozen).
_JOB_NAME_RULE = Frozen({"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"})
_JOB_RULE = Frozen({"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job", "replacement": "${1}"})


@functools.lru_cache(maxsize=4096)
def _keep_port(source: str, name: str) -> Frozen:
    """Keep the targets of the endpoint's port (most monitors name one of a few: web, http-metrics...)."""
    return Frozen({"action": "keep", "source_labels": [source], "regex": name})


@functools.lru_cache(maxsize=8)
def _target_rules(meta: str, filter_running: bool) -> tuple[Frozen, ...]:
    """node/pod from the endpoint's target, namespace/service/pod/container labels, and (unless
    filterRunning is false) the drop of finished pods."""
    rules = [Frozen({
        "source_labels": [f"{meta}_address_target_kind", f"{meta}_address_target_name"],
        "separator": ";",
        "regex": f"{kind};(.*)",
        "replacement": "${1}",
        "target_label": label,
    }) for kind, label in (("Node", "node"), ("Pod", "pod"))]
    rules += [Frozen({"source_labels": [source], "target_label": target}) for source, target in (
        ("__meta_kubernetes_namespace", "namespace"),
        ("__meta_kubernetes_service_name", "service"),
        ("__meta_kubernetes_pod_name", "pod"),
        ("__meta_kubernetes_pod_container_name", "container"),
    )]
    if filter_running:
        rules.append(Frozen({"action": "drop", "source_labels": ["__meta_kubernetes_pod_phase"], "regex": "(Failed|Succeeded)"}))
    return tuple(rules)
