"""Upstream prometheus-operator's feature gates: names, defaults, and the `--feature-gates` flag.

Some of upstream's output depends on a gate (the shard-retention relabel rules, topology
sharding, the agent's DaemonSet mode, status bindings on configuration resources), so the
operator (`promop run`) and the offline renderer (`promop render`) take the same flag with the
same names and defaults as upstream 0.93 (`pkg/operator/feature_gates.go`): a comma-separated
list of NAME=true|false. An unknown name or a value that is not a boolean is refused with one
line naming it, as upstream's flag parser does, so a typo never silently leaves a gate off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

AGENT_DAEMONSET = "PrometheusAgentDaemonSet"
SHARD_RETENTION_POLICY = "PrometheusShardRetentionPolicy"
TOPOLOGY_SHARDING = "PrometheusTopologySharding"
REMOTE_WRITE_CRD = "RemoteWriteCustomResourceDefinition"
STATUS_FOR_CONFIG_RESOURCES = "StatusForConfigurationResources"

# name -> (enabled by default, description as upstream's --help prints it)
GATES: Mapping[str, tuple[bool, str]] = {
    AGENT_DAEMONSET: (False, "Enables the DaemonSet mode for PrometheusAgent"),
    SHARD_RETENTION_POLICY: (True, "Enables shard retention policy for Prometheus"),
    TOPOLOGY_SHARDING: (False, "Enables the zone aware sharding for Prometheus"),
    REMOTE_WRITE_CRD: (False, "Enables the RemoteWrite CRD support"),
    STATUS_FOR_CONFIG_RESOURCES: (False, "Updates the status subresource for configuration resources"),
}

_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool, as upstream parses values
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class FeatureGateError(ValueError):
    """A `--feature-gates` value that names an unknown gate or a non-boolean value."""


@dataclass(frozen=True)
class FeatureGates:
    """The state of every gate: upstream's defaults with the user's overrides applied."""

    overrides: tuple[tuple[str, bool], ...] = ()

    def enabled(self, name: str) -> bool:
        """Whether gate `name` is on; a name that is not one of GATES is a programming error."""
        if name not in GATES:
            raise KeyError(f"unknown feature gate {name!r}")
        for gate, value in reversed(self.overrides):
            if gate == name:
                return value
        return GATES[name][0]

    def as_dict(self) -> dict[str, bool]:
        """Every gate's state, in upstream's (alphabetical) order."""
        return {name: self.enabled(name) for name in sorted(GATES)}

    def __str__(self) -> str:
        """`A=false,B=true`: the form upstream logs at start-up (`feature_gates=...`)."""
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in self.as_dict().items())


def parse_feature_gates(text: str) -> FeatureGates:
    """Parse `NAME=true,NAME2=false` (empty: the defaults), refusing what upstream refuses."""
    overrides: list[tuple[str, bool]] = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep:
            raise FeatureGateError(f"--feature-gates: missing bool value for {name!r} "
                                   f"(write {name}=true or {name}=false)")
        if name not in GATES:
            raise FeatureGateError(f"--feature-gates: unknown feature gate {name!r}; "
                                   f"known gates: {', '.join(sorted(GATES))}")
        if value in _TRUE:
            overrides.append((name, True))
        elif value in _FALSE:
            overrides.append((name, False))
        else:
            raise FeatureGateError(f"--feature-gates: invalid value of {name}: {value!r}; "
                                   f"use true or false")
    return FeatureGates(tuple(overrides))


def help_text() -> str:
    """The `--feature-gates` help, listing each gate with its default as upstream does."""
    lines = ["Feature gates are a set of key=value pairs that describe Prometheus-Operator features.",
             "Available feature gates:"]
    for name in sorted(GATES):
        default, description = GATES[name]
        lines.append(f"  {name}: {description} (enabled: {'true' if default else 'false'})")
    return "\n".join(lines)


def add_feature_gates_flag(parser) -> None:
    """`--feature-gates`, as `promop run` and `promop render` both take it (parse with parse_feature_gates)."""
    parser.add_argument("--feature-gates", default="", metavar="NAME=BOOL,...", help=help_text())
