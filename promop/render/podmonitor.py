"""PodMonitor endpoints to Prometheus scrape jobs (role `pod`), in upstream's relabel order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render import relabel
from promop.render.context import GenContext
from promop.render.job import endpoint_label, enforced_namespace_rules, http_part, job_head, job_tail, relabel_tail, scrape_class
from promop.render.model import obj_meta
from promop.render.scrape import k8s_sd_config
from promop.render.store import Scope

KIND_PLURAL = "podmonitors"


def pod_monitor_jobs(ctx: GenContext, pm: Mapping[str, Any], scope: Scope) -> list[dict]:
    """One scrape job per podMetricsEndpoint of a (validated) PodMonitor; raises Reject."""
    namespace, name = obj_meta(pm)
    spec = pm.get("spec") or {}
    cls = scrape_class(ctx, spec)
    role_selector = spec.get("selectorMechanism") == "RoleSelector"
    enforced = enforced_namespace_rules(ctx, KIND_PLURAL, namespace, name)
    jobs = []
    for i, ep in enumerate(spec.get("podMetricsEndpoints") or ()):
        field = f"spec.podMetricsEndpoints[{i}]"
        job = job_head(ctx, scope, f"podMonitor/{namespace}/{name}/{i}", ep, field)
        job["kubernetes_sd_configs"] = [
            k8s_sd_config(ctx, scope, "pod", namespace, spec, cls, ("pod",) if role_selector else ())
        ]
        http_part(ctx, scope, ep, job, field, cls, safe_tls=True)
        job["relabel_configs"] = _relabels(ctx, namespace, name, spec, ep, role_selector, cls, enforced)
        job_tail(ctx, scope, job, spec, ep, field, cls, enforced)
        jobs.append(job)
    return jobs


def _relabels(
    ctx: GenContext,
    namespace: str,
    name: str,
    spec: Mapping[str, Any],
    ep: Mapping[str, Any],
    role_selector: bool,
    cls: Mapping[str, Any],
    enforced: list[dict],
) -> list[dict]:
    san = relabel.sanitize_label_name
    rules: list[dict] = [{"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"}]
    # Unlike ServiceMonitors, upstream filters on the pod phase first.
    if ep.get("filterRunning") is not False:
        rules.append({"action": "drop", "source_labels": ["__meta_kubernetes_pod_phase"], "regex": "(Failed|Succeeded)"})
    if not role_selector:
        rules += relabel.selector_relabels(spec.get("selector"), "__meta_kubernetes_pod")
    port, port_number, target_port = ep.get("port"), ep.get("portNumber"), ep.get("targetPort")
    if port:
        rules.append({"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": port})
    elif port_number:
        rules.append({"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": port_number})
    elif isinstance(target_port, str) and target_port:
        rules.append({"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": target_port})
    elif isinstance(target_port, int) and target_port:
        rules.append({"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": target_port})
    for source, target in (
        ("__meta_kubernetes_namespace", "namespace"),
        ("__meta_kubernetes_pod_container_name", "container"),
        ("__meta_kubernetes_pod_name", "pod"),
    ):
        rules.append({"source_labels": [source], "target_label": target})
    for label in [*(spec.get("podTargetLabels") or ()), *(ctx.spec.get("podTargetLabels") or ())]:
        rules.append({
            "source_labels": [f"__meta_kubernetes_pod_label_{san(label)}"],
            "target_label": san(label), "regex": "(.+)", "replacement": "${1}",
        })
    rules.append({"target_label": "job", "replacement": f"{namespace}/{name}"})
    if spec.get("jobLabel"):
        rules.append({
            "source_labels": [f"__meta_kubernetes_pod_label_{san(spec['jobLabel'])}"],
            "target_label": "job", "regex": "(.+)", "replacement": "${1}",
        })
    # upstream: the endpoint label is the port name, else targetPort as a string (even "0"); a
    # portNumber alone gives no endpoint label
    return rules + relabel_tail(ctx, endpoint_label(port, target_port), cls, ep, enforced)
