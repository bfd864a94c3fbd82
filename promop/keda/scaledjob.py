"""ScaledJob sizing (§1.5, `pkg/scaling/scaledjob/metrics.go`, `executor/scale_jobs.go`), pure."""

from __future__ import annotations


def max_scale(queue_lengths: list[float], targets: list[float], max_replicas: int, calculation: str = "") -> int:
    """The combined desired job count of several triggers (queueLength/target each, capped at max)."""
    raise NotImplementedError


def jobs_to_create(strategy: str, max_scale_: int, running: int, pending: int, max_replicas: int) -> int:
    """How many Jobs to create this poll under the `default`, `accurate` or `eager` strategy."""
    raise NotImplementedError
