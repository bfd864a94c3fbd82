"""Answers to the three metrics APIs, from the current registry and Prometheus.

Response bodies follow custom-metrics-apiserver, prometheus-adapter and
metrics-server exactly (see docs/adapter.md); errors are Kubernetes `Status`
objects whose message starts with upstream's wording and then says why.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from promop.adapter.config import AdapterConfig, GroupResource
from promop.adapter.naming import NAMESPACES, Namer, QueryError, ResourceNamer
from promop.adapter.quantity import binary_quantity, milli_quantity, rfc3339
from promop.duration import format_go_seconds
from promop.adapter.registry import MetricKey, Registry
from promop.adapter.resources import ResourceInfo, ResourceMapper
from promop.adapter.keda_forward import KedaForwarder, KedaForwardError, names_scaled_object
from promop.adapter.selector import Requirement, SelectorError, parse_selector
from promop.prom import PromError, PrometheusClient, Sample, Scalar

log = logging.getLogger("promop.adapter")

CUSTOM = "custom.metrics.k8s.io"
EXTERNAL = "external.metrics.k8s.io"
RESOURCE = "metrics.k8s.io"


class ApiError(Exception):
    """An answer that is a Kubernetes Status."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def body(self) -> dict:
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": self.message, "reason": self.reason}
        if self.details:
            out["details"] = self.details
        out["code"] = self.code
        return out


