"""One poll of KEDA's scale loop (§2.4/§2.5: RequestScale), pure.

Why pure: the timing rules (cooldown, initialCooldownPeriod, lastActiveTime) and the first-match
table are where a drop-in is judged; here they are one function of the inputs and `now`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from promop.keda.spec import PauseState, ScaledObject


@dataclass(slots=True)
class TriggerResult:
    """One trigger's outcome in this poll."""
    metric_name: str               # s0-prometheus, or cpu/memory for resource triggers
    trigger_name: str = ""         # spec.triggers[].name (formula variable), "" if unnamed
    value: float | None = None     # the raw value (before clamping); None on error / resource trigger
    active: bool = False           # value > activationThreshold
    error: str | None = None       # the error text when the query failed
    is_resource: bool = False      # cpu/memory: always active, no value
    fallback_active: bool = False  # health says fallback serves this metric (counts as active)


@dataclass(slots=True)
class Event:
    type: str                      # Normal | Warning
    reason: str
    message: str


@dataclass(slots=True)
class Decision:
    scale_to: int | None = None                  # set the target's replicas to this (None: leave it)
    last_active_time: datetime | None = None     # the new status.lastActiveTime
    conditions: list[dict] = field(default_factory=list)  # the new status.conditions
    events: list[Event] = field(default_factory=list)
    is_active: bool = False
    is_error: bool = False
    active_metrics: list[str] = field(default_factory=list)
    triggers_activity: dict[str, dict] = field(default_factory=dict)   # status.triggersActivity


def decide(so: ScaledObject, pause: PauseState, current_replicas: int, results: list[TriggerResult],
           last_active_time: datetime | None, creation_time: datetime | None, now: datetime,
           conditions: list[dict] | None = None, scale_target_kind: str = "") -> Decision:
    """KEDA's RequestScale for one poll. `conditions` are the current status.conditions;
    `scale_target_kind` is status.scaleTargetKind (e.g. apps/v1.Deployment) for the event message."""
    raise NotImplementedError
