"""Topology (zone-aware) sharding: spec.shardingStrategy.mode: Topology, as upstream 0.93.

Behind upstream's alpha gate PrometheusTopologySharding. With the gate on, the mode
Topology and at least one zone in `topology.values`, shard i runs in zone
values[i % zones] (its pods get a nodeSelector on topology.kubernetes.io/zone) and is
the (i // zones)-th shard of that zone. The one generated config serves every shard,
so the per-pod parts come from environment variables the config reloader substitutes:
`$(TOPOLOGY_ZONE)` and `$(INZONE_SHARD)`. Each monitor job first finds a target's
zone (`__tmp_topology`: the EndpointSlice endpoint's zone, else the zone label of its
node, or of its pod where Kubernetes >= 1.35 copies it there), keeps only the
targets in this shard's zone, then hash-shards them over shards // zones in-zone
shards. Prometheus gets the external label `zone: $(TOPOLOGY_ZONE)` (the name is
`topology.externalLabelName`; empty leaves it out).

With the gate off, the strategy is ignored as upstream ignores it (plain address
sharding, no zone label) and the render warns. The CRD refuses fewer shards than
zones; an offline render refuses it too, in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from promop.featuregates import TOPOLOGY_SHARDING
from promop.render.model import RenderOptions
from promop.render.shards import shard_count
from promop.render.versions import Version, VersionError

ZONE_LABEL = "topology.kubernetes.io/zone"
ZONE_META = "topology_kubernetes_io_zone"  # the label as a Prometheus meta label suffix
DEFAULT_EXTERNAL_LABEL = "zone"
ZONE_ENV = "TOPOLOGY_ZONE"
INZONE_SHARD_ENV = "INZONE_SHARD"
POD_TOPOLOGY_LABELS_SINCE = "1.35.0"  # the kubelet copies the node's zone label onto pods


class TopologyError(ValueError):
    """A topology sharding strategy that cannot work (fewer shards than zones)."""


@dataclass(frozen=True)
class Topology:
    """An active topology sharding strategy."""

    zones: tuple[str, ...]
    shards: int
    external_label: str  # "" = no zone external label
    pod_labels: bool  # read the zone from the pod's labels instead of the node's

    def zone(self, shard: int) -> str:
        return self.zones[shard % len(self.zones)]

    def inzone_shard(self, shard: int) -> int:
        return shard // len(self.zones)

    @property
    def modulus(self) -> int:
        """How many shards share one zone (the hashmod modulus of every job)."""
        return max(1, self.shards // len(self.zones))

    @property
    def attach_node_metadata(self) -> bool:
        """Whether jobs need `attach_metadata: {node: true}` to see the node's zone label."""
        return not self.pod_labels

    def zone_relabels(self) -> list[dict]:
        """Find each target's zone, then keep only this shard's zone (before the hashmod rules)."""
        source = "pod" if self.pod_labels else "node"
        return [
            {"source_labels": ["__meta_kubernetes_endpointslice_endpoint_zone", "__tmp_topology"],
             "target_label": "__tmp_topology", "regex": "(.+);", "replacement": "$1", "action": "replace"},
            {"source_labels": [f"__meta_kubernetes_{source}_label_{ZONE_META}",
                               f"__meta_kubernetes_{source}_labelpresent_{ZONE_META}", "__tmp_topology"],
             "target_label": "__tmp_topology", "regex": "(.+);true;", "replacement": "$1", "action": "replace"},
            {"source_labels": ["__tmp_topology", "__tmp_disable_sharding"],
             "regex": f"$({ZONE_ENV});|.+;.+", "action": "keep"},
        ]

    @property
    def shard_variable(self) -> str:
        return f"$({INZONE_SHARD_ENV})"


def requested(spec: Mapping[str, Any]) -> bool:
    """Whether spec.shardingStrategy asks for Topology mode (whatever the gate says)."""
    strategy = spec.get("shardingStrategy")
    return isinstance(strategy, Mapping) and strategy.get("mode") == "Topology"


def _pod_labels(options: RenderOptions) -> bool:
    if not options.kubernetes_version:
        return False  # unknown cluster: the node's labels work on every version
    try:
        return Version(options.kubernetes_version).at_least(POD_TOPOLOGY_LABELS_SINCE)
    except VersionError:
        return False


def of(spec: Mapping[str, Any], options: RenderOptions) -> Topology | None:
    """The active topology strategy, or None (gate off, Address mode, or no zones). Raises TopologyError."""
    if not requested(spec) or not options.feature_gates.enabled(TOPOLOGY_SHARDING):
        return None
    topology = spec["shardingStrategy"].get("topology") or {}
    zones = tuple(str(z) for z in topology.get("values") or ())
    if not zones:
        return None
    shards = shard_count(spec)
    if shards < len(zones):
        raise TopologyError(f"spec.shards is {shards} but spec.shardingStrategy.topology.values lists {len(zones)} "
                            f"zones: every zone needs a shard; set shards to at least {len(zones)}")
    label = topology.get("externalLabelName")
    return Topology(zones, shards, DEFAULT_EXTERNAL_LABEL if label is None else str(label), _pod_labels(options))


def ignored_reason(spec: Mapping[str, Any], options: RenderOptions) -> str | None:
    """Why a requested Topology mode does nothing, for a warning (None when it applies or is not asked for)."""
    if not requested(spec):
        return None
    if not options.feature_gates.enabled(TOPOLOGY_SHARDING):
        return (f"ignored: Topology sharding needs the {TOPOLOGY_SHARDING} feature gate; start promop with "
                f"--feature-gates={TOPOLOGY_SHARDING}=true (targets are sharded by address meanwhile)")
    if not ((spec["shardingStrategy"].get("topology") or {}).get("values")):
        return "ignored: topology.values lists no zone; list the zones to shard over"
    return None


def _with_zone_env(container: dict, topology: Topology, shard: int) -> None:
    env = [e for e in container.get("env") or [] if e.get("name") not in (ZONE_ENV, INZONE_SHARD_ENV)]
    env += [{"name": ZONE_ENV, "value": topology.zone(shard)},
            {"name": INZONE_SHARD_ENV, "value": str(topology.inzone_shard(shard))}]
    container["env"] = env


def adapt_statefulset(statefulset: dict, shard: int, topology: Topology | None) -> dict:
    """Pin shard `shard` to its zone (nodeSelector) and give both reloaders the zone and in-zone shard
    they substitute into the config. Modifies and returns `statefulset`."""
    if topology is None:
        return statefulset
    pod = statefulset["spec"]["template"]["spec"]
    pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), ZONE_LABEL: topology.zone(shard)}
    for key in ("containers", "initContainers"):
        for container in pod.get(key) or []:
            if container.get("name") in ("config-reloader", "init-config-reloader"):
                _with_zone_env(container, topology, shard)
    return statefulset


def for_context(ctx: Any) -> Topology | None:
    """The active strategy of a GenContext (`spec`, `options`); new_context has already refused a bad one."""
    try:
        return of(ctx.spec, ctx.options)
    except TopologyError:
        return None
