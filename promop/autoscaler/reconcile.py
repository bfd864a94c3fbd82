"""One MemHpa pass: read (caches, the target's scale, Prometheus), decide (promop.autoscale), write differences.

Writes are the target's `/scale` (only when the size changes), the MemHpa's
`/status` (only when it changes) and Events (corrections once per change of
spec; rescales). The controller's memory per MemHpa (recommendations and scale
events for `behavior`) lives here and is forgotten when the MemHpa is deleted.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from promop.autoscale.hpa import Decision
from promop.autoscale.memhpa import MemHpaSpec, decide_memhpa, render_query, validate
from promop.autoscale.model import History
from promop.quantity import format_milli
from promop.autoscale.spec import SpecError
from promop.autoscaler.crd import MEMHPAS
from promop.autoscaler.pods import parse_time, to_pod
from promop.kube.errors import ApiError
from promop.kube.resources import EVENTS, Resource
from promop.host.logs import fields
from promop.labelselector import SelectorError, parse as parse_string_selector, parse_selector as parse_dict_selector
from promop.kube.store import NAMESPACE_INDEX

log = logging.getLogger("promop.autoscaler")

DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment")
STATEFULSETS = Resource("apps", "v1", "statefulsets", kind="StatefulSet")
REPLICASETS = Resource("apps", "v1", "replicasets", kind="ReplicaSet")
CACHED_KINDS = {"Deployment": DEPLOYMENTS, "StatefulSet": STATEFULSETS, "ReplicaSet": REPLICASETS}
COMPONENT = "promop-autoscaler"


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(int(t), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def plural(kind: str) -> str:
    """The resource name of a kind by the API's naming convention (Ingress -> ingresses, Policy -> policies)."""
    low = kind.lower()
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return low + "es"
    if low.endswith("y") and low[-2:-1] not in ("a", "e", "i", "o", "u"):
        return low[:-1] + "ies"
    return low + "s"


def target_resource(ref: dict) -> Resource:
    """The scale target's resource: the built-in workloads, else the kind's plural in the ref's group/version."""
    kind = ref.get("kind", "")
    api_version = ref.get("apiVersion") or "apps/v1"
    if kind in CACHED_KINDS and api_version.startswith("apps/"):
        return CACHED_KINDS[kind]
    group, _, version = api_version.rpartition("/")
    return Resource(group, version, plural(kind), kind=kind)


LABEL_INDEX = "labels"