def not_found(message: str, details: dict | None = None) -> ApiError:
    return ApiError(404, "NotFound", message, details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")


class ObjectLister(Protocol):
    """Objects (metadata) the metrics describe: names for `*` requests, pods and nodes for metrics.k8s.io."""

    def list(self, info: ResourceInfo, namespace: str | None, selector: list[Requirement],
             selector_text: str) -> list[dict]: ...

    def get(self, info: ResourceInfo, namespace: str | None, name: str) -> dict | None: ...


@dataclass
class State:
    """Everything a request needs, swapped as one object on relist and reload."""

    config: AdapterConfig
    mapper: ResourceMapper
    namers: list[Namer]
    external_namers: list[Namer]
    cpu: ResourceNamer | None
    memory: ResourceNamer | None
    registry: Registry
    generation: int = 0
    extra: dict = field(default_factory=dict)


def label_selector_json(reqs: list[Requirement]) -> dict | None:
    """metav1.ParseToLabelSelector of a parsed selector, or None when empty."""
    if not reqs:
        return None
    match_labels: dict[str, str] = {}
    exprs: list[dict] = []
    for r in reqs:
        if r.operator in ("=", "=="):
            match_labels[r.key] = r.values[0]
        elif r.operator == "!=":
            exprs.append({"key": r.key, "operator": "NotIn", "values": list(r.values)})
        elif r.operator == "in":
            exprs.append({"key": r.key, "operator": "In", "values": list(r.values)})
        elif r.operator == "notin":
            exprs.append({"key": r.key, "operator": "NotIn", "values": list(r.values)})
        elif r.operator == "exists":
            exprs.append({"key": r.key, "operator": "Exists"})
        elif r.operator == "!":
            exprs.append({"key": r.key, "operator": "DoesNotExist"})
    out: dict[str, Any] = {}
    if match_labels:
        out["matchLabels"] = match_labels
    if exprs:
        out["matchExpressions"] = exprs
    return out


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


class Provider:
    def __init__(self, prom: PrometheusClient, lister: ObjectLister, clock: Callable[[], float] = time.time,
                 query_timeout: float | None = None, keda: KedaForwarder | None = None) -> None:
        self.prom = prom
        self.lister = lister
        self.clock = clock
        self.query_timeout = query_timeout
        self.keda = keda if keda is not None else KedaForwarder(None)

    # -- helpers ---------------------------------------------------------------------

    def _vector(self, query: str) -> list[Sample]:
        try:
            result = self.prom.query(query, timeout=self.query_timeout)
        except PromError as exc:
            log.error("prometheus query failed: %s", exc)
            raise internal(f"unable to fetch metrics: {exc}") from None
        if not isinstance(result, list) or (result and not isinstance(result[0], Sample)):
            log.error("unexpected result type from prometheus for query %s: %s", query, type(result).__name__)
            raise internal(f"unable to fetch metrics: query {query!r} returned {type(result).__name__}, not a vector")
        return result

    def _list(self, info: ResourceInfo, namespace: str | None, selector: list[Requirement], text: str) -> list[dict]:
        try:
            return self.lister.list(info, namespace, selector, text)
        except Exception as exc:   # the API server's answer (Forbidden, unreachable, ...) is the user's clue
            log.error("cannot list %s: %s", info.resource, exc)
            raise internal(f"unable to list matching {info.resource}: {exc}") from None

    def _get(self, info: ResourceInfo, namespace: str | None, name: str) -> dict | None:
        try:
            return self.lister.get(info, namespace, name)
        except Exception as exc:
            log.error("cannot get %s %s: %s", info.resource, name, exc)
            raise internal(f"unable to get {info.resource} {name}: {exc}") from None

    @staticmethod
    def _selector(text: str | None, what: str) -> list[Requirement]:
        try:
            return parse_selector(text, what)
        except SelectorError as exc:
            raise bad_request(f"invalid {what}: {exc}") from None

    # -- custom.metrics.k8s.io ------------------------------------------------------------

    def resolve_resource(self, state: State, resource: str) -> ResourceInfo:
        name, _, group = resource.partition(".")
        info = state.mapper.normalize(GroupResource(group, name))
        if info is None:
            raise not_found(f"the server could not find the requested resource: no resource {resource!r} is known")
        return info

    def custom(self, state: State, version: str, resource: str, namespace: str | None, name: str, metric: str,
               metric_selector: str | None = None, label_selector: str | None = None) -> dict:
        """GET .../{resource}/{name|*}/{metric} (namespace None: cluster-scoped route)."""
        info = self.resolve_resource(state, resource)
        gr = info.group_resource
        namespaced = namespace is not None
        if gr == NAMESPACES and namespaced:
            raise not_found(f"the server could not find the metric {metric} for {gr}: "
                            "metrics about a namespace are at /namespaces/<name>/metrics/<metric>")
        key = MetricKey(gr.group, gr.resource, namespaced, metric)
        entry = state.registry.custom.get(key)
        if entry is None:
            why = state.registry.why_missing(gr, namespaced, metric) if state.config.rules else \
                "no custom metrics rules are configured (config `rules` is empty)"
            raise not_found(f"the server could not find the metric {metric} for {gr}: {why}",
                            {"group": CUSTOM, "kind": gr.resource})
        msel = self._selector(metric_selector, "metricLabelSelector")
        ns = namespace or ""
        objects: list[dict] | None = None
        if name == "*":
            osel = self._selector(label_selector, "labelSelector")
            objects = self._list(info, namespace, osel, label_selector or "")
            names = [_meta(o).get("name", "") for o in objects]
            if not names:
                where = f" in namespace {namespace}" if namespace else ""
                raise not_found(f"the server could not find the metric {metric} for {gr}: no {gr} "
                                f"match labelSelector {label_selector or '(everything)'}{where}",
                                {"group": CUSTOM, "kind": gr.resource})
        else:
            names = [name]
        try:
            query = entry.namer.query(entry.series, info, ns, names, msel)
            label = entry.namer.converter.label_for(info)
        except QueryError as exc:
            if "no PromQL equivalent" in str(exc):
                raise bad_request(f"invalid metricLabelSelector: {exc}") from None
            raise internal(f"cannot build the query for {metric} on {gr}: {exc}") from None
        samples = self._vector(query)
        values: dict[str, float] = {}
        for s in samples:
            values[s.labels.get(label, "")] = s.value
        now = rfc3339(self.clock())
        selector_json = label_selector_json(msel)
        if objects is None:
            if name not in values:
                detail = ("Prometheus returned nothing" if not samples else
                          f"none of the {len(samples)} results has {label}={name!r}")
                raise not_found(f"the server could not find the metric {metric} for {gr} {name}: {detail} "
                                f"for query {query}", {"group": CUSTOM, "kind": gr.resource, "name": name})
            items = [self._metric_value(version, info, ns if namespaced else "", name, metric, selector_json,
                                        values[name], now)]
        else:
            # one item per object with a value: the parts every item shares are built once
            items = []
            kind, api_version = info.kind, f"{info.group}/{info.version}"
            shared_metric = {"name": metric, "selector": selector_json}
            for o in objects:
                meta = o.get("metadata") or {}
                n = meta.get("name", "")
                if n not in values:
                    continue
                described: dict[str, Any] = {"kind": kind}
                if namespaced and meta.get("namespace"):
                    described["namespace"] = meta["namespace"]
                described["name"] = n
                described["apiVersion"] = api_version
                if version == "v1beta1":
                    items.append({"describedObject": described, "metricName": metric, "timestamp": now,
                                  "value": milli_quantity(values[n]), "selector": selector_json})
                else:
                    items.append({"describedObject": described, "metric": shared_metric, "timestamp": now,
                                  "value": milli_quantity(values[n])})
        return {"kind": "MetricValueList", "apiVersion": f"{CUSTOM}/{version}", "metadata": {}, "items": items}

    @staticmethod
    def _metric_value(version: str, info: ResourceInfo, namespace: str, name: str, metric: str,
                      selector: dict | None, value: float, now: str) -> dict:
        described: dict[str, Any] = {"kind": info.kind}
        if namespace:
            described["namespace"] = namespace
        described["name"] = name
        described["apiVersion"] = f"{info.group}/{info.version}"
        if version == "v1beta1":
            return {"describedObject": described, "metricName": metric, "timestamp": now,
                    "value": milli_quantity(value), "selector": selector}
        return {"describedObject": described, "metric": {"name": metric, "selector": selector},
                "timestamp": now, "value": milli_quantity(value)}

    def custom_discovery(self, state: State, version: str) -> dict:
        resources = []
        for k in state.registry.custom_metrics():
            res = f"{k.resource}.{k.group}" if k.group else k.resource
            resources.append({"name": f"{res}/{k.metric}", "singularName": "", "namespaced": k.namespaced,
                              "kind": "MetricValueList", "verbs": ["get"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{CUSTOM}/{version}",
                "resources": resources}

    # -- external.metrics.k8s.io ---------------------------------------------------------

    def external(self, state: State, namespace: str, metric: str, label_selector: str | None) -> dict:
        if names_scaled_object(label_selector):  # a KEDA ScaledObject's HPA: the autoscaler answers
            try:
                return self.keda.external(namespace, metric, label_selector)
            except KedaForwardError as exc:
                raise ApiError(exc.code, exc.reason, str(exc)) from None
        entry = state.registry.external.get(metric)
        if entry is None:
            raise not_found(f"the server could not find the requested resource: "
                            f"{state.registry.why_missing_external(metric)}",
                            {"group": EXTERNAL, "kind": metric})
        sel = self._selector(label_selector, "labelSelector")
        try:
            query = entry.namer.external_query(entry.series, namespace, sel)
        except QueryError as exc:
            if "no PromQL equivalent" in str(exc):
                raise bad_request(f"invalid labelSelector: {exc}") from None
            raise internal(f"cannot build the query for external metric {metric}: {exc}") from None
        try:
            result = self.prom.query(query, timeout=self.query_timeout)
        except PromError as exc:
            log.error("prometheus query failed: %s", exc)
            raise internal(f"unable to fetch metrics: {exc}") from None
        items: list[dict] = []
        if isinstance(result, Scalar):
            items.append({"metricName": metric, "metricLabels": None, "timestamp": rfc3339(result.timestamp),
                          "value": milli_quantity(result.value)})
        elif isinstance(result, list) and (not result or isinstance(result[0], Sample)):
            for s in result:
                items.append({"metricName": metric, "metricLabels": dict(s.labels), "timestamp": rfc3339(s.timestamp),
                              "value": milli_quantity(s.value)})
        else:
            raise internal(f"unable to fetch metrics: query {query!r} returned {type(result).__name__}")
        return {"kind": "ExternalMetricValueList", "apiVersion": f"{EXTERNAL}/v1beta1", "metadata": {},
                "items": items}

    def external_discovery(self, state: State) -> dict:
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{EXTERNAL}/v1beta1",
                "resources": [{"name": m, "singularName": "", "namespaced": True, "kind": "ExternalMetricValueList",
                               "verbs": ["get"]} for m in state.registry.external_metrics()]}

    # -- metrics.k8s.io ---------------------------------------------------------------------

    def _resource_query(self, namer: ResourceNamer, query: str, key_labels: list[str]) -> dict[tuple, Sample]:
        out: dict[tuple, Sample] = {}
        for s in self._vector(query):
            out[tuple(s.labels.get(k, "") for k in key_labels)] = s
        return out

    def pod_metrics(self, state: State, namespace: str | None, name: str | None,
                    label_selector: str | None = None) -> dict:
        if state.cpu is None or state.memory is None:
            raise not_found("the server could not find the requested resource: resourceRules is not configured")
        pods_info = state.mapper.get(GroupResource("", "pods"))
        assert pods_info is not None
        if name is not None:
            pod = self._get(pods_info, namespace, name)
            if pod is None:
                raise not_found(f'podmetrics.metrics.k8s.io "{name}" not found',
                                {"name": name, "group": RESOURCE, "kind": "pods"})
            pods = [pod]
        else:
            sel = self._selector(label_selector, "labelSelector")
            pods = [p for p in self._list(pods_info, namespace, sel, label_selector or "")
                    if ((p.get("status") or {}).get("phase") in (None, "Running"))]
        by_ns: dict[str, list[dict]] = {}
        for p in pods:
            by_ns.setdefault(_meta(p).get("namespace", ""), []).append(p)
        items = []
        for ns in sorted(by_ns):
            group = by_ns[ns]
            names = [_meta(p).get("name", "") for p in group]
            measured = self._pod_usage(state, ns, names)
            for p in group:
                n = _meta(p).get("name", "")
                got = measured.get(n)
                if got is None:
                    continue
                ts, containers = got
                meta: dict[str, Any] = {"name": n, "namespace": ns, "creationTimestamp": rfc3339(self.clock())}
                if _meta(p).get("labels"):
                    meta["labels"] = _meta(p)["labels"]
                items.append({"metadata": meta, "timestamp": rfc3339(ts),
                              "window": format_go_seconds(state.config.resource_rules.window_seconds),  # type: ignore[union-attr]
                              "containers": containers})
        if name is not None:
            if not items:
                raise not_found(f'podmetrics.metrics.k8s.io "{name}" not found: Prometheus has no CPU and memory '
                                f"for it (see resourceRules.cpu/memory.containerQuery)",
                                {"name": name, "group": RESOURCE, "kind": "pods"})
            return {"kind": "PodMetrics", "apiVersion": f"{RESOURCE}/v1beta1", **items[0]}
        return {"kind": "PodMetricsList", "apiVersion": f"{RESOURCE}/v1beta1", "metadata": {},
                "items": items}

    def _pod_usage(self, state: State, namespace: str, pods: list[str]) -> dict[str, tuple[float, list[dict]]]:
        assert state.cpu is not None and state.memory is not None
        results = {}
        for res, namer in (("cpu", state.cpu), ("memory", state.memory)):
            try:
                query = namer.container_query(namespace, pods)
                keys = [namer.pod_label(), namer.rule.container_label]
            except QueryError as exc:
                raise internal(f"cannot build the {res} query: {exc}") from None
            results[res] = self._resource_query(namer, query, keys)
        per_pod: dict[str, dict[str, dict[str, float]]] = {}
        earliest: dict[str, float] = {}
        for res in ("cpu", "memory"):
            for (pod, container), s in results[res].items():
                per_pod.setdefault(pod, {}).setdefault(container, {})[res] = s.value
                earliest[pod] = min(earliest.get(pod, math.inf), s.timestamp)
        out = {}
        for pod in pods:
            containers = per_pod.get(pod)
            if not containers:
                continue
            has = {r for c in containers.values() for r in c}
            if has != {"cpu", "memory"}:
                log.info("missing %s for pod %s/%s, skipping", "CPU" if "cpu" not in has else "memory", namespace, pod)
                continue
            out[pod] = (earliest[pod], [
                {"name": c, "usage": {"cpu": milli_quantity(v.get("cpu", 0.0)),
                                      "memory": binary_quantity(v.get("memory", 0.0))}}
                for c, v in sorted(containers.items())])
        return out

    def node_metrics(self, state: State, name: str | None, label_selector: str | None = None) -> dict:
        if state.cpu is None or state.memory is None:
            raise not_found("the server could not find the requested resource: resourceRules is not configured")
        nodes_info = state.mapper.get(GroupResource("", "nodes"))
        assert nodes_info is not None
        if name is not None:
            node = self._get(nodes_info, None, name)
            if node is None:
                raise not_found(f'nodemetrics.metrics.k8s.io "{name}" not found',
                                {"name": name, "group": RESOURCE, "kind": "nodes"})
            nodes = [node]
        else:
            sel = self._selector(label_selector, "labelSelector")
            nodes = self._list(nodes_info, None, sel, label_selector or "")
        names = [_meta(n).get("name", "") for n in nodes]
        items = []
        if names:
            usage: dict[str, dict[str, Sample]] = {}
            for res, namer in (("cpu", state.cpu), ("memory", state.memory)):
                try:
                    query = namer.node_query(names)
                    label = namer.node_label()
                except QueryError as exc:
                    raise internal(f"cannot build the {res} node query: {exc}") from None
                for (node,), s in self._resource_query(namer, query, [label]).items():
                    usage.setdefault(node, {})[res] = s
            for n in nodes:
                nm = _meta(n).get("name", "")
                u = usage.get(nm, {})
                if "cpu" not in u or "memory" not in u:
                    log.info("missing %s for node %s, skipping", "CPU" if "cpu" not in u else "memory", nm)
                    continue
                meta: dict[str, Any] = {"name": nm, "creationTimestamp": rfc3339(self.clock())}
                if _meta(n).get("labels"):
                    meta["labels"] = _meta(n)["labels"]
                items.append({"metadata": meta, "timestamp": rfc3339(min(u["cpu"].timestamp, u["memory"].timestamp)),
                              "window": format_go_seconds(state.config.resource_rules.window_seconds),  # type: ignore[union-attr]
                              "usage": {"cpu": milli_quantity(u["cpu"].value),
                                        "memory": binary_quantity(u["memory"].value)}})
        if name is not None:
            if not items:
                raise not_found(f'nodemetrics.metrics.k8s.io "{name}" not found: Prometheus has no CPU and memory '
                                f"for it (see resourceRules.cpu/memory.nodeQuery)",
                                {"name": name, "group": RESOURCE, "kind": "nodes"})
            return {"kind": "NodeMetrics", "apiVersion": f"{RESOURCE}/v1beta1", **items[0]}
        return {"kind": "NodeMetricsList", "apiVersion": f"{RESOURCE}/v1beta1", "metadata": {}, "items": items}

    @staticmethod
    def resource_discovery() -> dict:
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{RESOURCE}/v1beta1",
                "resources": [
                    {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics",
                     "verbs": ["get", "list"]},
                    {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics",
                     "verbs": ["get", "list"]}]}
