"""promop's deliberate deviations from upstream, as named normalisations of upstream's expected values.

A translated upstream test keeps upstream's expectation verbatim and passes it through one of these,
so the test still fails if we drift from upstream in any other way. Each says what upstream does,
what promop does instead and where that is documented.
"""

from __future__ import annotations

from typing import Any

# promop polls the Prometheus container's startup probe every second (docs/reloader.md "Resources"):
# upstream's 15 s (up to 60 s with maximumStartupDurationSeconds) left a Prometheus that answers
# /-/ready 2-3 s after it starts waiting for the second probe, Ready in 17-18 s instead of 7-8 s.
# Not imported from promop: the test states the rule on its own.
PROMOP_STARTUP_PROBE_PERIOD_SECONDS = 1


def promop_startup_timing(upstream_period: int, upstream_failures: int) -> tuple[int, int]:
    """Upstream's (periodSeconds, failureThreshold) as promop's: the same total budget, probed every second."""
    return PROMOP_STARTUP_PROBE_PERIOD_SECONDS, upstream_period * upstream_failures


def promop_startup_probe(upstream_probe: dict[str, Any]) -> dict[str, Any]:
    """Upstream's expected startupProbe as promop's: only periodSeconds and failureThreshold change."""
    period, failures = promop_startup_timing(upstream_probe["periodSeconds"], upstream_probe["failureThreshold"])
    return {**upstream_probe, "periodSeconds": period, "failureThreshold": failures}


def promop_workload(upstream_workload: dict[str, Any]) -> dict[str, Any]:
    """An upstream StatefulSet/DaemonSet expectation with every container's startupProbe made promop's."""
    pod = upstream_workload.get("spec", {}).get("template", {}).get("spec", {})
    for c in pod.get("containers", []):
        if "startupProbe" in c:
            c["startupProbe"] = promop_startup_probe(c["startupProbe"])
    return upstream_workload
