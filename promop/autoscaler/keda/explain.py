"""`promop keda explain`: why a ScaledObject's target is at its replica count.

KEDA's users ask this every day (reference §5: cooldown only applies 1->0, the HPA does 1<->N,
AverageValue divides by the replica count, a failing trigger stalls the HPA). This reads what
the cluster says (the ScaledObject's status, its HPA, the target's /scale), queries each trigger
now as the controller would (or asks the controller's metrics endpoint for the value the HPA
gets) and says, in order, which rule holds the count where it is.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

import requests

from promop.keda.spec import KedaSpecError, parse_scaled_object, pause_state
from promop.kube.errors import ApiError
from promop.kube.resources import SECRETS

from promop.autoscaler.keda.cache import ResultCache
from promop.autoscaler.keda.query import QuerySender
from promop.autoscaler.keda.resources import (CLUSTERTRIGGERAUTHENTICATIONS, HPAS, SCALEDOBJECTS,
                                              TRIGGERAUTHENTICATIONS, target_resource)
from promop.autoscaler.keda.triggers import AuthSources, Evaluator, build_triggers, trigger_summary


def _get(client: Any, res: Any, name: str, ns: str | None = None, **kw: Any) -> dict | None:
    try:
        return client.get(res, name, ns, **kw)
    except ApiError as exc:
        if exc.status in (403, 404):
            return None
        raise


def _env_reader(client: Any, so: Any) -> Any:
    def read(var: str, container: str | None) -> str | None:
        res = target_resource(so.target.api_version, so.target.kind)
        target = _get(client, res, so.target.name, so.namespace) or {}
        pod = ((target.get("spec") or {}).get("template") or {}).get("spec") or {}
        want = container or so.target.env_source_container_name or None
        for c in pod.get("containers") or []:
            if want and c.get("name") != want:
                continue
            for e in c.get("env") or []:
                if e.get("name") == var and "value" in e:
                    return str(e["value"])
            if not want:
                break
        return None
    return read


def _hpa_view(hpa: dict | None) -> dict:
    if hpa is None:
        return {"present": False}
    st = hpa.get("status") or {}
    current = []
    for m in st.get("currentMetrics") or []:
        ext = m.get("external") or {}
        cur = ext.get("current") or {}
        current.append({"metric": (ext.get("metric") or {}).get("name", m.get("type")),
                        "value": cur.get("averageValue") or cur.get("value")})
    return {"present": True, "name": hpa["metadata"]["name"], "min": (hpa.get("spec") or {}).get("minReplicas"),
            "max": (hpa.get("spec") or {}).get("maxReplicas"), "currentReplicas": st.get("currentReplicas"),
            "desiredReplicas": st.get("desiredReplicas"), "currentMetrics": current,
            "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message")}
                           for c in st.get("conditions") or []]}


def explain(client: Any, namespace: str, name: str, metrics_url: str | None = None,
            cluster_object_namespace: str = "keda") -> dict:
    """Everything `promop keda explain` prints, as a dict (the command formats it)."""
    obj = _get(client, SCALEDOBJECTS, name, namespace)
    if obj is None:
        raise LookupError(f"ScaledObject {namespace}/{name} not found (kubectl get scaledobjects -n {namespace})")
    out: dict[str, Any] = {"scaledObject": f"{namespace}/{name}", "conditions": [
        {k: c.get(k) for k in ("type", "status", "reason", "message")}
        for c in (obj.get("status") or {}).get("conditions") or []], "status": obj.get("status") or {}}
    try:
        so = parse_scaled_object(obj)
        pause = pause_state(so.annotations)
    except KedaSpecError as exc:
        out["why"] = [f"the ScaledObject is invalid: {exc}"]
        return out
    res = target_resource(so.target.api_version, so.target.kind)
    scale = _get(client, res, so.target.name, namespace, subresource="scale")
    replicas = None if scale is None else int((scale.get("spec") or {}).get("replicas") or 0)
    out["target"] = {"kind": so.target.kind, "name": so.target.name, "replicas": replicas}
    sources = AuthSources(
        trigger_auth=lambda ns, n: _get(client, TRIGGERAUTHENTICATIONS, n, ns),
        cluster_trigger_auth=lambda n: _get(client, CLUSTERTRIGGERAUTHENTICATIONS, n),
        secret=lambda ns, n: _get(client, SECRETS, n, ns), env=_env_reader(client, so),
        cluster_object_namespace=cluster_object_namespace)
    evaluator = Evaluator(ResultCache(), QuerySender())
    health = (obj.get("status") or {}).get("health") or {}
    triggers = []
    last_good = _last_good(metrics_url, namespace, name) if metrics_url else {}
    for built in build_triggers(so, sources):
        entry = trigger_summary(built)
        if not built.spec.is_resource:
            r = evaluator.evaluate(built, 0)
            entry.update(value=r.value, active=r.active, queryError=r.error,
                         health=health.get(built.metric_name))
            if metrics_url:
                entry["servedToHpa"] = _served(metrics_url, namespace, name, built.metric_name)
            if built.metric_name in last_good:
                entry["lastGood"] = last_good[built.metric_name]
        triggers.append(entry)
    evaluator.sender.close()
    out["triggers"] = triggers
    hpa = _get(client, HPAS, so.hpa_name, namespace) if not pause.stops_loop else None
    out["hpa"] = _hpa_view(hpa)
    out["why"] = reasons(so, pause, replicas, triggers, out["hpa"], obj)
    return out


def _served(url: str, ns: str, name: str, metric: str) -> str:
    try:
        r = requests.get(f"{url.rstrip('/')}/keda/v1/namespaces/{ns}/scaledobjects/{name}/metrics/{metric}",
                         timeout=10)
        body = r.json()
    except (requests.RequestException, ValueError) as exc:
        return f"error: the controller did not answer: {exc}"
    if r.status_code == 200:
        return (body.get("items") or [{}])[0].get("value", "")
    return f"error: {body.get('message')}"


def _last_good(url: str, ns: str, name: str) -> dict:
    """metric -> the controller's last good record of a failing trigger ({} when it cannot tell)."""
    try:
        r = requests.get(f"{url.rstrip('/')}/keda/v1/namespaces/{ns}/scaledobjects/{name}/lastgood", timeout=10)
        body = r.json()
    except (requests.RequestException, ValueError):
        return {}
    return (body.get("lastGood") or {}) if r.status_code == 200 and isinstance(body, dict) else {}


