"""Pods as the API returns them (dicts) into the algorithm's `Pod`."""

from __future__ import annotations

from datetime import datetime

from promop.autoscale.model import Container, Pod
from promop.quantity import QuantityError, milli_value


def parse_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _resources(values: dict | None) -> dict[str, int]:
    out = {}
    for k, v in (values or {}).items():
        try:
            out[k] = milli_value(v)
        except QuantityError:
            continue  # the apiserver would have refused it; skip rather than fail the whole pod list
    return out


def _container(c: dict) -> Container:
    res = c.get("resources") or {}
    return Container(c.get("name", ""), _resources(res.get("requests")), _resources(res.get("limits")))


def to_pod(obj: dict) -> Pod:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ready = None
    transition = None
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            ready = cond.get("status")
            transition = parse_time(cond.get("lastTransitionTime"))
    pod_res = spec.get("resources") or {}
    return Pod(
        name=meta.get("name", ""), phase=status.get("phase") or "Pending", ready=ready, ready_transition=transition,
        start_time=parse_time(status.get("startTime")), deleted=bool(meta.get("deletionTimestamp")),
        containers=[_container(c) for c in spec.get("containers") or []],
        init_containers=[_container(c) for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"],
        requests=_resources(pod_res.get("requests")) or None, limits=_resources(pod_res.get("limits")) or None)
