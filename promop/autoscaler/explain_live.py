"""`promop hpa explain NAMESPACE/NAME`: the scenario of a live HPA, decided and explained.

Reads the HPA (autoscaling/v2), its target's `/scale`, the pods its selector
matches and the metrics: from the metrics APIs (metrics.k8s.io,
custom.metrics.k8s.io, external.metrics.k8s.io) or, with `--prometheus-url`,
straight from Prometheus (cAdvisor series for cpu and memory, the metric by
name for Pods, Object and External metrics). The controller's memory
(recommendations, scale events) is not readable from outside it, so the
decision is that of a first pass; the output says so.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from promop.autoscale.explain import explain
from promop.autoscale.model import MetricValues, Options, PodMetric
from promop.quantity import milli_value
from promop.autoscale.scenario import Scenario, decision_to_dict
from promop.autoscale.spec import HpaSpec, SpecError, parse_hpa_spec
from promop.autoscale.whatif import WhatIfError, apply_what_if, parse_what_if
from promop.autoscale.memhpa import render_query
from promop.autoscaler.metrics_versions import NoMetricVersions, custom_metrics_version
from promop.autoscaler.pods import parse_time, to_pod
from promop.autoscaler.reconcile import plural, target_resource
from promop.kube.errors import ApiError
from promop.kube.resources import PODS, Resource

HPAS = Resource("autoscaling", "v2", "horizontalpodautoscalers", kind="HorizontalPodAutoscaler")
RESOURCE_METRICS = Resource("metrics.k8s.io", "v1beta1", "pods", kind="PodMetrics")
CPU_QUERY = ('sum by (pod) (rate(container_cpu_usage_seconds_total{namespace="{{namespace}}", pod=~"{{pods}}", '
             'container!="", container!="POD"}[5m]))')
MEMORY_QUERY = ('sum by (pod) (container_memory_working_set_bytes{namespace="{{namespace}}", pod=~"{{pods}}", '
                'container!="", container!="POD"})')


class LiveError(Exception):
    """A user-facing failure of `explain` (not found, unreachable, bad flag)."""


def _selector_string(selector: dict | None) -> str:
    from promop.labelselector import parse_selector

    return str(parse_selector(selector or {}))


class PrometheusSource:
    """Metrics straight from Prometheus."""

    def __init__(self, url: str) -> None:
        from promop.prom import PrometheusClient

        self.client = PrometheusClient(url, timeout=10.0, retries=1)

    def _per_pod(self, query: str, scale: float, now: float) -> dict[str, PodMetric]:
        out: dict[str, PodMetric] = {}
        for s in self.client.query_vector(query):
            pod = s.labels.get("pod")
            if pod:
                out[pod] = PodMetric(int(round(s.value * scale)), s.timestamp or now, 60.0)
        return out

    def fill(self, spec: HpaSpec, ns: str, pod_names: list[str], values: MetricValues, now: float) -> None:
        for m in spec.metrics:
            try:
                if m.type in ("Resource", "ContainerResource"):
                    template = CPU_QUERY if m.name == "cpu" else MEMORY_QUERY
                    if m.type == "ContainerResource":
                        template = template.replace('container!="", container!="POD"', f'container="{m.container}"')
                    samples = self._per_pod(render_query(template, ns, pod_names), 1000.0, now)
                    if m.type == "Resource":
                        values.resource[m.name] = samples
                    else:
                        values.container_resource.setdefault(m.container, {})[m.name] = samples
                elif m.type == "Pods":
                    q = render_query(f'sum by (pod) ({m.name}{{namespace="{{{{namespace}}}}", pod=~"{{{{pods}}}}"}})',
                                     ns, pod_names)
                    values.pods[m.name] = self._per_pod(q, 1000.0, now)
                elif m.type == "Object":
                    obj = m.described_object
                    label = str(obj.get("kind", "")).lower()
                    q = f'sum({m.name}{{namespace="{ns}", {label}="{obj.get("name")}"}})'
                    result = self.client.query_vector(q)
                    if result:
                        values.object[m.name] = int(round(result[0].value * 1000))
                else:
                    labels = ",".join(f'{k}="{v}"' for k, v in ((m.selector or {}).get("matchLabels") or {}).items())
                    result = self.client.query_vector(f"{m.name}{{{labels}}}")
                    values.external[m.name] = [int(round(s.value * 1000)) for s in result]
            except Exception as exc:  # noqa: BLE001 - reported as that metric's failure
                values.errors[f"{m.type}/{m.name}"] = f"Prometheus: {exc}"


def _window(text: Any) -> float:
    """A PodMetrics window, a Go duration as metrics-server and the adapter write it ("15s", "2m0s")."""
    from promop.duration import parse_go_seconds

    try:
        return parse_go_seconds(str(text)) if text else 30.0
    except ValueError:
        return 30.0


class MetricsApiSource:
    """Metrics from the aggregated metrics APIs, as the HPA controller reads them: custom metrics at the
    version discovery offers (see promop.autoscaler.metrics_versions), the others at v1beta1."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._custom_version: str | None = None

    def custom_version(self) -> str:
        """Found once per source through discovery; NoMetricVersions when unusable."""
        if self._custom_version is None:
            self._custom_version = custom_metrics_version(self.client)
        return self._custom_version

    def fill(self, spec: HpaSpec, ns: str, pod_names: list[str], values: MetricValues, now: float,
             selector: str = "") -> None:
        for m in spec.metrics:
            try:
                if m.type in ("Resource", "ContainerResource"):
                    items = self.client.list(RESOURCE_METRICS, ns, label_selector=selector or None)["items"]
                    samples: dict[str, PodMetric] = {}
                    for item in items:
                        total = 0
                        for c in item.get("containers") or []:
                            if m.type == "ContainerResource" and c.get("name") != m.container:
                                continue
                            total += milli_value((c.get("usage") or {}).get(m.name, "0"))
                        samples[item["metadata"]["name"]] = PodMetric(
                            total, parse_time(item.get("timestamp")) or now, _window(item.get("window")))
                    if m.type == "Resource":
                        values.resource[m.name] = samples
                    else:
                        values.container_resource.setdefault(m.container, {})[m.name] = samples
                elif m.type == "Pods":
                    res = Resource("custom.metrics.k8s.io", self.custom_version(), "pods")
                    body = self.client.get(res, "*", ns, subresource=m.name)
                    wanted = set(pod_names)  # the API is asked for every pod of the namespace: keep the selector's
                    values.pods[m.name] = {i["describedObject"]["name"]: PodMetric(milli_value(i["value"]), now, 60.0)
                                           for i in body.get("items") or [] if i["describedObject"]["name"] in wanted}
                elif m.type == "Object":
                    obj = m.described_object
                    res = Resource("custom.metrics.k8s.io", self.custom_version(), plural(str(obj.get("kind", ""))))
                    body = self.client.get(res, obj.get("name"), ns, subresource=m.name)
                    values.object[m.name] = milli_value(body["items"][0]["value"])
                else:
                    res = Resource("external.metrics.k8s.io", "v1beta1", m.name)
                    sel = _selector_string(m.selector) or None
                    body = self.client.list(res, ns, label_selector=sel)
                    values.external[m.name] = [milli_value(i["value"]) for i in body.get("items") or []]
            except NoMetricVersions as exc:   # the HPA's words for it
                values.errors[f"{m.type}/{m.name}"] = f"unable to fetch metrics from custom metrics API: {exc}"
            except (ApiError, KeyError, IndexError, ValueError) as exc:
                values.errors[f"{m.type}/{m.name}"] = str(exc)


