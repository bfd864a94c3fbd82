"""One poll of a ScaledObject's scale loop (KEDA's §2.4): evaluate, decide, scale, status, Events.

The decision is promop.keda.decide's; here the values are read through the shared cache, the
failures counted in the shared health record, the /scale written, and status patched only when
it changed.
"""

from __future__ import annotations

import logging
from typing import Any

from promop.host.logs import fields
from promop.keda.decide import decide
from promop.keda.fallback import any_fallback_active, fallback_active, health_tracked, record_health
from promop.keda.status import (FALLBACK, FALLBACK_FALSE, FALLBACK_TRUE, READY, get_condition,
                                set_condition, set_triple, with_hpa)
from promop.kube.errors import ApiError

from promop.autoscaler.keda.last_good_values import stand_in_activity
from promop.autoscaler.keda.activetime import iso, persist_last_active, refresh_period
from promop.autoscaler.keda.reconcile import Retry, parse_time
from promop.autoscaler.keda.state import SOState

log = logging.getLogger("promop.autoscaler.keda")


class ScaleLoop:
    def __init__(self, ctl: Any) -> None:
        self.ctl = ctl

    def poll(self, key: str) -> None:
        ctl = self.ctl
        state: SOState | None = ctl.states.get(key)
        obj = ctl.scaledobjects.store.get(key)
        if state is None or obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
            ctl.loops.cancel(key)
            return
        with ctl.key_lock(key):
            self._poll(key, state, obj)

    def _results(self, state: SOState) -> list:
        """Every trigger's result for this poll, in spec order. The triggers are evaluated at the same
        time (a hanging server delays no other trigger, as in KEDA), then counted one by one."""
        ctl = self.ctl
        results = []
        tracked = health_tracked(state.so)
        triggers = list(state.triggers)
        evaluated = ctl.fanout.map(lambda built: ctl.evaluator.evaluate(built, state.polling_interval), triggers)
        for built, r in zip(triggers, evaluated):
            if r.error is not None and built.prometheus is None and built.spec.type == "prometheus":
                ctl.rebuild(state, built)   # KEDA rebuilds a failing scaler (re-reading its auth)
            if not r.is_resource and tracked:
                with state.lock:
                    state.health = record_health(state.health, r.metric_name, r.error is None)
                fb = state.so.fallback
                r.fallback_active = bool(fb) and r.error is not None and \
                    fallback_active(state.health, r.metric_name, fb.failure_threshold)
                stand_in_activity(state, built, r, ctl.wall())
            results.append(r)
        return results

    def _poll(self, key: str, state: SOState, obj: dict) -> None:
        ctl = self.ctl
        now = ctl.wall()
        status = ctl.status_writer.latest(key, obj)   # not the cache: it lags our own last write
        current = ctl.current_replicas(state)
        if current is None:
            new = dict(status)
            new["conditions"] = set_condition(status.get("conditions"), READY, "False",
                                              "ErrorGettingCurrentReplicas",
                                              f"could not read the replicas of {state.target_kind} "
                                              f"{state.so.namespace}/{state.so.target.name}")
            self._submit(key, obj, status, new)
            return
        results = self._results(state)
        ctl.record_poll(state, results)
        last_active = state.last_active_time or parse_time(status.get("lastActiveTime"))
        creation = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
        decision = decide(state.so, state.pause, current, results, last_active, creation, now,
                          conditions=status.get("conditions"), scale_target_kind=state.target_kind)
        if decision.scale_to is not None and decision.scale_to != current:
            try:
                ctl.set_scale(state.target, state.so.namespace, state.so.target.name, decision.scale_to)
            except ApiError as exc:
                reason = "KEDAScaleTargetActivationFailed" if decision.scale_to > current else \
                    "KEDAScaleTargetDeactivationFailed"
                ctl.recorder.event(obj, "Warning", reason, f"Failed to scale {state.target_kind} "
                                   f"{state.so.namespace}/{state.so.target.name} to {decision.scale_to}: {exc}")
                raise Retry(f"scaling {key}: {exc}") from exc
            log.info("scaled", **fields(scaledobject=key, replicas_from=current, replicas_to=decision.scale_to))
        for e in decision.events:
            ctl.recorder.event(obj, e.type, e.reason, e.message,
                               dedupe=e.reason not in ("KEDAScaleTargetActivated", "KEDAScaleTargetDeactivated"))
        state.last_active_time = decision.last_active_time
        new = dict(status)
        conditions = decision.conditions or status.get("conditions") or []
        conditions = self._fallback_condition(obj, state, conditions)
        hpa = ctl.hpas.store.get(f"{state.so.namespace}/{state.so.hpa_name}")
        conditions = with_hpa(conditions, hpa, state.so.namespace, state.so.hpa_name)
        new["conditions"] = conditions
        if state.health:
            new["health"] = dict(state.health)
        if decision.triggers_activity:
            new["triggersActivity"] = decision.triggers_activity
        state.last_poll = {"at": iso(now), "replicas": current, "scale_to": decision.scale_to,
                           "active": decision.is_active, "error": decision.is_error,
                           "results": [{"metric": r.metric_name, "value": r.value, "active": r.active,
                                        "error": r.error, "fallback": r.fallback_active} for r in results]}
        state.persisted_active = persist_last_active(status, new, decision.last_active_time, state.persisted_active,
                                                     refresh_period(state.so.cooldown_period))
        self._submit(key, obj, status, new)

    def _submit(self, key: str, obj: dict, old: dict, new: dict) -> None:
        """Hand the status to the coalescing writer: the loop never waits for a status write."""
        meta = obj["metadata"]
        self.ctl.status_writer.submit(key, meta["namespace"], meta["name"], old, new)

    def _fallback_condition(self, obj: dict, state: SOState, conditions: list) -> list:
        fb = state.so.fallback
        on = bool(fb) and any_fallback_active(state.health, fb.failure_threshold)
        was = (get_condition(conditions, FALLBACK) or {}).get("status") == "True"
        if on and not was:
            self.ctl.recorder.event(obj, "Warning", "ScaledObjectFallbackActivated",
                                    "At least one trigger is falling back on this scaled object", dedupe=False)
        elif was and not on:
            self.ctl.recorder.event(obj, "Normal", "ScaledObjectFallbackDeactivated",
                                    "No fallbacks are active on this scaled object", dedupe=False)
        return set_triple(conditions, FALLBACK, FALLBACK_TRUE if on else FALLBACK_FALSE)
