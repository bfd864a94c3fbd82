"""PrometheusRule validation and mutation, as upstream's `/admission-prometheusrules/*`.

Validation runs promop.render.rule_validation (what the renderer checks before it
writes a rule file), so the webhook refuses exactly what the operator would reject
later. Each cause names the group, the rule and the problem, which is what a user
needs to find it in a long PrometheusRule.

Mutation is upstream's: alert labels and annotations whose values are not strings
(YAML's `true`, `1`, `null`) become strings, and the object is marked with the
`prometheus-operator-validated: "true"` annotation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from promop.admission import review
from promop.render.rule_validation import validate_rule_spec
from promop.render.model import DEFAULT_PROMETHEUS_VERSION
from promop.render.versions import Version

VALIDATED_ANNOTATION = "prometheus-operator-validated"
# Name validation scheme -> the Prometheus version whose rules apply: legacy names are Prometheus 2's
# (its last release), UTF-8 names the default Prometheus' (3.x), PromQL functions likewise.
SCHEMES = {"legacy": Version("v2.55.1"), "utf8": Version(DEFAULT_PROMETHEUS_VERSION)}

_RULE_PATH = re.compile(r"^spec\.groups\[(\d+)\](?:\.rules\[(\d+)\])?")


def _quote(value: Any) -> str:
    """Go's %q (rulefmt words its errors with it)."""
    return json.dumps(str(value), ensure_ascii=False)


def _where(spec: Any, path: str) -> str:
    """`group "g", rule 1, "Alert"` for a path inside spec.groups (upstream rulefmt's wording)."""
    m = _RULE_PATH.match(path)
    if not m or not isinstance(spec, Mapping):
        return ""
    groups = spec.get("groups") or []
    gi = int(m.group(1))
    group = groups[gi] if isinstance(groups, list) and gi < len(groups) and isinstance(groups[gi], Mapping) else {}
    text = f"group {_quote(group.get('name', ''))}"
    if m.group(2) is None:
        return text
    ri = int(m.group(2))
    rules = group.get("rules") or []
    rule = rules[ri] if isinstance(rules, list) and ri < len(rules) and isinstance(rules[ri], Mapping) else {}
    name = rule.get("alert") or rule.get("record") or ""
    return f"{text}, rule {ri + 1}, {_quote(name)}"


def validate(request: Mapping[str, Any], scheme: str = "utf8") -> dict:
    """An AdmissionResponse for a PrometheusRule: allowed, or refused with one cause per problem."""
    obj = review.request_object(request)
    if not isinstance(obj, Mapping):
        return review.denied(request, "the request carries no PrometheusRule object", code=400, reason="BadRequest")
    spec = obj.get("spec")
    issues = validate_rule_spec(spec, SCHEMES[scheme])
    if not issues:
        return review.allowed(request)
    causes = []
    for path, message in issues:
        where = _where(spec, path)
        causes.append((path, f"{where}: {path}: {message}" if where else f"{path}: {message}"))
    meta = obj.get("metadata") or {}
    head = f"PrometheusRule {meta.get('namespace', '')}/{meta.get('name', '')} is invalid: "
    return review.denied(request, head + "; ".join(m for _, m in causes), causes)


def _pointer(*parts: Any) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _as_string(value: Any) -> str:
    """How upstream's mutation prints a non-string value (Go's %v of the decoded JSON)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def mutation_patch(obj: Mapping[str, Any]) -> list[dict]:
    """The RFC 6902 operations upstream's mutation applies to one PrometheusRule."""
    ops: list[dict] = []
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations")
    if not isinstance(annotations, Mapping):
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {VALIDATED_ANNOTATION: "true"}})
    else:
        ops.append({"op": "add", "path": _pointer("metadata", "annotations", VALIDATED_ANNOTATION), "value": "true"})
    groups = (obj.get("spec") or {}).get("groups") if isinstance(obj.get("spec"), Mapping) else None
    for gi, group in enumerate(groups if isinstance(groups, list) else []):
        rules = group.get("rules") if isinstance(group, Mapping) else None
        for ri, rule in enumerate(rules if isinstance(rules, list) else []):
            if not isinstance(rule, Mapping):
                continue
            for key in ("labels", "annotations"):
                values = rule.get(key)
                for name, value in (values.items() if isinstance(values, Mapping) else ()):
                    if not isinstance(value, str):
                        ops.append({"op": "replace", "path": _pointer("spec", "groups", gi, "rules", ri, key, name),
                                    "value": _as_string(value)})
    return ops


def mutate(request: Mapping[str, Any]) -> dict:
    obj = review.request_object(request)
    if not isinstance(obj, Mapping):
        return review.denied(request, "the request carries no PrometheusRule object", code=400, reason="BadRequest")
    return review.allowed(request, patch=mutation_patch(obj))