def build_scenario(client: Any, namespace: str, name: str, prometheus_url: str | None, now: float) -> Scenario:
    try:
        hpa = client.get(HPAS, name, namespace)
    except ApiError as exc:
        if exc.status == 404:
            raise LiveError(f"HorizontalPodAutoscaler {namespace}/{name} not found") from None
        raise LiveError(f"cannot read HorizontalPodAutoscaler {namespace}/{name}: {exc}") from None
    try:
        spec = parse_hpa_spec(hpa.get("spec"), "spec")
    except SpecError as exc:
        raise LiveError(f"HorizontalPodAutoscaler {namespace}/{name}: {exc}") from None
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    res = target_resource(ref)
    try:
        scale = client.get(res, ref.get("name", ""), namespace, subresource="scale")
    except ApiError as exc:
        raise LiveError(f"cannot read the scale of {ref.get('kind')}/{namespace}/{ref.get('name')}: {exc}") from None
    selector = (scale.get("status") or {}).get("selector") or ""
    pods = client.list(PODS, namespace, label_selector=selector or None)["items"]
    model_pods = [to_pod(p) for p in pods]
    values = MetricValues()
    names = [p.name for p in model_pods]
    if prometheus_url:
        PrometheusSource(prometheus_url).fill(spec, namespace, names, values, now)
    else:
        MetricsApiSource(client).fill(spec, namespace, names, values, now, selector)
    spec_replicas = (scale.get("spec") or {}).get("replicas", 0)
    return Scenario(now, f"{namespace}/{name}", spec, spec_replicas,
                    (scale.get("status") or {}).get("replicas", spec_replicas), model_pods, values, None,
                    Options())


def explain_live(args: argparse.Namespace, client: Any = None, out=None) -> int:
    import yaml

    out = out or sys.stdout
    namespace, _, name = args.name.rpartition("/")
    namespace = namespace or "default"
    try:
        factors = parse_what_if(args.what_if)
    except WhatIfError as exc:
        raise LiveError(str(exc)) from None
    own = client is None
    if own:
        from promop.host.kubeconfig import load_client

        try:
            client = load_client(args.kubeconfig)  # a kubeconfig mistake: UserError, one line, exit 2
        except ApiError as exc:
            raise LiveError(str(exc)) from None
    try:
        scenario = build_scenario(client, namespace, name, args.prometheus_url, time.time())
    finally:
        if own:
            client.close()
    unmatched = apply_what_if(scenario.metrics, factors)
    if unmatched:
        raise LiveError(f"--what-if: no observed metric named {', '.join(unmatched)}")
    decision = scenario.decide()
    lines = explain(decision, scenario.spec)
    lines.append("note: the controller's recent recommendations and scale events live in its memory; this is the "
                 "decision of a first pass (a scale-down would also wait for the stabilization window)")
    if args.output == "yaml":
        yaml.safe_dump(decision_to_dict(decision, lines), out, sort_keys=False, width=120)
        return 0
    what_if = f" (what if: {', '.join(args.what_if)})" if args.what_if else ""
    print(f"HorizontalPodAutoscaler {namespace}/{name}{what_if}", file=out)
    print(f"  decision: {decision.current_replicas} -> {decision.desired_replicas} replicas"
          + (f" ({decision.reason})" if decision.reason else ""), file=out)
    for line in lines:
        print(f"  - {line}", file=out)
    for c in decision.conditions:
        print(f"  {c.type}={c.status} {c.reason}: {c.message}", file=out)
    return 0


__all__ = ["LiveError", "explain_live"]
