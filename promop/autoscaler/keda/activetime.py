"""When `status.lastActiveTime` is written: exact in memory, persisted only when it matters.

KEDA writes lastActiveTime on every active poll: at 7,500 active ScaledObjects polled every 30 s
that is 250 status writes/s, above any client rate limit a controller runs with (KEDA's own is
20/s). The cooldown decision reads the in-memory value (`SOState.last_active_time`), so the
persisted one matters only after a restart, when the controller starts from the status. promop
writes it with any other status change (then exactly), when none is stored, and when the stored
one is `refresh_period` old or more: a restart can then shorten one cooldown by less than that
period. docs/keda.md "Where promop differs" has the rule and the bound.
"""

from __future__ import annotations

from datetime import datetime, timezone

from promop.autoscaler.keda.reconcile import parse_time
from promop.autoscaler.keda.statusdiff import merge_diff

#: the most a restart can take off a cooldown, whatever the cooldownPeriod
MAX_REFRESH_SECONDS = 60.0


def refresh_period(cooldown_period: float) -> float:
    """min(cooldownPeriod / 2, 60 s): never more than half a cooldown, and with KEDA's default
    (300 s) a fifth of it, for one write per two polls at the default 30 s polling interval."""
    return min(max(0.0, float(cooldown_period)) / 2.0, MAX_REFRESH_SECONDS)


def iso(t: datetime | None) -> str | None:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if t else None


def persist_last_active(old: dict, new: dict, exact: datetime | None, submitted: datetime | None,
                        period: float) -> datetime | None:
    """Set `new["lastActiveTime"]` by the rule and return the value now persisted (or on its way).

    `old` is the status as read, `new` the status the poll wants (lastActiveTime not yet set),
    `exact` the in-memory time, `submitted` the last value this controller handed to the writer
    (newer than `old`'s while the cache has not seen the write)."""
    stored = max((t for t in (parse_time(old.get("lastActiveTime")), submitted) if t is not None), default=None)
    if exact is None:
        return stored
    if stored is None or _other_change(old, new) or (exact - stored).total_seconds() >= period:
        new["lastActiveTime"] = iso(exact)
        return exact
    new["lastActiveTime"] = iso(stored)   # never a cache's older value over one still being written
    return stored


def _other_change(old: dict, new: dict) -> bool:
    return bool(merge_diff({k: v for k, v in old.items() if k != "lastActiveTime"},
                           {k: v for k, v in new.items() if k != "lastActiveTime"}))