def _failing_state(so: Any, t: dict) -> str:
    """What happens to a failing trigger's metric: fallback, the last good value, or KEDA's error."""
    h = t.get("health") or {}
    fb = so.fallback
    if not fb:
        return "no fallback configured: errors never scale to zero and the HPA stops (FailedGetExternalMetric)"
    failures = h.get("numberOfFailures") or 0
    if failures > fb.failure_threshold:
        return f"fallback serves {fb.replicas} replicas' worth ({fb.behavior})"
    lg = t.get("lastGood") or {}
    if lg.get("serving"):
        return (f"the HPA is served the last good value {lg.get('value')} (of {lg.get('at')}; failing since "
                f"{lg.get('failingSince')}, {lg.get('numberOfFailures')} of {fb.failure_threshold + 1} failures "
                f"before fallback; at most until {lg.get('until')}), so it keeps scaling on the other metrics "
                "(promop; KEDA fails this metric and the HPA scales down on none)")
    return f"{failures} of {fb.failure_threshold + 1} failures before fallback"


def _hpa_desired(triggers: list[dict], replicas: int) -> int | None:
    """What the HPA's formula gives for the values now (AverageValue: ceil(value/threshold))."""
    best = None
    for t in triggers:
        if t.get("value") is None or not t.get("threshold"):
            continue
        want = math.ceil(max(t["value"], 0) / t["threshold"])
        best = want if best is None else max(best, want)
    return best


def reasons(so: Any, pause: Any, replicas: int | None, triggers: list[dict], hpa: dict, obj: dict) -> list[str]:
    """The rules that hold the count, most decisive first."""
    why: list[str] = []
    ready = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), {})
    if pause.paused_replicas is not None:
        return [f"paused by autoscaling.keda.sh/paused-replicas: the target is held at {pause.paused_replicas}; "
                "the scale loop is stopped and the HPA deleted until the annotation is removed"]
    if pause.stops_loop:
        return ["paused by autoscaling.keda.sh/paused: the scale loop is stopped and the HPA deleted; the "
                "replicas stay where they were"]
    if replicas is None:
        return [f"the target {so.target.kind} {so.namespace}/{so.target.name} has no readable /scale"]
    if ready.get("status") == "False":
        why.append(f"Ready=False ({ready.get('reason')}): {ready.get('message')}")
    failing = [t for t in triggers if t.get("queryError") or t.get("error")]
    active = [t for t in triggers if t.get("active")]
    for t in failing:
        why.append(f"trigger {t['metric']} fails: {t.get('queryError') or t.get('error')}; {_failing_state(so, t)}")
    min_r = so.min_replicas
    if replicas == 0:
        if active:
            why.append(f"{', '.join(t['metric'] for t in active)} active (value > activationThreshold): the next "
                       f"poll (every {so.polling_interval}s) scales to {max(min_r, 1)}")
        elif not failing:
            why.append("at zero: no trigger value is above its activationThreshold "
                       + ", ".join(f"({t['metric']}: {t.get('value')} <= {t.get('activationThreshold')})"
                                   for t in triggers if "value" in t))
        return why
    if not active and not failing and min_r == 0 and so.idle_replica_count is None:
        why.append(f"no trigger is active: KEDA scales to zero {so.cooldown_period}s (cooldownPeriod) after "
                   "lastActiveTime " f"({(obj.get('status') or {}).get('lastActiveTime')})")
    desired = _hpa_desired(triggers, replicas)
    if hpa.get("present"):
        lo, hi = hpa.get("min"), hpa.get("max")
        text = f"between {lo} and {hi} the HPA {hpa.get('name')} decides"
        if desired is not None:
            text += (f": for the values now it wants ceil(value / threshold) = {desired}"
                     f"{' (clamped to max ' + str(hi) + ')' if hi is not None and desired > hi else ''}"
                     f"{' (raised to min ' + str(lo) + ')' if lo is not None and desired < lo else ''}")
        why.append(text + "; it scales down only after its stabilization window (300 s by default); "
                   "cooldownPeriod does not apply to N->1")
        for c in hpa.get("conditions") or []:
            if c.get("status") == "False" or c.get("reason") in ("TooManyReplicas", "TooFewReplicas",
                                                                 "ScaleDownStabilized"):
                why.append(f"HPA {c['type']}={c['status']} ({c.get('reason')}): {c.get('message')}")
    else:
        why.append(f"the HPA {so.hpa_name} does not exist (yet): only KEDA's 0<->1 step runs")
    return why


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
