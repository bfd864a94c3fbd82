"""spec.shardRetentionPolicy: what happens to a shard's StatefulSet when spec.shards goes down.

As upstream 0.93 (`processShardRetention`, gate PrometheusShardRetentionPolicy, on by
default): with `whenScaled: Retain` the excess shard's StatefulSet is kept running (its
data stays queryable; the `__tmp_current_shard` relabel rules make it scrape nothing new)
and annotated `operator.prometheus.io/deletion-deadline` with the time it may go: now plus
`retain.retentionPeriod`, else plus spec.retention, else plus the default 24h; with only a
size-based retention (spec.retentionSize) the deadline is Go's zero time, which means
"keep until someone deletes it". Later syncs leave an annotated StatefulSet alone until
its deadline has passed, then delete it. With the gate off, no policy, or
`whenScaled: Delete` (the default) the StatefulSet is deleted at once.

The decision is a pure function of the Prometheus, the StatefulSet and the clock, so it is
tested without an API server; the writer applies it (a merge patch, or a delete).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from promop.duration import DurationError, parse_duration

DEADLINE_ANNOTATION = "operator.prometheus.io/deletion-deadline"
DEFAULT_RETENTION = "24h"  # Prometheus's own default, as the operator's
ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time in RFC 3339: no deadline


class RetentionError(ValueError):
    """spec.retention or retain.retentionPeriod is not a duration."""


@dataclass(frozen=True)
class Decision:
    """Delete the StatefulSet now, or keep it (and write `annotate` on it when not None)."""

    delete: bool
    annotate: dict[str, str] | None = None


def grace_period(spec: Mapping[str, Any]) -> dt.timedelta | None:
    """How long a scaled-down shard is kept; None = forever (size-only retention). Raises RetentionError."""
    policy = spec.get("shardRetentionPolicy") or {}
    period = (policy.get("retain") or {}).get("retentionPeriod")
    field = "spec.shardRetentionPolicy.retain.retentionPeriod"
    if not period:
        period, field = spec.get("retention"), "spec.retention"
        if not period:
            if spec.get("retentionSize"):
                return None
            period = DEFAULT_RETENTION
    try:
        return dt.timedelta(milliseconds=parse_duration(period))
    except DurationError as exc:
        raise RetentionError(f"{field}: {exc}") from None


def _rfc3339(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _deadline(text: str) -> dt.datetime | None:
    """The annotation's time; None for the zero time (no deadline)."""
    if text == ZERO_TIME or text.startswith("0001-01-01"):
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def retains(spec: Mapping[str, Any], gate_enabled: bool) -> bool:
    """Whether scaled-down shards are kept (the gate is on and whenScaled is Retain)."""
    policy = spec.get("shardRetentionPolicy")
    return gate_enabled and isinstance(policy, Mapping) and policy.get("whenScaled") == "Retain"


def decide(spec: Mapping[str, Any], statefulset: Mapping[str, Any], gate_enabled: bool,
           now: dt.datetime) -> Decision:
    """What to do with the StatefulSet of a shard past spec.shards. Raises RetentionError."""
    if not retains(spec, gate_enabled):
        return Decision(delete=True)
    annotations = (statefulset.get("metadata") or {}).get("annotations") or {}
    current = annotations.get(DEADLINE_ANNOTATION)
    if current is None:
        period = grace_period(spec)
        deadline = ZERO_TIME if period is None else _rfc3339(now + period)
        return Decision(delete=False, annotate={DEADLINE_ANNOTATION: deadline})
    try:
        deadline_at = _deadline(current)
    except ValueError:  # someone wrote a bad time: start the period again, as with no annotation
        period = grace_period(spec)
        return Decision(False, {DEADLINE_ANNOTATION: ZERO_TIME if period is None else _rfc3339(now + period)})
    if deadline_at is None or deadline_at > now:
        return Decision(delete=False)
    return Decision(delete=True)
