"""What the controller remembers of one ScaledObject between its reconciles and polls.

Not the ScaledObject itself: the loop reads it from the informer cache, and a copy kept here (the
object as last reconciled, often the metadata PATCH's answer with its managedFields) was 2.6-6.9 KB
per ScaledObject at 10,000 (docs/keda.md, Benchmark)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime

from promop.keda.spec import PauseState, ScaledObject
from promop.kube.resources import Resource

from promop.autoscaler.keda.triggers import BuiltTrigger


@dataclass
class SOState:
    key: str
    uid: str
    so: ScaledObject
    pause: PauseState
    target: Resource
    target_kind: str                            # status.scaleTargetKind, e.g. apps/v1.Deployment
    triggers: list[BuiltTrigger] = field(default_factory=list)
    health: dict = field(default_factory=dict)  # status.health, counted by the loop and the metrics path
    last_active_time: datetime | None = None     # exact: the cooldown reads this
    persisted_active: datetime | None = None     # the lastActiveTime last handed to the status writer
    generation: int = 0
    polling_interval: float = 30.0
    last_poll: dict = field(default_factory=dict)      # what `explain` shows: values, errors, decision
    last_good: dict = field(default_factory=dict)      # metric -> promop.keda.lastgood.LastGood (under lock)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def trigger_for(self, metric: str) -> BuiltTrigger | None:
        return next((t for t in self.triggers if t.metric_name == metric), None)
