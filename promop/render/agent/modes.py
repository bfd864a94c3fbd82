"""spec.mode: StatefulSet (default) or DaemonSet, and upstream's restrictions on DaemonSet mode.

The restrictions are the CRD's validation rules (x-kubernetes-validations), checked again here
because objects written before the CRD, and files read by `promop render`, never met them; the
messages are the CRD's, so the status says the same as the apiserver would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.featuregates import AGENT_DAEMONSET, FeatureGates

DAEMONSET_GATE = AGENT_DAEMONSET

# field -> the CRD's message (upstream 0.93, in the CRD's order)
_NOT_IN_DAEMONSET = (
    ("replicas", "replicas cannot be set when mode is DaemonSet"),
    ("storage", "storage cannot be set when mode is DaemonSet"),
    ("persistentVolumeClaimRetentionPolicy", "persistentVolumeClaimRetentionPolicy cannot be set when mode is DaemonSet"),
    ("scrapeConfigSelector", "scrapeConfigSelector cannot be set when mode is DaemonSet"),
    ("probeSelector", "probeSelector cannot be set when mode is DaemonSet"),
    ("scrapeConfigNamespaceSelector", "scrapeConfigNamespaceSelector cannot be set when mode is DaemonSet"),
    ("probeNamespaceSelector", "probeNamespaceSelector cannot be set when mode is DaemonSet"),
    ("serviceMonitorSelector", "serviceMonitorSelector cannot be set when mode is DaemonSet"),
    ("serviceMonitorNamespaceSelector", "serviceMonitorNamespaceSelector cannot be set when mode is DaemonSet"),
    ("additionalScrapeConfigs", "additionalScrapeConfigs cannot be set when mode is DaemonSet"),
    ("shardingStrategy", "shardingStrategy cannot be set when mode is DaemonSet"),
)


def is_daemonset(agent: Mapping[str, Any]) -> bool:
    return (agent.get("spec") or {}).get("mode") == "DaemonSet"


def daemonset_problems(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, reason) for each field DaemonSet mode does not allow (empty: the spec is fine)."""
    out = [(f"spec.{field}", message) for field, message in _NOT_IN_DAEMONSET if spec.get(field) is not None]
    shards = spec.get("shards")
    if isinstance(shards, int) and shards > 1:
        out.insert(2, ("spec.shards", "shards cannot be greater than 1 when mode is DaemonSet"))
    return out


def mode_problems(agent: Mapping[str, Any], gates: FeatureGates) -> list[tuple[str, str]]:
    """Why this agent cannot be deployed in its mode: the gate is off, or fields DaemonSet mode refuses."""
    if not is_daemonset(agent):
        return []
    if not gates.enabled(DAEMONSET_GATE):
        return [("spec.mode", f"DaemonSet mode needs the {DAEMONSET_GATE} feature gate: "
                              f"start the operator with --feature-gates={DAEMONSET_GATE}=true, or remove spec.mode")]
    return daemonset_problems(agent.get("spec") or {})
