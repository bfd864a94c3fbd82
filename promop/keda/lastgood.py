"""The last good value: what a failing trigger serves while its fallback is set but not yet active.

Why (a deviation from KEDA, issue 31; KEDA #4533, #5657, #6887): under KEDA a failing trigger
makes the HPA's GET for its metric fail until `fallback.failureThreshold` is exceeded, and the
Kubernetes HPA scales down only when every metric is valid (and sets ScalingActive=False when all
fail), so one broken Prometheus stalls the scaling the healthy triggers ask for. When the user
set `fallback`, they told us a failing trigger may be answered with something else than an error;
promop then answers the HPA, during those first failures, with the trigger's last good value,
so the HPA keeps scaling both ways on the other metrics.

The rules, one function each (plain data in and out, the time is an argument):

- The last good value is the value of the trigger's last successful evaluation (the scale loop's
  or the metrics path's), kept per (ScaledObject, metric name) together with the identity of the
  query it came from (a changed query does not inherit the old one's value).
- It is served only while fallback is set and valid for the metric (fallback.fallback_enabled),
  is not active (failures <= failureThreshold; once active KEDA's fallback value is served as
  before), and the value is at most failureThreshold + 1 polling intervals old: the time KEDA's
  own loop would take to activate fallback. Older, or never any success: KEDA's error.
- The failure is still counted in status.health (the callers count before asking here) and the
  record says since when the trigger fails and since when the last good value is served.
- Activity (the scale loop): while its last good value is served a trigger is active when that
  value was (value > activationThreshold), as the HPA is told that value; it still counts as an
  error, so KEDA's "errors never scale to zero" and Ready's PartialTriggerError hold.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Hashable

from promop.keda.fallback import fallback_active, fallback_enabled
from promop.keda.spec import ScaledObject


@dataclass(frozen=True)
class LastGood:
    """One trigger's last successful evaluation, and its failing streak since."""

    value: float
    active: bool                         # value > activationThreshold at that evaluation
    at: datetime                         # when it was evaluated
    query: Hashable = None               # the identity of the query (cache key) it came from
    failing_since: datetime | None = None   # the first failure after `at`
    served_since: datetime | None = None    # first time it was served in place of an error


def window(failure_threshold: int, polling_interval: float) -> timedelta:
    """How long a last good value may stand in: failureThreshold + 1 polling intervals."""
    return timedelta(seconds=(max(failure_threshold, 0) + 1) * polling_interval)


def after_success(value: float, active: bool, now: datetime, query: Hashable = None) -> LastGood:
    """The record after a successful evaluation: a new last good value, no failing streak."""
    return LastGood(value=value, active=active, at=now, query=query)


def after_failure(last: LastGood | None, now: datetime) -> LastGood | None:
    """The record after a failed evaluation: the same value, failing since the first failure."""
    if last is None or last.failing_since is not None:
        return last
    return replace(last, failing_since=now)


def usable(so: ScaledObject, metric_type: str, health: dict | None, metric: str, last: LastGood | None,
           polling_interval: float, now: datetime, query: Hashable = None) -> LastGood | None:
    """The last good value to serve for a failing `metric` now, or None (KEDA's behaviour applies:
    its error, or its fallback value once fallback is active)."""
    if last is None or so.fallback is None or not fallback_enabled(so, metric_type):
        return None
    if query is not None and last.query is not None and last.query != query:
        return None
    if fallback_active(health, metric, so.fallback.failure_threshold):
        return None
    if now - last.at > window(so.fallback.failure_threshold, polling_interval):
        return None
    return last


def mark_served(last: LastGood, now: datetime) -> LastGood:
    """The record once its value was served (keeps the first time of the streak)."""
    return last if last.served_since is not None else replace(last, served_since=now)


def view(last: LastGood, health: dict | None, metric: str, failure_threshold: int,
         polling_interval: float) -> dict:
    """What `promop keda explain` shows of a last good record (times as RFC 3339, UTC)."""
    def stamp(t: datetime | None) -> str | None:
        return t.strftime("%Y-%m-%dT%H:%M:%SZ") if t else None

    entry = (health or {}).get(metric) or {}
    return {"value": last.value, "active": last.active, "at": stamp(last.at),
            "failingSince": stamp(last.failing_since), "servedSince": stamp(last.served_since),
            "numberOfFailures": entry.get("numberOfFailures") or 0, "failureThreshold": failure_threshold,
            "until": stamp(last.at + window(failure_threshold, polling_interval))}