def label_index(obj: dict) -> list[str]:
    """`namespace/key=value` for each label: a selector's pods without scanning the namespace."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace", "")
    return [f"{ns}/{k}={v}" for k, v in (meta.get("labels") or {}).items()]


class Retry(Exception):
    """The pass could not complete (the apiserver): requeue with backoff."""


class Conflict(Retry):
    """The cached MemHpa was older than the stored one: the next pass, on the newer object, will do."""


@dataclass
class Memory:
    history: History | None = None
    last_scale_time: float | None = None   # ours, until the status that records it is written
    corrections: tuple = ()
    last_event: tuple = ()


@dataclass
class Reconciler:
    client: Any
    prometheus: Any                                # .query_vector(promql) -> samples with .labels, .value
    memhpas: Any                                   # informer stores: .get(key) / .list()
    pods: Any
    workloads: dict[str, Any]                      # kind -> store
    clock: Callable[[], float] = time.time
    metrics: Any = None
    memory: dict[str, Memory] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def forget(self, key: str) -> None:
        with self._lock:
            self.memory.pop(key, None)

    def _memory(self, key: str) -> Memory:
        with self._lock:
            return self.memory.setdefault(key, Memory())

    # -- the pass ---------------------------------------------------------------------------
    def sync(self, key: str) -> Decision | None:
        """One pass over a MemHpa: validate, read the target's scale and pods, decide, rescale, write status."""
        obj = self.memhpas.get(key)
        if obj is None:
            self.forget(key)  # deleted: its history goes with it
            return None
        now = self.clock()
        ns = obj["metadata"].get("namespace", "")
        mem = self._memory(key)
        status = dict(obj.get("status") or {})
        conditions: list[dict] = []
        spec = self._validated(obj, mem, conditions)
        if spec is None:
            self._write_status(obj, status, {"conditions": conditions}, now)
            return None
        res = target_resource(spec.target)
        scale = self._scale(res, ns, spec.target.get("name", ""))
        if isinstance(scale, str):
            conditions.append(_cond("AbleToScale", "False", "FailedGetScale",
                                    f"the controller was unable to get the target's current scale: {scale}"))
            self._event_once(obj, mem, ("getscale", scale), "Warning", "FailedGetScale", scale)
            self._write_status(obj, status, {"conditions": conditions}, now)
            return None
        current = scale["spec"]["replicas"]
        if current == 0:
            conditions.append(_cond("ScalingActive", "False", "ScalingDisabled",
                                    "scaling is disabled since the replica count of the target is zero"))
            self._write_status(obj, status, {"conditions": conditions, "currentReplicas": 0,
                                             "desiredReplicas": 0}, now)
            return None
        try:
            pods = self._selected_pods(ns, scale["status"].get("selector"))
        except SelectorError as exc:
            conditions.append(_cond("AbleToScale", "False", "InvalidSelector", str(exc)))
            self._write_status(obj, status, {"conditions": conditions}, now)
            return None
        decision, new_status = self._decide(spec, mem, status, ns, current, pods, scale, now)
        if decision.rescale:
            self._rescale(obj, key, mem, spec, res, scale, decision, conditions, status, new_status, now)
        elif decision.error:
            self._event_once(obj, mem, ("metrics", decision.error), "Warning", "FailedComputeMetricsReplicas",
                             decision.error)
        conditions += [c.as_dict() for c in decision.conditions]
        new_status["conditions"] = conditions
        self._write_status(obj, status, new_status, now)
        return decision

    def _validated(self, obj: dict, mem: Memory, conditions: list[dict]) -> Any:
        """The spec with ValidationPolicy's corrections applied, or None when it is invalid (said in conditions)."""
        try:
            spec = validate(obj.get("spec"))
        except SpecError as exc:
            conditions.append(_cond("ValidSpec", "False", "InvalidSpec", str(exc)))
            self._event_once(obj, mem, ("invalid", str(exc)), "Warning", "InvalidSpec", str(exc))
            return None
        if spec.corrections:
            text = "; ".join(f"{c.field}: {c.message}" for c in spec.corrections)
            conditions.append(_cond("ValidSpec", "False", "SpecCorrected", text))
            if mem.corrections != tuple(text.split("; ")):
                mem.corrections = tuple(text.split("; "))
                for c in spec.corrections:
                    self._event(obj, "Warning", "ValidationPolicy", f"{c.field}: {c.message}")
        else:
            mem.corrections = ()
            conditions.append(_cond("ValidSpec", "True", "SpecValid", "the spec is valid as written"))
        return spec

    def _selected_pods(self, ns: str, selector: Any) -> list:
        """The target's pods (its /scale selector, a string or a LabelSelector); SelectorError when invalid."""
        matches = parse_dict_selector(selector).matches if isinstance(selector, dict) \
            else parse_string_selector(selector).matches
        return [to_pod(p) for p in self._candidates(ns, selector)
                if matches((p.get("metadata") or {}).get("labels") or {})]

    def _decide(self, spec: Any, mem: Memory, status: dict, ns: str, current: int, pods: list,
                scale: dict, now: float) -> tuple[Decision, dict]:
        """The HPA algorithm on this pass's usage, and the status fields it gives."""
        usage, error = self._usage(spec, ns, [p.name for p in pods])
        last_scale = parse_time(status.get("lastScaleTime"))
        unrecorded = None
        if mem.last_scale_time is not None and (last_scale is None or mem.last_scale_time > last_scale + 1):
            last_scale = unrecorded = mem.last_scale_time  # our status write is not in the cache yet (or conflicted)
        decision = decide_memhpa(spec, current, pods, usage, last_scale, mem.history, now, error,
                                 scale["status"].get("replicas", current))
        mem.history = decision.history
        new_status: dict = {"currentReplicas": current, "desiredReplicas": decision.desired_replicas}
        if unrecorded is not None:
            new_status["lastScaleTime"] = rfc3339(unrecorded)
        util = decision.metrics[0].utilization if decision.metrics and decision.metrics[0].error is None else None
        if util is not None:
            new_status["currentMemoryUtilizationPercentage"] = util
            new_status["currentAverageMemory"] = format_milli(decision.metrics[0].average_value // 1000 * 1000)
        return decision, new_status

    def _rescale(self, obj: dict, key: str, mem: Memory, spec: Any, res: Any, scale: dict, decision: Decision,
                 conditions: list[dict], status: dict, new_status: dict, now: float) -> None:
        """Write the target's /scale; on failure, say so in status and events and raise Retry."""
        ns = obj["metadata"].get("namespace", "")
        current = scale["spec"]["replicas"]
        ref = f"{spec.target.get('kind')}/{ns}/{spec.target.get('name')}"
        try:
            self._set_scale(res, ns, spec.target.get("name", ""), scale, decision.desired_replicas)
        except ApiError as exc:
            self._event(obj, "Warning", "FailedRescale", f"New size: {decision.desired_replicas}; reason: "
                                                         f"{decision.reason}; error: {exc}")
            conditions += [_cond("AbleToScale", "False", "FailedUpdateScale",
                                 f"the controller was unable to update the target scale: {exc}")]
            conditions += [c.as_dict() for c in decision.conditions if c.type != "AbleToScale"]
            new_status["desiredReplicas"] = current
            self._write_status(obj, status, dict(new_status, conditions=conditions), now)
            raise Retry(f"failed to rescale {ref}: {exc}") from exc
        mem.history = decision.history_after_rescale()
        mem.last_scale_time = now
        new_status["lastScaleTime"] = rfc3339(now)
        self._event(obj, "Normal", "SuccessfulRescale",
                    f"New size: {decision.desired_replicas}; reason: {decision.reason}")
        if self.metrics is not None:
            self.metrics.rescales.labels("up" if decision.desired_replicas > current else "down").inc()
        log.info("rescaled", **fields(memhpa=key, target=ref, replicas_from=current,
                                      replicas_to=decision.desired_replicas, reason=decision.reason))

    # -- reads --------------------------------------------------------------------------------
    def _candidates(self, ns: str, selector: object) -> list[dict]:
        """Pods that may match: those with one of the selector's matchLabels (indexed), else the namespace's."""
        labels = selector.get("matchLabels") if isinstance(selector, dict) else None
        if labels:
            try:
                return min((self.pods.by_index(LABEL_INDEX, f"{ns}/{k}={v}") for k, v in labels.items()), key=len)
            except KeyError:  # a store without the label index
                pass
        return self.pods.by_index(NAMESPACE_INDEX, ns)

    def _scale(self, res: Resource, ns: str, name: str) -> dict | str:
        """The target's Scale (from the informer cache for the built-in workloads), or why not."""
        store = self.workloads.get(res.kind) if res in CACHED_KINDS.values() else None
        if store is not None:
            obj = store.get(f"{ns}/{name}")
            if obj is None:
                return f"{res.kind} {ns}/{name} not found"
            spec = obj.get("spec") or {}
            return {"metadata": {"name": name, "namespace": ns,
                                 "resourceVersion": obj["metadata"].get("resourceVersion")},
                    "spec": {"replicas": spec.get("replicas", 1)},
                    "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                               "selector": spec.get("selector") or {}}}
        try:
            return self.client.get(res, name, ns, subresource="scale")
        except ApiError as exc:
            return str(exc)

    def _usage(self, spec: MemHpaSpec, ns: str, pod_names: list[str]) -> tuple[dict[str, float] | None, str | None]:
        if not pod_names:
            return {}, None
        query = render_query(spec.query, ns, pod_names)
        try:
            samples = self.prometheus.query_vector(query)
        except Exception as exc:  # noqa: BLE001 - Prometheus down or a bad query: a condition, not a crash
            return None, f"Prometheus query failed: {exc}"
        usage: dict[str, float] = {}
        for s in samples:
            pod = s.labels.get("pod") or s.labels.get("pod_name")
            if pod in pod_names:
                usage[pod] = usage.get(pod, 0.0) + float(s.value)
        return usage, None

    # -- writes -------------------------------------------------------------------------------
    def _set_scale(self, res: Resource, ns: str, name: str, scale: dict, replicas: int) -> None:
        body = {"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {k: v for k, v in scale["metadata"].items() if k in ("name", "namespace",
                                                                                  "resourceVersion")},
                "spec": {"replicas": replicas}}
        self.client.update(res, body, ns, subresource="scale")

    def _write_status(self, obj: dict, old: dict, new: dict, now: float) -> None:
        status = dict(old)
        status.update(new)
        status["observedGeneration"] = obj["metadata"].get("generation", 0)
        status["conditions"] = _keep_transitions(old.get("conditions") or [], new.get("conditions") or [], now)
        if status == old:
            return
        body = {"apiVersion": MEMHPAS.api_version, "kind": MEMHPAS.kind,
                "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"],
                             "resourceVersion": obj["metadata"]["resourceVersion"]},
                "spec": obj.get("spec"), "status": status}
        try:
            self.client.update(MEMHPAS, body, obj["metadata"]["namespace"], subresource="status")
        except ApiError as exc:
            if exc.status == 404:
                return  # deleted meanwhile
            if exc.status == 409:
                raise Conflict(f"status of {obj['metadata']['namespace']}/{obj['metadata']['name']} changed "
                               "since it was cached") from exc
            raise Retry(f"status update of {obj['metadata']['namespace']}/{obj['metadata']['name']}: {exc}") \
                from exc

    def _event_once(self, obj: dict, mem: Memory, key: tuple, type_: str, reason: str, message: str) -> None:
        if mem.last_event == key:
            return
        mem.last_event = key
        self._event(obj, type_, reason, message)

    def _event(self, obj: dict, type_: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        stamp = rfc3339(self.clock())
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
                "involvedObject": {"apiVersion": MEMHPAS.api_version, "kind": MEMHPAS.kind, "name": meta["name"],
                                   "namespace": meta["namespace"], "uid": meta.get("uid"),
                                   "resourceVersion": meta.get("resourceVersion")},
                "reason": reason, "message": message[:1024], "type": type_,
                "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
                "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1}
        try:
            self.client.create(EVENTS, body, meta["namespace"])
        except ApiError as exc:  # an Event is best effort
            log.warning("event not recorded", **fields(reason=reason, error=str(exc)))


def _cond(type_: str, status: str, reason: str, message: str) -> dict:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def _keep_transitions(old: list[dict], new: list[dict], now: float) -> list[dict]:
    """Conditions with lastTransitionTime kept while the status is unchanged; one per type (the last wins)."""
    before = {c.get("type"): c for c in old}
    merged: dict[str, dict] = {}
    for c in new:
        merged[c["type"]] = dict(c)
    out = []
    for t, c in merged.items():
        prev = before.get(t)
        c["lastTransitionTime"] = prev.get("lastTransitionTime") if prev and prev.get("status") == c["status"] \
            and prev.get("lastTransitionTime") else rfc3339(now)
        out.append(c)
    return out
