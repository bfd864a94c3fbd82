"""Which custom.metrics.k8s.io version to ask, found through discovery as the HPA's custom-metrics
client does (k8s.io/metrics/pkg/client/custom_metrics: ServerGroups, then the preferred version if
known, else the first known one). A group-version the aggregator published Stale is invisible
there, which is how a real HPA fails with "no known available metric versions found" when the
metrics server's discovery is unusable; `hpa explain` fails the same way instead of guessing a path.
external.metrics.k8s.io and metrics.k8s.io are asked at v1beta1 without discovery, as upstream's
clients do."""

from __future__ import annotations

from typing import Any

from promop.kube import discovery

CUSTOM = "custom.metrics.k8s.io"
KNOWN_VERSIONS = ("v1beta2", "v1beta1")   # what the upstream client can decode


class NoMetricVersions(Exception):
    """The custom metrics API is missing from discovery, or has no usable version there."""


def choose_custom_version(groups: list[dict]) -> str:
    group = next((g for g in groups if g.get("name") == CUSTOM), None)
    if group is None:
        raise NoMetricVersions(f"no custom metrics API ({CUSTOM}) registered")
    preferred = (group.get("preferredVersion") or {}).get("version")
    if preferred in KNOWN_VERSIONS:
        return preferred
    for v in group.get("versions") or []:
        if v.get("version") in KNOWN_VERSIONS:
            return v["version"]
    raise NoMetricVersions("no known available metric versions found")


def custom_metrics_version(client: Any) -> str:
    """The version to ask, from the server's (aggregated) discovery."""
    return choose_custom_version(discovery.server_groups(client))
