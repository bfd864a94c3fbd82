"""AlertmanagerConfig v1alpha1 <-> v1beta1, as upstream's conversion webhook (`/convert`).

The two versions differ in three places (compare their schemas in upstream's
`-full` CRD): v1alpha1 `spec.muteTimeIntervals` is v1beta1 `spec.timeIntervals`;
v1alpha1 matchers (route, child routes, inhibit rules) may say `regex: true`
where v1beta1 only has `matchType`; and v1beta1's Secret key selectors have no
`optional` (nor opsgenie `updateAlerts`). Everything else is copied unchanged.
Pure functions on plain dicts: the sandbox-free core of the webhook.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

GROUP = "monitoring.coreos.com"
KIND = "AlertmanagerConfig"
VERSIONS = ("v1alpha1", "v1beta1")


class ConversionError(ValueError):
    """An object that cannot be converted (wrong kind or version); the message says which."""


def _matcher_to_beta(m: Any) -> Any:
    if not isinstance(m, Mapping):
        return m
    out = {k: v for k, v in m.items() if k != "regex"}
    if not out.get("matchType"):
        out["matchType"] = "=~" if m.get("regex") else "="
    return out


def _matcher_to_alpha(m: Any) -> Any:
    return dict(m) if isinstance(m, Mapping) else m


def _route(route: Any, matcher) -> Any:
    if not isinstance(route, Mapping):
        return route
    out = dict(route)
    if isinstance(route.get("matchers"), list):
        out["matchers"] = [matcher(m) for m in route["matchers"]]
    if isinstance(route.get("routes"), list):
        out["routes"] = [_route(r, matcher) for r in route["routes"]]
    return out


def _inhibit(rule: Any, matcher) -> Any:
    if not isinstance(rule, Mapping):
        return rule
    out = dict(rule)
    for key in ("sourceMatch", "targetMatch"):
        if isinstance(rule.get(key), list):
            out[key] = [matcher(m) for m in rule[key]]
    return out


# Receiver fields that are v1.SecretKeySelector in v1alpha1 but SecretKeySelector (no `optional`) in v1beta1.
_BETA_SELECTORS = frozenset(("apiKey", "routingKey", "serviceKey", "token", "userKey", "apiURL", "botToken",
                             "urlSecret", "apiSecret", "authPassword", "authSecret", "bearerTokenSecret"))


def _drop_optional(value: Any) -> Any:
    """Remove `optional` from the selectors v1beta1 declares without it (anywhere in a receiver)."""
    if isinstance(value, list):
        return [_drop_optional(v) for v in value]
    if not isinstance(value, Mapping):
        return value
    out = {}
    for k, v in value.items():
        if k in _BETA_SELECTORS and isinstance(v, Mapping):
            v = {sk: sv for sk, sv in v.items() if sk != "optional"}
        out[k] = _drop_optional(v)
    return out


def _receivers_to_beta(receivers: Any) -> Any:
    if not isinstance(receivers, list):
        return receivers
    out = []
    for r in receivers:
        r = _drop_optional(r)
        if isinstance(r, Mapping) and isinstance(r.get("opsgenieConfigs"), list):
            r = dict(r)
            r["opsgenieConfigs"] = [{k: v for k, v in c.items() if k != "updateAlerts"} if isinstance(c, Mapping)
                                    else c for c in r["opsgenieConfigs"]]
        out.append(r)
    return out


def spec_to_beta(spec: Mapping[str, Any]) -> dict:
    out = {k: copy.deepcopy(v) for k, v in spec.items() if k != "muteTimeIntervals"}
    if "muteTimeIntervals" in spec:
        out["timeIntervals"] = copy.deepcopy(spec["muteTimeIntervals"])
    if "route" in spec:
        out["route"] = _route(spec["route"], _matcher_to_beta)
    if isinstance(spec.get("inhibitRules"), list):
        out["inhibitRules"] = [_inhibit(r, _matcher_to_beta) for r in spec["inhibitRules"]]
    if "receivers" in spec:
        out["receivers"] = _receivers_to_beta(spec["receivers"])
    return out


def spec_to_alpha(spec: Mapping[str, Any]) -> dict:
    out = {k: copy.deepcopy(v) for k, v in spec.items() if k != "timeIntervals"}
    if "timeIntervals" in spec:
        out["muteTimeIntervals"] = copy.deepcopy(spec["timeIntervals"])
    if "route" in spec:
        out["route"] = _route(spec["route"], _matcher_to_alpha)
    if isinstance(spec.get("inhibitRules"), list):
        out["inhibitRules"] = [_inhibit(r, _matcher_to_alpha) for r in spec["inhibitRules"]]
    return out


def version_of(api_version: Any) -> str:
    group, _, version = str(api_version or "").rpartition("/")
    if group != GROUP or version not in VERSIONS:
        raise ConversionError(f"apiVersion {api_version!r} is not {GROUP}/v1alpha1 or {GROUP}/v1beta1")
    return version


def convert(obj: Mapping[str, Any], desired_api_version: str) -> dict:
    """`obj` (an AlertmanagerConfig of either version) as `desired_api_version`."""
    if obj.get("kind") != KIND:
        raise ConversionError(f"kind {obj.get('kind')!r} cannot be converted: only {KIND}")
    source, target = version_of(obj.get("apiVersion")), version_of(desired_api_version)
    out = {k: copy.deepcopy(v) for k, v in obj.items() if k != "spec"}
    out["apiVersion"] = f"{GROUP}/{target}"
    spec = obj.get("spec")
    if isinstance(spec, Mapping) and source != target:
        out["spec"] = spec_to_beta(spec) if target == "v1beta1" else spec_to_alpha(spec)
    elif spec is not None:
        out["spec"] = copy.deepcopy(spec)
    return out


def review(body: Mapping[str, Any]) -> dict:
    """A ConversionReview (apiextensions.k8s.io/v1) answered: every object converted, or a Failure."""
    request = body.get("request") if isinstance(body, Mapping) else None
    if not isinstance(request, Mapping):
        raise ConversionError("the body is not a ConversionReview: it has no request")
    response: dict[str, Any] = {"uid": request.get("uid", "")}
    try:
        objects = request.get("objects") or []
        response["convertedObjects"] = [convert(o, request.get("desiredAPIVersion", "")) for o in objects]
        response["result"] = {"status": "Success"}
    except (ConversionError, AttributeError) as exc:
        response["convertedObjects"] = []
        response["result"] = {"status": "Failure", "message": f"conversion failed: {exc}"}
    return {"apiVersion": body.get("apiVersion", "apiextensions.k8s.io/v1"), "kind": "ConversionReview",
            "response": response}
