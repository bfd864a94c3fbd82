"""Rule ConfigMaps: selected PrometheusRules -> validated rule files, sharded into ConfigMaps.

As upstream (reference §2): one file per PrometheusRule, keyed
`<namespace>-<name>-<uid>.yaml`, holding the sanitised spec with alphabetical
keys; files sorted by name and packed into ConfigMaps of at most 524,288 bytes
of data, named `prometheus-<name>-rulefiles-<i>`. Unlike upstream, an invalid
PrometheusRule is reported with the field and reason (RulesResult.rejected),
and every other rule still renders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from promop.render.emit import emit
from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import MONITORING_GROUP, Problem, RenderOptions, obj_meta
from promop.render.namespace_label import EnforceError, enforce_namespace_label
from promop.render.rule_validation import validate_rule_spec
from promop.render.schema_check import merge_problems, schema_problems
from promop.render.versions import Version, VersionError

KIND = "PrometheusRule"
MAX_CONFIGMAP_DATA_SIZE = 524_288  # upstream MaxConfigMapDataSize = MaxSecretSize / 2
MIN_RULE_CONFIGMAP_NAMES = 3  # upstream AppendConfigMapNames(names, 3): mounts survive 1<->3 ConfigMaps

# Field -> first Prometheus version that understands it (`sanitizePrometheusRulesSpec`).
GROUP_FIELD_MIN_VERSION = {"limit": "2.31.0", "query_offset": "2.53.0", "labels": "3.0.0"}
RULE_FIELD_MIN_VERSION = {"keep_firing_for": "2.42.0"}


@dataclass
class RulesResult:
    configmaps: list[dict]
    names: list[str]  # sorted real names padded to >= 3 with virtual names
    rejected: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    rule_files: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (ns, name) -> (cm, key)


def dump_rule_file(spec: Mapping[str, Any]) -> str:
    """A rule file's text: the spec with alphabetically sorted keys (as sigs.k8s.io/yaml does),
    multi-line strings as `|` blocks, as rule files are usually written."""
    return emit(dict(spec), sort_keys=True, literal=True)


def rule_file_key(rule: Mapping[str, Any]) -> str:
    md = rule.get("metadata") or {}
    return f"{md.get('namespace', '')}-{md.get('name', '')}-{md.get('uid', '')}.yaml"


def configmap_names(prometheus: Mapping[str, Any], count: int) -> list[str]:
    """`prometheus-<name>-rulefiles-<i>` for i < max(count, 3): real names, then virtual ones."""
    base = f"{prefixed_name(prometheus)}-rulefiles-"
    return [f"{base}{i}" for i in range(max(count, MIN_RULE_CONFIGMAP_NAMES))]


def _prometheus_version(prometheus: Mapping[str, Any]) -> Version:
    try:
        return Version((prometheus.get("spec") or {}).get("version"))
    except VersionError:
        return Version(None)  # the config half reports the bad version


def _drop_too_new(obj: dict, minimums: Mapping[str, str], path: str, version: Version, where: tuple[str, str],
                  warnings: list[Problem]) -> None:
    for key, minimum in minimums.items():
        if key in obj and not version.at_least(minimum):
            del obj[key]
            warnings.append(Problem(KIND, *where, f"{path}.{key}",
                                    f"dropped: needs Prometheus >= {minimum}, this Prometheus is {version}"))


def _sanitize(spec: dict, version: Version, ns: str, name: str, warnings: list[Problem]) -> dict:
    """Drop fields this Prometheus version does not understand, with a warning each."""
    for i, group in enumerate(spec.get("groups") or []):
        group.pop("partial_response_strategy", None)  # Thanos-only field
        _drop_too_new(group, GROUP_FIELD_MIN_VERSION, f"spec.groups[{i}]", version, (ns, name), warnings)
        for j, rule in enumerate(group.get("rules") or []):
            _drop_too_new(rule, RULE_FIELD_MIN_VERSION, f"spec.groups[{i}].rules[{j}]", version, (ns, name),
                          warnings)
    return spec


def excluded_from_enforcement(prometheus: Mapping[str, Any], ns: str, name: str) -> bool:
    spec = prometheus.get("spec") or {}
    for ref in spec.get("excludedFromEnforcement") or []:
        if (ref.get("resource") == "prometheusrules" and ref.get("group", MONITORING_GROUP) == MONITORING_GROUP
                and ref.get("namespace") == ns and ref.get("name") in (None, "", name)):
            return True
    for ref in spec.get("prometheusRulesExcludedFromEnforce") or []:
        if ref.get("ruleNamespace") == ns and ref.get("ruleName") in (None, "", name):
            return True
    return False


def enforce_namespace_label_in_rules(spec: dict, label: str, ns: str,
                                     memo: dict | None = None) -> list[tuple[str, str]]:
    """Add `<label>: <ns>` to every rule and its selectors; (field, message) for each failure.

    `memo` (one per render) keeps each rewrite by (expression, namespace): rules often repeat
    an expression (one per severity, per namespace), and a rewrite parses PromQL.
    """
    issues = []
    memo = {} if memo is None else memo
    for i, group in enumerate(spec.get("groups") or []):
        for j, rule in enumerate(group.get("rules") or []):
            rule["labels"] = {**(rule.get("labels") or {}), label: ns}
            expr = str(rule["expr"])
            key = (expr, label, ns)
            done = memo.get(key)
            if done is None:
                try:
                    done = memo[key] = (enforce_namespace_label(expr, label, ns), None)
                except EnforceError as exc:
                    done = memo[key] = (None, str(exc))
            if done[1] is None:
                rule["expr"] = done[0]
            else:
                issues.append((f"spec.groups[{i}].rules[{j}].expr", f"enforcedNamespaceLabel {label}: {done[1]}"))
    return issues


_Rendered = tuple[str | None, list[Problem], list[Problem]]  # (content or None if rejected, rejected, warnings)


def _render_one(prometheus: Mapping[str, Any], rule: Mapping[str, Any], version: Version,
                enforced: dict | None = None) -> _Rendered:
    """The rule file content for one PrometheusRule (None when it is rejected), and its problems.

    `enforced`: the render's memo of namespace-label rewrites (see enforce_namespace_label_in_rules)."""
    ns, name = obj_meta(rule)
    rejected: list[Problem] = []
    warnings: list[Problem] = []
    spec = json.loads(json.dumps(rule.get("spec")))  # a private copy (faster than deepcopy)
    if spec is None:
        spec = {}
    own = [Problem(KIND, ns, name, path, msg) for path, msg in validate_rule_spec(spec, version)]
    problems = merge_problems(own, schema_problems(KIND, rule))
    if problems:
        return None, problems, warnings
    spec = _sanitize(spec, version, ns, name, warnings)
    label = (prometheus.get("spec") or {}).get("enforcedNamespaceLabel")
    if label and not excluded_from_enforcement(prometheus, ns, name):
        issues = enforce_namespace_label_in_rules(spec, label, ns, enforced)
        if issues:
            return None, [Problem(KIND, ns, name, path, msg) for path, msg in issues], warnings
    content = dump_rule_file(spec)
    size = len(content.encode())
    if size > MAX_CONFIGMAP_DATA_SIZE:
        rejected.append(Problem(
            KIND, ns, name, "spec",
            f"the rendered rule file is {size} bytes, over the {MAX_CONFIGMAP_DATA_SIZE}-byte ConfigMap limit; "
            "split it into several PrometheusRules"))
        return None, rejected, warnings
    return content, rejected, warnings


