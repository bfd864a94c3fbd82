"""Rule ConfigMaps: selected PrometheusRules -> validated, sanitised rule files, sharded into ConfigMaps.

STUB with the real signature; the implementation follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import Problem, RenderOptions


@dataclass
class RulesResult:
    configmaps: list[dict]
    names: list[str]  # sorted real names padded to >= 3 with virtual names
    rejected: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    rule_files: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)


def build_rule_configmaps(prometheus: dict, rules: Sequence[dict], options: RenderOptions) -> RulesResult:
    name = f"{prefixed_name(prometheus)}-rulefiles-0"
    md = managed_metadata(prometheus, name, options, labels={"prometheus-name": prometheus["metadata"]["name"]})
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": {}}
    base = prefixed_name(prometheus) + "-rulefiles-"
    return RulesResult(configmaps=[cm], names=[base + str(i) for i in range(3)])
