"""Relabel configs: CRD (camelCase) to Prometheus (snake_case), validation, and generated rules.

Validation mirrors Prometheus's own `relabel.Config.Validate` plus the
operator's version checks, so a monitor whose relabelings Prometheus would
refuse is rejected on its own instead of breaking the whole config.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from promop.goregex import prometheus_regex_error
from promop.render.versions import Version

ACTIONS = (
    "replace", "keep", "drop", "hashmod", "labelmap", "labeldrop", "labelkeep",
    "lowercase", "uppercase", "keepequal", "dropequal",
)
_ACTION_MIN_VERSION = {"lowercase": "2.36.0", "uppercase": "2.36.0", "keepequal": "2.41.0", "dropequal": "2.41.0"}
_NEEDS_TARGET = {"replace", "hashmod", "lowercase", "uppercase", "keepequal", "dropequal"}
_TARGET_TEMPLATE = {"replace", "lowercase", "uppercase", "keepequal", "dropequal"}
_NO_REPLACEMENT = {"lowercase", "uppercase", "keepequal", "dropequal"}
_RELABEL_TARGET = re.compile(r"^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$", re.ASCII)
_LEGACY_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_SANITIZE = re.compile(r"[^a-zA-Z0-9_]")

DEFAULT_REGEX = "(.*)"
DEFAULT_SEPARATOR = ";"
DEFAULT_REPLACEMENT = "$1"


class RelabelError(ValueError):
    """A relabel config Prometheus would refuse; `field` is relative to the relabel entry."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def sanitize_label_name(name: str) -> str:
    """Replace every character that is not `[a-zA-Z0-9_]` by `_`, as upstream does."""
    return _SANITIZE.sub("_", name)


def valid_label_name(name: object, version: Version) -> bool:
    """Prometheus 2.x wants `[a-zA-Z_][a-zA-Z0-9_]*`; 3.x accepts any non-empty UTF-8."""
    if not isinstance(name, str) or not name:
        return False
    return version.at_least("3.0.0") or bool(_LEGACY_LABEL.match(name))


def to_prometheus(rc: Mapping[str, Any]) -> dict:
    """One CRD RelabelConfig as a Prometheus relabel_config, keys in upstream's order."""
    out: dict = {}
    if rc.get("sourceLabels"):
        out["source_labels"] = list(rc["sourceLabels"])
    if rc.get("separator") is not None:
        out["separator"] = rc["separator"]
    if rc.get("targetLabel"):
        out["target_label"] = rc["targetLabel"]
    if rc.get("regex"):
        out["regex"] = rc["regex"]
    if rc.get("modulus"):
        out["modulus"] = rc["modulus"]
    if rc.get("replacement") is not None:
        out["replacement"] = rc["replacement"]
    if rc.get("action"):
        out["action"] = str(rc["action"]).lower()
    return out


def to_prometheus_list(rcs: Iterable[Mapping[str, Any]] | None) -> list[dict]:
    return [to_prometheus(rc) for rc in rcs or ()]


def checked(rcs: Any, version: Version, field: str) -> list[dict]:
    """Validate CRD relabel configs and convert them; raises Reject naming the first bad entry."""
    from promop.render.store import Reject

    if not isinstance(rcs, list):
        raise Reject(field, "must be a list of relabel configs")
    for j, rc in enumerate(rcs):
        try:
            validate(rc, version)
        except RelabelError as e:
            raise Reject(f"{field}[{j}]" + (f".{e.field}" if e.field else ""), e.message) from None
    return to_prometheus_list(rcs)


