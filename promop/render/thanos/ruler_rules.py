"""Rule ConfigMaps of a ThanosRuler: the PrometheusRules it selects, sharded as for Prometheus.

The same files and packing as promop/render/rules.py (one file per PrometheusRule, `<ns>-<name>-<uid>.yaml`,
ConfigMaps of at most 512 KiB, at least three names), named `thanos-ruler-<name>-rulefiles-<i>` and labelled
`thanos-ruler-name`. Thanos's rule format keeps `partial_response_strategy`, which Prometheus's drops.

As upstream's sanitizePrometheusRulesSpec for the Thanos format, the fields the ruler's Thanos version does
not know are dropped (with a warning), not refused: group `limit` before 0.24, `query_offset` before 0.38,
group `labels` before 0.39, `keep_firing_for` before 0.34. The rest is checked as upstream's rulefmt.Parse
does (the operator's own, current Prometheus parser), with metric and label names checked by the legacy
scheme before Thanos 0.38 (the first ruler that accepts UTF-8 names) and as UTF-8 from 0.38.
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
from promop.render.thanos.versions import thanos_version
from promop.render.versions import Version

# Rule files are parsed as upstream does, by the newest Prometheus's parser.
_RULE_PARSER_VERSION = Version(None)
# Field -> first Thanos version whose ruler reads it (upstream's minVersion* of the Thanos format).
GROUP_FIELD_MIN_THANOS = {"limit": "0.24.0", "query_offset": "0.38.0", "labels": "0.39.0"}
RULE_FIELD_MIN_THANOS = {"keep_firing_for": "0.34.0"}
UTF8_NAMES_THANOS_SINCE = "0.38.0"  # before it, names are checked with the legacy scheme
_LEGACY_NAMES_PARSER = Version("2.55.1")  # the last Prometheus with legacy-only names
_NAME_PROBLEMS = ("invalid recording rule name", "invalid label name", "invalid annotation name")


def configmap_names(ruler: Mapping[str, Any], count: int) -> list[str]:
    base = f"{prefixed_name(ruler)}-rulefiles-"
    return [f"{base}{i}" for i in range(max(count, MIN_RULE_CONFIGMAP_NAMES))]


def _drop_unknown_fields(spec: dict, version: Version, where: tuple[str, str], warnings: list[Problem]) -> None:
    """Drop (with a warning each) the fields this Thanos's ruler does not read, as upstream does."""
    def drop(obj: Any, minimums: Mapping[str, str], path: str) -> None:
        if not isinstance(obj, dict):
            return
        for key, minimum in minimums.items():
            if obj.get(key) not in (None, {}, []) and not version.at_least(minimum):
                del obj[key]
                warnings.append(Problem(KIND, *where, f"{path}.{key}", f"dropped: needs Thanos >= {minimum}, "
                                        f"this ThanosRuler runs {version}"))
    groups = spec.get("groups")
    for i, group in enumerate(groups if isinstance(groups, list) else []):
        drop(group, GROUP_FIELD_MIN_THANOS, f"spec.groups[{i}]")
        rules = group.get("rules") if isinstance(group, dict) else None
        for j, rule in enumerate(rules if isinstance(rules, list) else []):
            drop(rule, RULE_FIELD_MIN_THANOS, f"spec.groups[{i}].rules[{j}]")


def rule_issues(spec: Any, version: Version) -> list[tuple[str, str]]:
    """What upstream's rulefmt.Parse refuses, with the name scheme of this Thanos version."""
    issues = validate_rule_spec(spec, _RULE_PARSER_VERSION)
    if not version.at_least(UTF8_NAMES_THANOS_SINCE):
        seen = set(issues)
        issues += [(path, msg) for path, msg in validate_rule_spec(spec, _LEGACY_NAMES_PARSER)
                   if msg.startswith(_NAME_PROBLEMS) and (path, msg) not in seen]
    return issues


def _render_one(ruler: Mapping[str, Any], rule: Mapping[str, Any], version: Version, memo: dict,
                warnings: list[Problem]) -> tuple[str | None, list[Problem]]:
    ns, name = obj_meta(rule)
    spec = json.loads(json.dumps(rule.get("spec"))) or {}
    if isinstance(spec, dict):
        _drop_unknown_fields(spec, version, (ns, name), warnings)
    own = [Problem(KIND, ns, name, path, msg) for path, msg in rule_issues(spec, version)]
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
    version = thanos_version((ruler.get("spec") or {}).get("version"), "spec.version")
    for rule in sorted(rules, key=obj_meta):
        content, rejected = _render_one(ruler, rule, version, memo, result.warnings)
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
