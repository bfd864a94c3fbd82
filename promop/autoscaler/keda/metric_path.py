"""KEDA's GetScaledObjectMetrics: the value the HPA gets for one metric of one ScaledObject.

Read through the shared cache (at most one query per polling interval), with fallback and
scalingModifiers applied, and failures counted in the same health record as the scale loop's
(KEDA counts both paths: failures accrue at their combined rate). Where promop differs (issue 31):
with fallback set but not active yet, a failing trigger's last good value is served instead of
KEDA's error (promop.keda.lastgood), so the HPA keeps scaling on the other metrics.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from promop.keda.fallback import (FallbackError, fallback_active, fallback_enabled, fallback_replicas,
                                  fallback_value, health_tracked, record_health)
from promop.keda.formula import FormulaError, compile_formula
from promop.keda.quantities import milli_quantity
from promop.keda.spec import COMPOSITE_METRIC

from promop.autoscaler.keda import last_good_values
from promop.autoscaler.keda.metrics_api import MetricError
from promop.autoscaler.keda.state import SOState
from promop.autoscaler.keda.triggers import BuiltTrigger, Evaluator


def _stamp(now: datetime) -> str:
    return now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def value_list(metric: str, value: float, now: datetime) -> dict:
    return {"kind": "ExternalMetricValueList", "apiVersion": "external.metrics.k8s.io/v1beta1", "metadata": {},
            "items": [{"metricName": metric, "metricLabels": None, "timestamp": _stamp(now),
                       "value": milli_quantity(value)}]}


class MetricPath:
    def __init__(self, evaluator: Evaluator, current_replicas: Callable[[SOState], int | None],
                 ready_pods: Callable[[SOState], int], now: Callable[[], datetime]) -> None:
        self.evaluator = evaluator
        self.current_replicas = current_replicas
        self.ready_pods = ready_pods
        self.now = now

    def _count(self, state: SOState, metric: str, ok: bool) -> None:
        if health_tracked(state.so):
            with state.lock:
                state.health = record_health(state.health, metric, ok)

    def _fallback(self, state: SOState, metric: str, target: float, metric_type: str) -> float | None:
        """The fallback value when fallback serves `metric` now, else None."""
        fb = state.so.fallback
        if fb is None or not fallback_enabled(state.so, metric_type):
            return None
        if not fallback_active(state.health, metric, fb.failure_threshold):
            return None
        current = self.current_replicas(state) or 0
        replicas = fallback_replicas(fb.behavior, fb.replicas, current)
        ready = self.ready_pods(state) if metric_type == "Value" else None
        try:
            return fallback_value(target, metric_type, replicas, ready)
        except FallbackError as exc:
            raise MetricError(500, str(exc)) from None

    def answer(self, state: SOState, metric: str) -> dict:
        if state.pause.stops_loop:
            raise MetricError(404, f"ScaledObject {state.key} is paused: it serves no metrics")
        if state.so.using_modifiers:
            if metric != COMPOSITE_METRIC:
                raise MetricError(404, f"no matching metrics found for {metric}")
            return value_list(metric, self._composite(state), self.now())
        built = state.trigger_for(metric)
        if built is None or built.spec.is_resource:
            raise MetricError(404, f"no matching metrics found for {metric}")
        value = self._single(state, built)
        return value_list(metric, value, self.now())

    def _single(self, state: SOState, built: BuiltTrigger) -> float:
        metric = built.metric_name
        res = self.evaluator.result(built, state.polling_interval)
        self._count(state, metric, res.error is None)
        if res.error is None and res.value is not None:
            last_good_values.note_success(state, built, res.value, self.now())
            return res.value
        target = built.prometheus.threshold if built.prometheus is not None else 0.0
        value = self._fallback(state, metric, target, built.spec.effective_metric_type)
        last = last_good_values.note_failure(state, built, self.now(), "metrics")
        if value is not None:
            return value
        if last is not None:      # fallback set, not active yet: the HPA keeps its other metrics (issue 31)
            return last.value
        raise MetricError(500, f"metric:{metric} encountered error")

    def _composite(self, state: SOState) -> float:
        mods = state.so.scaling_modifiers
        assert mods is not None
        try:
            target = float(mods.target)
        except ValueError:
            target = 0.0
        values: dict[str, float | None] = {}
        failed = []
        for built in state.triggers:
            if built.spec.is_resource:
                continue
            res = self.evaluator.result(built, state.polling_interval)
            self._count(state, built.metric_name, res.error is None)
            if res.error is not None:
                failed.append(built.metric_name)
            if built.spec.name:
                values[built.spec.name] = res.value if res.error is None else None
        fb = state.so.fallback
        modifier_fallback = fb is not None and fb.behavior == "scalingModifiers"
        if failed and not modifier_fallback:
            for metric in failed:
                value = self._fallback(state, metric, target, mods.effective_metric_type)
                if value is not None:
                    return value
            raise MetricError(500, f"metric:{COMPOSITE_METRIC} encountered error")
        try:
            out = compile_formula(mods.formula, set(values)).evaluate(values)
        except FormulaError as exc:
            raise MetricError(500, f"error evaluating the scalingModifiers formula: {exc}") from None
        if out is None:
            if modifier_fallback and fb is not None:
                return fb.replicas * target
            raise MetricError(500, f"metric:{COMPOSITE_METRIC} encountered error")
        return out