def _memo_key(prometheus: Mapping[str, Any], rule: Mapping[str, Any], version: Version) -> str:
    """Everything _render_one depends on, as one string."""
    ns, name = obj_meta(rule)
    spec = prometheus.get("spec") or {}
    label = spec.get("enforcedNamespaceLabel") or ""
    excluded = bool(label) and excluded_from_enforcement(prometheus, ns, name)
    return json.dumps([ns, name, str(version), label, excluded, rule.get("spec")], sort_keys=True, default=str)


def shard_rule_files(files: Mapping[str, str]) -> list[dict[str, str]]:
    """Files sorted by name, packed in order; a new bucket starts when the next would overflow."""
    buckets: list[dict[str, str]] = [{}]
    size = 0
    for key in sorted(files):
        length = len(files[key].encode())
        if buckets[-1] and size + length > MAX_CONFIGMAP_DATA_SIZE:
            buckets.append({})
            size = 0
        buckets[-1][key] = files[key]
        size += length
    return buckets


def build_rule_configmaps(prometheus: dict, rules: Sequence[dict], options: RenderOptions,
                          memo: MutableMapping[str, Any] | None = None) -> RulesResult:
    """The rule ConfigMaps for the already selected `rules`; invalid ones are rejected, not fatal.

    `memo`, if given, keeps each PrometheusRule's rendered file across calls (keyed by everything
    the file depends on), so a re-render after one rule changed redoes only that rule.
    """
    version = _prometheus_version(prometheus)
    result = RulesResult(configmaps=[], names=[])
    files: dict[str, str] = {}
    owners: dict[str, tuple[str, str]] = {}
    enforced: dict = {}
    for rule in sorted(rules, key=obj_meta):
        if memo is None:
            rendered = _render_one(prometheus, rule, version, enforced)
        else:
            key = _memo_key(prometheus, rule, version)
            rendered = memo.get(key)
            if rendered is None:
                rendered = memo[key] = _render_one(prometheus, rule, version, enforced)
        content, rejected, warnings = rendered
        result.rejected.extend(rejected)
        result.warnings.extend(warnings)
        if content is not None:
            key = rule_file_key(rule)
            files[key] = content
            owners[key] = obj_meta(rule)
    buckets = shard_rule_files(files)
    names = configmap_names(prometheus, len(buckets))
    prom_name = prometheus["metadata"]["name"]
    for cm_name, data in zip(names, buckets):
        result.configmaps.append({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": managed_metadata(prometheus, cm_name, options, labels={"prometheus-name": prom_name}),
            "data": data,
        })
        for key in data:
            result.rule_files[owners[key]] = (cm_name, key)
    result.names = names
    return result
