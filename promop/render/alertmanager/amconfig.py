"""One AlertmanagerConfig -> its part of the Alertmanager configuration (reference §5-§6).

Validation and conversion happen together: the first problem raises Reject
with a field path, and the caller rejects that object alone. Names are
prefixed `<ns>/<name>/`; the top-level route gets `continue: true` and, per
`alertmanagerConfigMatcherStrategy`, a namespace matcher; inhibit rules get the
same namespace enforcement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from promop.render.alertmanager.common import AMScope, Reject, Version, normalise_duration, prefixed
from promop.render.alertmanager.matchers import convert_matchers, matcher_string
from promop.render.alertmanager.receivers import ReceiverContext, convert_receiver
from promop.render.alertmanager.sanitize import Sanitizer
from promop.render.alertmanager.time_intervals import convert_crd_interval
from promop.render.model import obj_meta

STRATEGIES = ("OnNamespace", "OnNamespaceExceptForAlertmanagerNamespace", "None")
_ROUTE_KEYS = frozenset({"receiver", "groupBy", "groupWait", "groupInterval", "repeatInterval", "matchers",
                         "continue", "routes", "muteTimeIntervals", "activeTimeIntervals"})
_SPEC_KEYS = frozenset({"route", "receivers", "inhibitRules", "muteTimeIntervals"})


@dataclass
class Fragment:
    """What one AlertmanagerConfig adds to the configuration."""

    namespace: str
    name: str
    route: dict | None = None
    receivers: list[dict] = field(default_factory=list)
    inhibit_rules: list[dict] = field(default_factory=list)
    mute_time_intervals: list[dict] = field(default_factory=list)
    assets: dict[str, str] = field(default_factory=dict)


def _route(scope: AMScope, route: Any, fld: str, receivers: set[str], intervals: set[str], top: bool) -> dict:
    if not isinstance(route, Mapping):
        raise Reject(fld, "a route must be a mapping")
    if not top and not _ROUTE_KEYS.issuperset(route):
        unknown = sorted(set(route) - _ROUTE_KEYS)
        if unknown:
            raise Reject(f"{fld}.{unknown[0]}", f"unknown route field; known: {', '.join(sorted(_ROUTE_KEYS))}")
    ns, name = scope.namespace, scope.name
    out: dict = {}
    receiver = route.get("receiver") or ""
    if top and not receiver:
        raise Reject(f"{fld}.receiver", "the top-level route needs a receiver")
    if receiver:
        if receiver not in receivers:
            raise Reject(f"{fld}.receiver", f"receiver {receiver!r} is not defined in spec.receivers")
        out["receiver"] = prefixed(ns, name, receiver)
    group_by = route.get("groupBy")
    if group_by:
        if len(set(group_by)) != len(group_by):
            raise Reject(f"{fld}.groupBy", "duplicate label names")
        if "..." in group_by and len(group_by) > 1:
            raise Reject(f"{fld}.groupBy", "'...' must be the only element to group by all labels")
        out["group_by"] = list(group_by)
    for crd, am in (("groupWait", "group_wait"), ("groupInterval", "group_interval"), ("repeatInterval", "repeat_interval")):
        if route.get(crd):
            out[am] = normalise_duration(route[crd], f"{fld}.{crd}")
    out.update(convert_matchers(route.get("matchers"), f"{fld}.matchers", scope.version))
    if route.get("continue"):
        out["continue"] = True
    children = route.get("routes")
    if children:
        if not isinstance(children, list):
            raise Reject(f"{fld}.routes", "must be a list of routes")
        out["routes"] = [_route(scope, c, f"{fld}.routes[{i}]", receivers, intervals, False) for i, c in enumerate(children)]
    for crd, am in (("muteTimeIntervals", "mute_time_intervals"), ("activeTimeIntervals", "active_time_intervals")):
        names = route.get(crd)
        if names:
            for i, n in enumerate(names):
                if n not in intervals:
                    raise Reject(f"{fld}.{crd}[{i}]", f"time interval {n!r} is not defined in spec.muteTimeIntervals")
            out[am] = [prefixed(ns, name, n) for n in names]
    return out


def _inhibit_rule(scope: AMScope, rule: Any, fld: str) -> dict:
    if not isinstance(rule, Mapping):
        raise Reject(fld, "an inhibit rule must be a mapping")
    out: dict = {}
    for crd, prefix in (("targetMatch", "target"), ("sourceMatch", "source")):
        converted = convert_matchers(rule.get(crd), f"{fld}.{crd}", scope.version)
        for key, value in converted.items():
            out[f"{prefix}_{key}"] = value
    if rule.get("equal"):
        out["equal"] = list(rule["equal"])
    return out


def _enforce_route(route: dict, namespace: str, version: Version) -> None:
    if version.at_least("0.22.0"):
        route["matchers"] = [*route.get("matchers", []), matcher_string("namespace", "=", namespace)]
    else:
        route["match"] = {**route.get("match", {}), "namespace": namespace}


def _enforce_inhibit(rule: dict, namespace: str, version: Version) -> None:
    for side in ("source", "target"):
        re_map = rule.get(f"{side}_match_re")
        if re_map:
            re_map.pop("namespace", None)
            if not re_map:
                del rule[f"{side}_match_re"]
        if version.at_least("0.22.0"):
            wanted = matcher_string("namespace", "=", namespace)
            current = rule.get(f"{side}_matchers", [])
            if wanted not in [m.replace(" ", "") for m in current]:
                rule[f"{side}_matchers"] = [*current, wanted]
            match = rule.get(f"{side}_match")
            if match:
                match.pop("namespace", None)
                if not match:
                    del rule[f"{side}_match"]
        else:
            rule[f"{side}_match"] = {**rule.get(f"{side}_match", {}), "namespace": namespace}


def convert(
    amc: Mapping[str, Any],
    scope: AMScope,
    ctx: ReceiverContext,
    alertmanager_namespace: str,
    strategy: str = "OnNamespace",
    is_global: bool = False,
) -> Fragment:
    """Validate and convert one AlertmanagerConfig; raises Reject naming the first bad field."""
    ns, name = obj_meta(amc)
    spec = amc.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise Reject("spec", "must be a mapping")
    unknown = sorted(set(spec) - _SPEC_KEYS)
    if unknown:
        raise Reject(f"spec.{unknown[0]}", f"unknown field; known: {', '.join(sorted(_SPEC_KEYS))}")
    frag = Fragment(ns, name)

    receivers = spec.get("receivers") or []
    if not isinstance(receivers, list):
        raise Reject("spec.receivers", "must be a list")
    names: set[str] = set()
    for i, r in enumerate(receivers):
        rname = r.get("name") if isinstance(r, Mapping) else None
        if not rname:
            raise Reject(f"spec.receivers[{i}].name", "every receiver needs a name")
        if rname in names:
            raise Reject(f"spec.receivers[{i}].name", f"duplicate receiver name {rname!r}")
        names.add(rname)

    intervals: set[str] = set()
    mtis = spec.get("muteTimeIntervals") or []
    converted_intervals = []
    for i, mti in enumerate(mtis):
        fld = f"spec.muteTimeIntervals[{i}]"
        if not isinstance(mti, Mapping) or not mti.get("name"):
            raise Reject(f"{fld}.name", "every time interval needs a name")
        if mti["name"] in intervals:
            raise Reject(f"{fld}.name", f"duplicate time interval name {mti['name']!r}")
        intervals.add(mti["name"])
        converted_intervals.append({
            "name": prefixed(ns, name, mti["name"]),
            "time_intervals": [convert_crd_interval(ti, f"{fld}.timeIntervals[{j}]")
                               for j, ti in enumerate(mti.get("timeIntervals") or [])],
        })

    for i, rule in enumerate(spec.get("inhibitRules") or []):
        converted = _inhibit_rule(scope, rule, f"spec.inhibitRules[{i}]")
        if not is_global and _enforced(strategy, ns, alertmanager_namespace):
            _enforce_inhibit(converted, ns, scope.version)
        frag.inhibit_rules.append(converted)

    # Receivers are checked even without a route (upstream's selection does), but only used with one.
    converted_receivers = [convert_receiver(scope, r, f"spec.receivers[{i}]", prefixed(ns, name, r["name"]), ctx)
                           for i, r in enumerate(receivers)]
    route = spec.get("route")
    if route is not None:
        frag.route = _route(scope, route, "spec.route", names, intervals, True)
        if not is_global:
            frag.route["continue"] = True
            if _enforced(strategy, ns, alertmanager_namespace):
                _enforce_route(frag.route, ns, scope.version)
        frag.receivers = converted_receivers
        frag.mute_time_intervals = converted_intervals
    frag.assets = dict(scope.assets)
    return frag


def _enforced(strategy: str, namespace: str, alertmanager_namespace: str) -> bool:
    if strategy == "None":
        return False
    if strategy == "OnNamespaceExceptForAlertmanagerNamespace":
        return namespace != alertmanager_namespace
    return True


def sanitize_fragment(frag: Fragment, sanitizer: Sanitizer) -> None:
    """Version gates on one fragment, in place; errors raise the sanitizer's error type."""
    if frag.route is not None:
        sanitizer.route(frag.route, "spec.route")
    for i, rule in enumerate(frag.inhibit_rules):
        sanitizer.inhibit_rule(rule, f"spec.inhibitRules[{i}]")
    for i, receiver in enumerate(frag.receivers):
        sanitizer.receiver(receiver, f"spec.receivers[{i}]")
    if frag.mute_time_intervals and not sanitizer.version.at_least("0.22.0"):
        sanitizer.warn("spec.muteTimeIntervals", f"dropped: needs Alertmanager >= v0.22.0, but spec.version is {sanitizer.version}")
        frag.mute_time_intervals = []
    for i, entry in enumerate(frag.mute_time_intervals):
        sanitizer.time_intervals(entry, f"spec.muteTimeIntervals[{i}]")
