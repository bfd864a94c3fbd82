"""Feedback to users on their ServiceMonitors, PodMonitors and PrometheusRules.

Two channels, both computed here as pure data:
- `status.bindings`: per Prometheus that selects the object, an `Accepted`
  condition (True, or False with the renderer's reason), so
  `kubectl get servicemonitor x -o yaml` says why it is not used;
- Warning Events `InvalidConfiguration`, deduplicated so a resync of an
  unchanged object does not emit the same Event again.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from promop.operator.status import keep_transition_times
from promop.render.model import MONITORING_GROUP, MONITORING_VERSION, Problem

ACCEPTED = "Accepted"
INVALID = "InvalidConfiguration"
COMPONENT = "promop"
ACTION = "SelectingConfigurationResources"


@dataclass(frozen=True)
class Verdict:
    """What one Prometheus thinks of one selected object."""

    accepted: bool
    reason: str = ""
    message: str = ""


_ACCEPTED = Verdict(True)


def verdicts(selection: Iterable[Any], rejected: Iterable[Problem]) -> dict[tuple[str, str, str], Verdict]:
    """(kind, namespace, name) -> Verdict for every selected object; rejected ones say why."""
    problems: dict[tuple[str, str, str], list[str]] = {}
    for p in rejected:
        problems.setdefault((p.kind, p.namespace, p.name), []).append(f"{p.field}: {p.message}" if p.field
                                                                       else p.message)
    out = {}
    for d in selection:
        if not d.selected:
            continue
        key = (d.kind, d.namespace, d.name)
        msgs = problems.get(key)
        out[key] = Verdict(False, INVALID, "; ".join(msgs)) if msgs else _ACCEPTED
    return out


def owner_resource(prometheus: Mapping[str, Any]) -> str:
    """The bindings' `resource` of the selecting object: prometheuses, or prometheusagents for an agent."""
    return "prometheusagents" if prometheus.get("kind") == "PrometheusAgent" else "prometheuses"


def _is_for(binding: Mapping[str, Any], prometheus: Mapping[str, Any]) -> bool:
    md = prometheus["metadata"]
    return (binding.get("resource") == owner_resource(prometheus) and binding.get("group") == MONITORING_GROUP
            and binding.get("namespace") == md.get("namespace") and binding.get("name") == md.get("name"))


def desired_bindings(obj: Mapping[str, Any], prometheus: Mapping[str, Any], verdict: Verdict | None,
                     now: str) -> list[dict]:
    """`obj`'s status.bindings after `prometheus` says `verdict` (None: it no longer selects obj).

    Bindings of other Prometheus objects are kept as they are, in their order;
    ours is replaced in place or appended.
    """
    current = list(((obj.get("status") or {}).get("bindings")) or [])
    ours = next((b for b in current if _is_for(b, prometheus)), None)
    others = [b for b in current if not _is_for(b, prometheus)]
    if verdict is None:
        return others
    md = prometheus["metadata"]
    cond = {
        "type": ACCEPTED,
        "status": "True" if verdict.accepted else "False",
        "reason": verdict.reason,
        "message": verdict.message,
        "observedGeneration": int((obj.get("metadata") or {}).get("generation") or 0),
        "lastTransitionTime": now,
    }
    binding = {
        "group": MONITORING_GROUP,
        "resource": owner_resource(prometheus),
        "name": md["name"],
        "namespace": md["namespace"],
        "conditions": keep_transition_times((ours or {}).get("conditions"), [cond]),
    }
    if ours is None:
        return [*others, binding]
    return [binding if _is_for(b, prometheus) else b for b in current]


def binding_current(obj: Mapping[str, Any], prometheus: Mapping[str, Any], verdict: Verdict | None) -> bool:
    """Cheap check (the common case on every sync): `obj` already says what `verdict` says."""
    status = obj.get("status")
    bindings = status.get("bindings") if status else None
    for b in bindings or ():
        if _is_for(b, prometheus):
            if verdict is None:
                return False
            conds = b.get("conditions") or ()
            if len(conds) != 1:
                return False
            c = conds[0]
            gen = int((obj.get("metadata") or {}).get("generation") or 0)
            return (c.get("type") == ACCEPTED and c.get("status") == ("True" if verdict.accepted else "False")
                    and c.get("reason") == verdict.reason and c.get("message") == verdict.message
                    and c.get("observedGeneration") == gen)
    return verdict is None


def event_for(obj: Mapping[str, Any], api_version: str, kind: str, reason: str, message: str,
              event_type: str, now: str) -> dict:
    """A core/v1 Event about `obj` (name is deterministic per object+message, like a dedup key)."""
    md = obj.get("metadata") or {}
    digest = hashlib.sha256(f"{md.get('uid')}/{reason}/{message}/{now}".encode()).hexdigest()[:16]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{md.get('name')}.{digest}", "namespace": md.get("namespace")},
        "involvedObject": {
            "apiVersion": api_version,
            "kind": kind,
            "name": md.get("name"),
            "namespace": md.get("namespace"),
            "uid": md.get("uid"),
            "resourceVersion": md.get("resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "type": event_type,
        "action": ACTION,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def problem_events(problems: Iterable[Problem], rejected: bool) -> list[tuple[tuple[str, str, str], str]]:
    """((kind, ns, name), note) per object: upstream's note for rejections, one line per warning."""
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for p in problems:
        grouped.setdefault((p.kind, p.namespace, p.name), []).append(f"{p.field}: {p.message}" if p.field
                                                                     else p.message)
    out = []
    for key, msgs in grouped.items():
        detail = "; ".join(msgs)
        if rejected:
            out.append((key, f'"{key[1]}/{key[2]}" was rejected due to invalid configuration: {detail}'))
        else:
            out.append((key, f'"{key[1]}/{key[2]}" uses unsupported or ignored fields: {detail}'))
    return out


API_VERSION = f"{MONITORING_GROUP}/{MONITORING_VERSION}"


class EventDeduper:
    """Remembers the last note emitted per (object uid, reason) so resyncs stay quiet.

    A note is emitted again when it changes, or after the object changed
    generation (the user edited it and it is still wrong).
    """

    def __init__(self, max_entries: int = 10000) -> None:
        self._seen: dict[tuple[str, str], tuple[int, str]] = {}
        self._lock = threading.Lock()
        self._max = max_entries

    def should_emit(self, obj: Mapping[str, Any], reason: str, note: str) -> bool:
        md = obj.get("metadata") or {}
        key = (str(md.get("uid") or f"{md.get('namespace')}/{md.get('name')}"), reason)
        value = (int(md.get("generation") or 0), note)
        with self._lock:
            if self._seen.get(key) == value:
                return False
            if len(self._seen) >= self._max:
                self._seen.pop(next(iter(self._seen)))
            self._seen[key] = value
            return True

    def forget(self, obj: Mapping[str, Any], reason: str) -> None:
        md = obj.get("metadata") or {}
        with self._lock:
            self._seen.pop((str(md.get("uid") or f"{md.get('namespace')}/{md.get('name')}"), reason), None)
