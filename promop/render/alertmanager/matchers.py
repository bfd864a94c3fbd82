"""AlertmanagerConfig matchers -> Alertmanager `matchers` strings (>= 0.22) or `match`/`match_re` maps."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from promop.render.alertmanager.common import Reject, Version
from promop.render.re2 import check_re2

MATCH_TYPES = ("=", "!=", "=~", "!~")


@lru_cache(maxsize=4096)
def _regex_problem(value: str) -> str | None:
    """check_re2, memoised: the same matcher regexes recur across AlertmanagerConfigs."""
    return check_re2(value)


def escape_value(value: str) -> str:
    """OpenMetrics-style escaping of a matcher value (`\\`, newline, `"`)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def matcher_string(name: str, op: str, value: str) -> str:
    return f'{name}{op}"{escape_value(value)}"'


def check_matcher(m: Any, field: str) -> tuple[str, str, str]:
    """(name, op, value) of a CRD Matcher; Reject when it is invalid."""
    if not isinstance(m, Mapping):
        raise Reject(field, "a matcher must be a mapping with name, value and matchType")
    name = m.get("name")
    if not isinstance(name, str) or not name.strip():
        raise Reject(f"{field}.name", "the label name is empty")
    value = m.get("value", "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise Reject(f"{field}.value", f"{value!r} is not a string; quote it")
    op = m.get("matchType")
    if op:
        if op not in MATCH_TYPES:
            raise Reject(f"{field}.matchType", f"{op!r} is not a match type; use one of =, !=, =~, !~")
    else:
        op = "=~" if m.get("regex") else "="
    if op in ("=~", "!~"):
        problem = _regex_problem(value)
        if problem:
            raise Reject(f"{field}.value", f"invalid regular expression {value!r}: {problem}")
    return name, op, value


def convert_matchers(matchers: Any, field: str, version: Version) -> dict:
    """{"matchers": [...]} for >= 0.22, else {"match": {...}, "match_re": {...}} (empty parts dropped)."""
    if matchers is None:
        return {}
    if not isinstance(matchers, list):
        raise Reject(field, "must be a list of matchers")
    v2 = version.at_least("0.22.0")
    strings: list[str] = []
    match: dict[str, str] = {}
    match_re: dict[str, str] = {}
    for i, m in enumerate(matchers):
        name, op, value = check_matcher(m, f"{field}[{i}]")
        if v2:
            strings.append(matcher_string(name, op, value))
            continue
        if m.get("matchType"):
            raise Reject(f"{field}[{i}].matchType", f"matchType needs Alertmanager >= v0.22.0, but spec.version is {version}; "
                                                   "use regex: true/false or upgrade")
        (match_re if op == "=~" else match)[name] = value
    out: dict = {}
    if strings:
        out["matchers"] = strings
    if match:
        out["match"] = match
    if match_re:
        out["match_re"] = match_re
    return out
