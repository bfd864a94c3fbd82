"""Builders for the pure algorithm's inputs."""

from __future__ import annotations

from promop.autoscale import Container, Pod, PodMetric

NOW = 1_000_000.0


def pods(n: int, cpu_request: int = 1000, *, prefix: str = "p", phase: str = "Running", ready: str | None = "True",
         start: float = NOW - 3600, transition: float = NOW - 3500, mem_limit: int | None = None) -> list[Pod]:
    limits = {"memory": mem_limit} if mem_limit is not None else {}
    return [Pod(f"{prefix}{i}", phase=phase, ready=ready, ready_transition=transition, start_time=start,
                containers=[Container("app", {"cpu": cpu_request, "memory": 1024 * 1000}, dict(limits))])
            for i in range(n)]


def samples(values: dict[str, int], ts: float = NOW, window: float = 30.0) -> dict[str, PodMetric]:
    return {name: PodMetric(v, ts, window) for name, v in values.items()}
