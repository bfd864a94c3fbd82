"""AlertmanagerConfig matchers -> Alertmanager `matchers` strings (>= 0.22) or `match`/`match_re` maps."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from promop.goregex import alertmanager_regex_error
from promop.render.alertmanager.common import Reject, Version

MATCH_TYPES = ("=", "!=", "=~", "!~")


@lru_cache(maxsize=4096)
def _regex_problem(value: str) -> str | None:
    """Go's error for the anchored matcher regex, memoised: the same matcher regexes recur across AlertmanagerConfigs."""
    return alertmanager_regex_error(value)


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


_V2_MEMO: dict[tuple, str] = {}  # (name, value, matchType, regex) -> matcher string; only valid matchers


def _memo_key(m: Any) -> tuple | None:
    try:
        key = (m["name"], m["value"], m.get("matchType"), m.get("regex"))
        hash(key)
        return key
    except (KeyError, TypeError, AttributeError):  # not a mapping, a field missing or unhashable: not memoised
        return None


def _v2_string(m: Any, field: str) -> str:
    """check_matcher + matcher_string, remembered by the matcher's fields: the same few matchers recur in
    every route of every AlertmanagerConfig. An invalid matcher is never remembered (it raises each time)."""
    text = matcher_string(*check_matcher(m, field))
    key = _memo_key(m)
    if key is not None:
        if len(_V2_MEMO) >= 16384:
            _V2_MEMO.clear()
        _V2_MEMO[key] = text
    return text


def convert_matchers(matchers: Any, field: str, version: Version) -> dict:
    """{"matchers": [...]} for >= 0.22, else {"match": {...}, "match_re": {...}} (empty parts dropped)."""
    if matchers is None:
        return {}
    if not isinstance(matchers, list):
        raise Reject(field, "must be a list of matchers")
    if version.at_least("0.22.0"):
        memo = _V2_MEMO
        strings: list[str] = []
        for i, m in enumerate(matchers):  # the field path is only built when a matcher is checked
            hit = memo.get(_memo_key(m))  # type: ignore[arg-type]
            strings.append(hit if hit is not None else _v2_string(m, f"{field}[{i}]"))
        return {"matchers": strings} if strings else {}
    match: dict[str, str] = {}
    match_re: dict[str, str] = {}
    for i, m in enumerate(matchers):
        name, op, value = check_matcher(m, f"{field}[{i}]")
        if m.get("matchType"):
            raise Reject(f"{field}[{i}].matchType", f"matchType needs Alertmanager >= v0.22.0, but spec.version is {version}; "
                                                   "use regex: true/false or upgrade")
        (match_re if op == "=~" else match)[name] = value
    out: dict = {}
    if match:
        out["match"] = match
    if match_re:
        out["match_re"] = match_re
    return out
