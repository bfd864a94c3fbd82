"""Admission webhooks, called as kube-apiserver calls them on a create or update.

Mutating webhooks run first (configurations by name, webhooks in order); their
JSONPatch is applied and the object is checked again; then every validating
webhook. What is honoured: `rules` (operations, apiGroups, apiVersions, resources,
scope), `namespaceSelector`, `objectSelector`, `matchConditions` (CEL, see
match_conditions), `clientConfig` (url or service, with caBundle: see webhook_call),
`failurePolicy` (Fail by default), `timeoutSeconds` (10 by default), `sideEffects` on
dry-run requests, `admissionReviewVersions` (v1), warnings, `reinvocationPolicy:
IfNeeded` (a mutating webhook called before a later one changed the object is called
once more, in one extra round, as the apiserver's reinvocation), and the denial
wording: `admission webhook "<name>" denied the request: <message>` with the
webhook's status code (400 when it gives none).
Not simulated: matchPolicy Equivalent (rules must name the version written), DELETE
and CONNECT operations.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import uuid
from collections.abc import Mapping
from typing import Any

import jsonpatch

from promop.labelselector import SelectorError, matches
from promop.sandbox import match_conditions
from promop.sandbox.errors import ApiError
from promop.sandbox.resources import ResourceType
from promop.sandbox.webhook_call import CallError, ServiceAddresses, post

GROUP = "admissionregistration.k8s.io"
VALIDATING = (GROUP, "validatingwebhookconfigurations")
MUTATING = (GROUP, "mutatingwebhookconfigurations")
NAMESPACES = ("", "namespaces")
DEFAULT_TIMEOUT = 10


def _listed(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _resource_matches(resources: Any, plural: str, subresource: str) -> bool:
    wanted = f"{plural}/{subresource}" if subresource else plural
    for r in resources if isinstance(resources, list) else []:
        if r in (wanted, "*/*") or (r == "*" and not subresource) or \
                (subresource and r in (f"{plural}/*", f"*/{subresource}")):
            return True
    return False


def rule_matches(rule: Mapping[str, Any], rt: ResourceType, operation: str, subresource: str = "") -> bool:
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and rt.namespaced or scope == "Namespaced" and not rt.namespaced:
        return False
    return (_listed(rule.get("operations"), operation) and _listed(rule.get("apiGroups"), rt.group)
            and _listed(rule.get("apiVersions"), rt.version)
            and _resource_matches(rule.get("resources"), rt.plural, subresource))


class Webhooks:
    """The sandbox's admission chain; `store` holds the webhook configurations and namespaces."""

    def __init__(self, store, services: ServiceAddresses | None = None) -> None:
        self.store = store
        self.services = services or ServiceAddresses()

    def _configured(self, key: tuple[str, str]) -> list[dict]:
        return sorted(self._all(key), key=lambda c: c["metadata"]["name"])

    def _all(self, key: tuple[str, str]) -> list[dict]:
        return [entry[0] for entry in self.store.items(key, None)]

    def _selected(self, hook: Mapping[str, Any], rt: ResourceType, obj: dict, old: dict | None) -> bool:
        try:
            labels = [((o or {}).get("metadata") or {}).get("labels") or {} for o in (obj, old) if o]
            if hook.get("objectSelector") and not any(matches(hook["objectSelector"], lab) for lab in labels):
                return False
            selector = hook.get("namespaceSelector")
            if not selector:
                return True
            if rt.key == NAMESPACES:
                return any(matches(selector, lab) for lab in labels)
            if not rt.namespaced:
                return True
            ns = self.store.get(NAMESPACES, "", obj["metadata"].get("namespace", ""))
            return matches(selector, ((ns or {}).get("metadata") or {}).get("labels") or {})
        except SelectorError:
            return False  # the configuration's validation refuses such selectors on a real cluster

    def _hooks(self, key: tuple[str, str], rt: ResourceType, operation: str, obj: dict,
               old: dict | None) -> list[tuple[tuple[str, int], dict]]:
        """((configuration name, index), webhook) of those whose rules and selectors match."""
        out = []
        for config in self._configured(key):
            for i, hook in enumerate(config.get("webhooks") or []):
                if any(rule_matches(r, rt, operation) for r in hook.get("rules") or []) and \
                        self._selected(hook, rt, obj, old):
                    out.append(((config["metadata"]["name"], i), hook))
        return out

    @staticmethod
    def _review(rt: ResourceType, operation: str, obj: dict, old: dict | None, dry_run: bool) -> dict:
        meta = obj.get("metadata") or {}
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        gvr = {"group": rt.group, "version": rt.version, "resource": rt.plural}
        request = {"uid": str(uuid.uuid4()), "kind": gvk, "resource": gvr, "requestKind": gvk,
                   "requestResource": gvr, "name": meta.get("name", ""), "operation": operation,
                   "userInfo": {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]},
                   "object": obj, "oldObject": old, "dryRun": dry_run,
                   "options": {"apiVersion": "meta.k8s.io/v1",
                               "kind": "CreateOptions" if operation == "CREATE" else "UpdateOptions"}}
        if rt.namespaced:
            request["namespace"] = meta.get("namespace", "")
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}

    def _call(self, hook: Mapping[str, Any], review: dict) -> dict | None:
        """The webhook's response, or None when it failed and failurePolicy is Ignore."""
        name = hook.get("name", "")
        try:
            if "v1" not in (hook.get("admissionReviewVersions") or []):
                raise CallError("webhook does not accept v1 AdmissionReview")
            timeout = float(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT)
            answer = post(hook.get("clientConfig") or {}, self.services, review, timeout)
            response = answer.get("response") if isinstance(answer, Mapping) else None
            if not isinstance(response, Mapping):
                raise CallError("the response has no response field")
            if response.get("uid") != review["request"]["uid"]:
                raise CallError(f'expected response.uid="{review["request"]["uid"]}", '
                                f'got "{response.get("uid", "")}"')
            return dict(response)
        except CallError as exc:
            if (hook.get("failurePolicy") or "Fail") == "Ignore":
                return None
            raise ApiError(500, f'Internal error occurred: failed calling webhook "{name}": '
                                f"failed to call webhook: {exc}", reason="InternalError",
                           details={"causes": [{"message": f'failed calling webhook "{name}": {exc}'}]}) from None

    @staticmethod
    def _denied(name: str, response: Mapping[str, Any]) -> ApiError:
        status = response.get("status") if isinstance(response.get("status"), Mapping) else {}
        denied = f'admission webhook "{name}" denied the request'
        if status.get("message"):
            message = f"{denied}: {status['message']}"
        elif status.get("reason"):
            message = f"{denied}: {status['reason']}"
        else:
            message = f"{denied} without explanation"
        return ApiError(int(status.get("code") or 400), message, reason=status.get("reason") or "",
                        details=status.get("details"))

    def _dry_run_ok(self, hook: Mapping[str, Any], dry_run: bool) -> None:
        if dry_run and hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise ApiError(400, f'admission webhook "{hook.get("name", "")}" does not support dry run',
                           reason="BadRequest")

    def mutate(self, rt: ResourceType, operation: str, obj: dict, old: dict | None, dry_run: bool,
               warnings: list[str]) -> dict:
        """`obj` after every matching mutating webhook (a new dict when one patched it), and after
        the one reinvocation round of the IfNeeded webhooks a later change concerns."""
        obj, again = self._mutating_round(rt, operation, obj, old, dry_run, warnings, None)
        if again:
            obj, _ = self._mutating_round(rt, operation, obj, old, dry_run, warnings, again)
        return obj

    def _mutating_round(self, rt: ResourceType, operation: str, obj: dict, old: dict | None, dry_run: bool,
                        warnings: list[str], only: set | None) -> tuple[dict, set | None]:
        """One pass (over `only` on the reinvocation); returns the object and, when a webhook
        changed it, the IfNeeded webhooks called before that change (to call again)."""
        invoked: list[tuple[str, int]] = []
        reinvoke: set | None = None
        for key, hook in self._hooks(MUTATING, rt, operation, obj, old):
            if only is not None and key not in only:
                continue  # a reinvocation calls no webhook for the first time
            review = self._review(rt, operation, obj, old, dry_run)
            if not match_conditions.should_call(hook, review["request"], rt.qualified):
                continue
            self._dry_run_ok(hook, dry_run)
            response = self._call(hook, review)
            if response is None:
                continue
            warnings.extend(str(w) for w in response.get("warnings") or [])
            if not response.get("allowed"):
                raise self._denied(hook.get("name", ""), response)
            if response.get("patch"):
                patched = self._patched(hook.get("name", ""), obj, response)
                if patched != obj:
                    reinvoke = (reinvoke or set()) | set(invoked)
                obj = patched
            if hook.get("reinvocationPolicy") == "IfNeeded":
                invoked.append(key)
        return obj, reinvoke

    @staticmethod
    def _patched(name: str, obj: dict, response: Mapping[str, Any]) -> dict:
        if response.get("patchType") != "JSONPatch":
            raise ApiError(500, f'Internal error occurred: admission webhook "{name}" returned a patch with '
                                f'patchType {response.get("patchType")!r}; only "JSONPatch" is supported',
                           reason="InternalError")
        try:
            ops = json.loads(base64.b64decode(response["patch"], validate=True))
            return jsonpatch.apply_patch(copy.deepcopy(obj), ops)
        except (binascii.Error, ValueError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise ApiError(500, f'Internal error occurred: admission webhook "{name}" returned a patch that '
                                f"cannot be applied: {exc}", reason="InternalError") from None

    def validate(self, rt: ResourceType, operation: str, obj: dict, old: dict | None, dry_run: bool,
                 warnings: list[str]) -> None:
        """ApiError from the first validating webhook that refuses `obj`."""
        for _, hook in self._hooks(VALIDATING, rt, operation, obj, old):
            review = self._review(rt, operation, obj, old, dry_run)
            if not match_conditions.should_call(hook, review["request"], rt.qualified):
                continue
            self._dry_run_ok(hook, dry_run)
            response = self._call(hook, review)
            if response is None:
                continue
            warnings.extend(str(w) for w in response.get("warnings") or [])
            if not response.get("allowed"):
                raise self._denied(hook.get("name", ""), response)

    def any_configured(self) -> bool:
        return bool(self._all(VALIDATING) or self._all(MUTATING))


# -- the configurations themselves: defaults and validation as admissionregistration/v1 ----------------------

def _default_configuration(obj: dict, old: dict | None, mutating: bool) -> None:
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", DEFAULT_TIMEOUT)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def _unsupported(value: Any, allowed: tuple[str, ...]) -> str:
    return f"Unsupported value: {json.dumps(value)}: supported values: " + ", ".join(json.dumps(a) for a in allowed)


def _hook_causes(hook: Any, at: str, mutating: bool = False) -> list[tuple[str, str]]:
    if not isinstance(hook, Mapping):
        return [(at, "Invalid value: must be an object")]
    out = []
    name = hook.get("name") or ""
    if len(str(name).split(".")) < 3:
        out.append((f"{at}.name", f"Invalid value: {json.dumps(name)}: should be a domain with at least three "
                                  "segments separated by dots"))
    client = hook.get("clientConfig") or {}
    if bool(client.get("url")) == bool(client.get("service")):
        out.append((f"{at}.clientConfig", "Required value: exactly one of url or service is required"))
    elif client.get("url") and not str(client["url"]).startswith("https://"):
        out.append((f"{at}.clientConfig.url", f"Invalid value: {json.dumps(client['url'])}: 'https' is the only "
                                              "allowed URL scheme"))
    if hook.get("sideEffects") is None:
        out.append((f"{at}.sideEffects", "Required value: must specify one of None, NoneOnDryRun"))
    elif hook["sideEffects"] not in ("None", "NoneOnDryRun"):
        out.append((f"{at}.sideEffects", _unsupported(hook["sideEffects"], ("None", "NoneOnDryRun"))))
    versions = hook.get("admissionReviewVersions")
    if not versions:
        out.append((f"{at}.admissionReviewVersions", "Required value: must specify one of v1, v1beta1"))
    elif not set(versions) & {"v1", "v1beta1"}:
        out.append((f"{at}.admissionReviewVersions", f"Invalid value: {json.dumps(versions)}: must include at "
                                                     "least one of v1, v1beta1"))
    if hook.get("failurePolicy") not in (None, "Fail", "Ignore"):
        out.append((f"{at}.failurePolicy", _unsupported(hook["failurePolicy"], ("Fail", "Ignore"))))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and not (isinstance(timeout, int) and 1 <= timeout <= 30):
        out.append((f"{at}.timeoutSeconds", f"Invalid value: {timeout}: the timeout value must be between 1 and "
                                            "30 seconds"))
    if mutating and hook.get("reinvocationPolicy") not in (None, "Never", "IfNeeded"):
        out.append((f"{at}.reinvocationPolicy", _unsupported(hook["reinvocationPolicy"], ("IfNeeded", "Never"))))
    out += match_conditions.validate(hook.get("matchConditions"), f"{at}.matchConditions")
    return out


def validate_configuration(obj: dict, mutating: bool = False) -> list[tuple[str, str]]:
    """The causes kube-apiserver gives for a bad Validating/MutatingWebhookConfiguration."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, hook in enumerate(obj.get("webhooks") or []):
        out += _hook_causes(hook, f"webhooks[{i}]", mutating)
        name = hook.get("name") if isinstance(hook, Mapping) else None
        if name in seen:
            out.append((f"webhooks[{i}].name", f"Duplicate value: {json.dumps(name)}"))
        seen.add(name)
    return out


def _register_kinds() -> None:
    from promop.sandbox import kinds

    kinds.RULES[VALIDATING] = kinds.KindRules(
        validate_configuration, None, lambda obj, old: _default_configuration(obj, old, mutating=False))
    kinds.RULES[MUTATING] = kinds.KindRules(
        lambda obj: validate_configuration(obj, mutating=True), None, lambda obj, old: _default_configuration(obj, old, mutating=True))


_register_kinds()
