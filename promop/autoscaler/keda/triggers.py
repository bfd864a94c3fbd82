"""A ScaledObject's triggers, built (auth resolved, metadata parsed) and evaluated through the cache.

Building is done on reconcile (and again when a query fails, as KEDA rebuilds a failing scaler);
evaluating is one read of the shared ResultCache per trigger, so a distinct query runs at most once
per polling interval however many ScaledObjects, loops and HPA syncs ask.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from promop.keda.auth import auth_namespace, pod_identity_provider, resolve_auth_params
from promop.keda.decide import TriggerResult
from promop.keda.prometheus import (PrometheusTrigger, TriggerConfigError, build_request, cache_key,
                                    decode_response, parse_trigger)
from promop.keda.spec import ScaledObject, Trigger

from promop.autoscaler.keda.cache import Result, ResultCache
from promop.autoscaler.keda.query import QuerySender


@dataclass
class BuiltTrigger:
    spec: Trigger
    prometheus: PrometheusTrigger | None = None
    error: str | None = None            # why it could not be built (bad metadata, missing auth)
    warnings: tuple[str, ...] = ()

    @property
    def metric_name(self) -> str:
        return self.spec.metric_name

    @property
    def key(self) -> tuple | None:
        return cache_key(self.prometheus) if self.prometheus is not None else None


@dataclass
class AuthSources:
    """How to read what an authenticationRef points at (the controller's caches and client)."""
    trigger_auth: Callable[[str, str], dict | None]          # (namespace, name) -> TriggerAuthentication
    cluster_trigger_auth: Callable[[str], dict | None]       # name -> ClusterTriggerAuthentication
    secret: Callable[[str, str], dict | None]                # (namespace, name) -> Secret
    env: Callable[[str, str | None], str | None]             # (var, container) -> value in the target's template
    cluster_object_namespace: str = "keda"


def build_trigger(trigger: Trigger, namespace: str, sources: AuthSources) -> BuiltTrigger:
    """Resolve the trigger's authentication and parse its metadata; problems become `error`."""
    if trigger.type != "prometheus":
        if trigger.is_resource:
            return BuiltTrigger(trigger)
        return BuiltTrigger(trigger, error=f"trigger type {trigger.type!r} is not supported by promop (only "
                                           "prometheus, cpu and memory)")
    warnings: list[str] = []
    params: dict = {}
    identity = "none"
    ref = trigger.auth_ref
    if ref:
        kind = ref.get("kind") or "TriggerAuthentication"
        auth = (sources.cluster_trigger_auth(ref["name"]) if kind == "ClusterTriggerAuthentication"
                else sources.trigger_auth(namespace, ref["name"]))
        if auth is None:  # KEDA only logs this; the scaler then says what it misses
            warnings.append(f"{kind} {ref['name']!r} not found")
        else:
            spec = auth.get("spec") or {}
            identity = pod_identity_provider(spec)
            ns = auth_namespace(kind, namespace, sources.cluster_object_namespace)
            params = resolve_auth_params(spec, ns, sources.secret, sources.env, warnings=warnings)
    try:
        parsed = parse_trigger(trigger.metadata, params, identity)
    except TriggerConfigError as exc:
        return BuiltTrigger(trigger, error=str(exc), warnings=tuple(warnings))
    return BuiltTrigger(trigger, parsed, warnings=tuple(warnings))


def build_triggers(so: ScaledObject, sources: AuthSources) -> list[BuiltTrigger]:
    return [build_trigger(t, so.namespace, sources) for t in so.triggers]


class Evaluator:
    """One trigger's value now, through the shared cache."""

    def __init__(self, cache: ResultCache, sender: QuerySender,
                 wall: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        self.cache = cache
        self.sender = sender
        self.wall = wall

    def result(self, built: BuiltTrigger, max_age: float) -> Result:
        if built.prometheus is None:
            return Result(None, built.error or "trigger not built", 0.0)
        trig = built.prometheus

        def fetch() -> float:
            status, body = self.sender.send(build_request(trig, self.wall()))
            return decode_response(trig, status, body)

        return self.cache.get(built.key, max_age, fetch)

    def evaluate(self, built: BuiltTrigger, max_age: float) -> TriggerResult:
        """The poll's TriggerResult (value raw, activity on the raw value: value > activationThreshold)."""
        spec = built.spec
        if spec.is_resource:
            return TriggerResult(metric_name=spec.metric_name, trigger_name=spec.name, is_resource=True, active=True)
        res = self.result(built, max_age)
        if res.error is not None:
            return TriggerResult(metric_name=spec.metric_name, trigger_name=spec.name, error=res.error)
        assert built.prometheus is not None
        return TriggerResult(metric_name=spec.metric_name, trigger_name=spec.name, value=res.value,
                             active=res.value is not None and res.value > built.prometheus.activation_threshold)


def trigger_summary(built: BuiltTrigger) -> dict[str, Any]:
    """What `promop keda explain` shows of a trigger's configuration (never secret values)."""
    p = built.prometheus
    out: dict[str, Any] = {"metric": built.metric_name, "type": built.spec.type, "name": built.spec.name}
    if p is not None:
        out.update(serverAddress=p.server_address, query=p.query, threshold=p.threshold,
                   activationThreshold=p.activation_threshold, authModes=list(p.auth_modes))
    if built.error:
        out["error"] = built.error
    if built.warnings:
        out["warnings"] = list(built.warnings)
    return out