def validate(rc: Any, version: Version, snake: bool = False) -> None:
    """Raise RelabelError if Prometheus at `version` would refuse this relabel config.

    `rc` uses CRD field names (sourceLabels, targetLabel), or Prometheus names
    when `snake` is true (for additional configs and already-converted rules).
    """
    names = (
        ("source_labels", "separator", "target_label", "regex", "modulus", "replacement", "action")
        if snake
        else ("sourceLabels", "separator", "targetLabel", "regex", "modulus", "replacement", "action")
    )
    f_src, f_sep, f_target, f_regex, f_mod, f_repl, f_action = names
    if not isinstance(rc, Mapping):
        raise RelabelError("", "a relabel config must be a mapping")
    raw_action = rc.get(f_action) or "replace"
    action = str(raw_action).lower()
    if action not in ACTIONS:
        raise RelabelError(f_action, f"unknown relabel action {raw_action!r}; use one of {', '.join(ACTIONS)}")
    minimum = _ACTION_MIN_VERSION.get(action)
    if minimum and not version.at_least(minimum):
        raise RelabelError(f_action, f"action {action} needs Prometheus >= {minimum}, but spec.version is {version}")
    sources = rc.get(f_src) or []
    if not isinstance(sources, list):
        raise RelabelError(f_src, "must be a list of label names")
    for i, name in enumerate(sources):
        if not valid_label_name(name, version):
            raise RelabelError(f"{f_src}[{i}]", f"{name!r} is not a valid label name for Prometheus {version}")
    regex = rc.get(f_regex)
    if regex is not None:
        if not isinstance(regex, str):
            raise RelabelError(f_regex, f"must be a string, got {regex!r}")
        problem = prometheus_regex_error(regex, angle_named_groups=version.at_least("3.0.0"))
        if problem:
            raise RelabelError(f_regex, f"invalid regex: {problem}; Prometheus uses RE2 syntax, see https://github.com/google/re2/wiki/Syntax")
    target = rc.get(f_target) or ""
    if not isinstance(target, str):
        raise RelabelError(f_target, f"must be a string, got {target!r}")
    modulus = rc.get(f_mod) or 0
    if isinstance(modulus, bool) or not isinstance(modulus, int) or modulus < 0:
        raise RelabelError(f_mod, f"must be a non-negative integer, got {modulus!r}")
    replacement = rc.get(f_repl)
    separator = rc.get(f_sep)
    if action == "hashmod" and not modulus:
        raise RelabelError(f_mod, "action hashmod needs a non-zero modulus")
    if action in _NEEDS_TARGET and not target:
        raise RelabelError(f_target, f"action {action} needs {f_target}")
    legacy = not version.at_least("3.0.0")
    if action in _TARGET_TEMPLATE and legacy and not _RELABEL_TARGET.match(target):
        raise RelabelError(f_target, f"{target!r} is not a valid target label for action {action}")
    if action in _NO_REPLACEMENT and replacement not in (None, DEFAULT_REPLACEMENT):
        raise RelabelError(f_repl, f"action {action} does not take a replacement")
    if action == "labelmap" and replacement is not None and legacy and not _RELABEL_TARGET.match(str(replacement)):
        raise RelabelError(f_repl, f"{replacement!r} is not a valid label name template for action labelmap")
    if action == "hashmod" and not valid_label_name(target, version):
        raise RelabelError(f_target, f"{target!r} is not a valid label name for action hashmod")
    if action in ("keepequal", "dropequal"):
        if (regex not in (None, "", DEFAULT_REGEX) or modulus or separator not in (None, DEFAULT_SEPARATOR)
                or replacement not in (None, DEFAULT_REPLACEMENT)):
            raise RelabelError(
                f_action, f"action {action} takes only {f_src} and {f_target}; remove regex, modulus, separator and replacement"
            )
    if action in ("labeldrop", "labelkeep"):
        if (sources or target or modulus or separator not in (None, DEFAULT_SEPARATOR)
                or replacement not in (None, DEFAULT_REPLACEMENT)):
            raise RelabelError(f_action, f"action {action} takes only a regex; remove the other fields")


def selector_relabels(selector: Mapping[str, Any] | None, meta_prefix: str) -> list[dict]:
    """keep/drop rules reproducing a label selector on `__meta_kubernetes_<kind>_label_*`.

    `meta_prefix` is e.g. `__meta_kubernetes_service` (ServiceMonitor) or
    `__meta_kubernetes_pod` (PodMonitor). Values are not regex-escaped, as upstream.
    """
    out: list[dict] = []
    selector = selector or {}
    labels = selector.get("matchLabels") or {}
    for key in sorted(labels):
        k = sanitize_label_name(key)
        out.append({
            "action": "keep",
            "source_labels": [f"{meta_prefix}_label_{k}", f"{meta_prefix}_labelpresent_{k}"],
            "regex": f"({labels[key]});true",
        })
    for expr in selector.get("matchExpressions") or ():
        k = sanitize_label_name(expr["key"])
        op = expr["operator"]
        if op in ("In", "NotIn"):
            out.append({
                "action": "keep" if op == "In" else "drop",
                "source_labels": [f"{meta_prefix}_label_{k}", f"{meta_prefix}_labelpresent_{k}"],
                "regex": "(%s);true" % "|".join(str(v) for v in expr.get("values") or ()),
            })
        else:
            out.append({
                "action": "keep" if op == "Exists" else "drop",
                "source_labels": [f"{meta_prefix}_labelpresent_{k}"],
                "regex": "true",
            })
    return out


def sharding_relabels(shards: int, retention: bool, topology: Any = None) -> list[dict]:
    """The hashmod rules that spread targets over `shards` (with `$(SHARD)` substituted per pod).

    With upstream's shard-retention policy, targets are first restricted to the
    current shard numbers so that a scaled-down shard keeps nothing new. With an
    active topology strategy (render/topology.Topology), targets are then kept in
    this shard's zone and hash-sharded over the zone's shards (`$(INZONE_SHARD)`).
    """
    rules: list[dict] = []
    if retention:
        rules.append({"target_label": "__tmp_current_shard", "replacement": "$(SHARD)", "action": "replace"})
        rules.append({
            "source_labels": ["__tmp_current_shard"],
            "regex": "|".join(str(i) for i in range(shards)),
            "action": "keep",
        })
    if topology is not None:
        return rules + topology.zone_relabels() + hashmod_relabels(topology.modulus, topology.shard_variable)
    rules.extend(hashmod_relabels(shards))
    return rules


def hashmod_relabels(shards: int, shard_variable: str = "$(SHARD)") -> list[dict]:
    return [
        {
            "source_labels": ["__address__", "__tmp_hash"],
            "target_label": "__tmp_hash",
            "regex": "(.+);",
            "replacement": "$1",
            "action": "replace",
        },
        {"source_labels": ["__tmp_hash"], "target_label": "__tmp_hash", "modulus": shards, "action": "hashmod"},
        {"source_labels": ["__tmp_hash", "__tmp_disable_sharding"], "regex": f"{shard_variable};|.+;.+", "action": "keep"},
    ]
