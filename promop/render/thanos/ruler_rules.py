"""Rule ConfigMaps of a ThanosRuler: the PrometheusRules it selects, sharded as for Prometheus.

The same files and packing as promop/render/rules.py (one file per PrometheusRule, `<ns>-<name>-<uid>.yaml`,
ConfigMaps of at most 512 KiB, at least three names), named `thanos-ruler-<name>-rulefiles-<i>` and labelled
`thanos-ruler-name`. Thanos's rule format keeps `partial_response_strategy`, which Prometheus's drops.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from promop.render.model import Problem, RenderOptions, obj_meta
from promop.render.rule_validation import validate_rule_spec
from promop.render.rules import (
    KIND, MAX_CONFIGMAP_DATA_SIZE, MIN_RULE_CONFIGMAP_NAMES, RulesResult, dump_rule_file,
    enforce_namespace_label_in_rules, excluded_from_enforcement, rule_file_key, shard_rule_files,
)
from promop.render.schema_check import merge_problems, schema_problems
from promop.render.thanos.ruler_meta import managed_metadata, prefixed_name
from promop.render.versions import Version

# Rule files are checked as the newest Prometheus parses them: Thanos embeds a current Prometheus.
_RULE_PARSER_VERSION = Version(None)


def configmap_names(ruler: Mapping[str, Any], count: int) -> list[str]:
    base = f"{prefixed_name(ruler)}-rulefiles-"
    return [f"{base}{i}" for i in range(max(count, MIN_RULE_CONFIGMAP_NAMES))]


def _render_one(ruler: Mapping[str, Any], rule: Mapping[str, Any], memo: dict) -> tuple[str | None, list[Problem]]:
    ns, name = obj_meta(rule)
    spec = json.loads(json.dumps(rule.get("spec"))) or {}
    own = [Problem(KIND, ns, name, path, msg) for path, msg in validate_rule_spec(spec, _RULE_PARSER_VERSION)]
    problems = merge_problems(own, schema_problems(KIND, rule))
    if problems:
        return None, problems
    label = (ruler.get("spec") or {}).get("enforcedNamespaceLabel")
    if label and not excluded_from_enforcement(ruler, ns, name):
        issues = enforce_namespace_label_in_rules(spec, label, ns, memo)
        if issues:
            return None, [Problem(KIND, ns, name, path, msg) for path, msg in issues]
    content = dump_rule_file(spec)
    size = len(content.encode())
    if size > MAX_CONFIGMAP_DATA_SIZE:
        return None, [Problem(KIND, ns, name, "spec", f"the rendered rule file is {size} bytes, over the "
                              f"{MAX_CONFIGMAP_DATA_SIZE}-byte ConfigMap limit; split it into several PrometheusRules")]
    return content, []


def build_ruler_rule_configmaps(ruler: dict, rules: Sequence[dict], options: RenderOptions) -> RulesResult:
    """The ConfigMaps for the already selected `rules`; an invalid rule is rejected, the others still render."""
    result = RulesResult(configmaps=[], names=[])
    files: dict[str, str] = {}
    owners: dict[str, tuple[str, str]] = {}
    memo: dict = {}
    for rule in sorted(rules, key=obj_meta):
        content, rejected = _render_one(ruler, rule, memo)
        result.rejected.extend(rejected)
        if content is not None:
            files[rule_file_key(rule)] = content
            owners[rule_file_key(rule)] = obj_meta(rule)
    buckets = shard_rule_files(files)
    names = configmap_names(ruler, len(buckets))
    for cm_name, data in zip(names, buckets):
        result.configmaps.append({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": managed_metadata(ruler, cm_name, options, labels={"thanos-ruler-name": ruler["metadata"]["name"]}),
            "data": data,
        })
        for key in data:
            result.rule_files[owners[key]] = (cm_name, key)
    result.names = names
    return result
