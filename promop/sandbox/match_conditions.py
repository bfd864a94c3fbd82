"""Admission webhooks' `matchConditions`: CEL expressions that decide whether a webhook is called.

As kube-apiserver (apiserver/pkg/admission/plugin/webhook/matchconditions): each condition is a
CEL expression over `object`, `oldObject` (null on CREATE) and `request` (the AdmissionRequest
without its objects), evaluated after the rules and selectors matched:

- any condition false: the webhook is skipped (whatever the others gave);
- none false but some failed to evaluate (or gave no bool): `failurePolicy` decides; Fail
  refuses the request with 403 Forbidden (`configmaps "c" is forbidden: expression '...'
  resulted in error: ...`, several in brackets), Ignore skips the webhook;
- all true: the webhook is called.

On the configuration: at most 64 conditions, each with a qualified `name` (unique within the
webhook) and an `expression` that compiles (else 422 `compilation failed: ...`).

Not simulated: the `authorizer` variable and other CEL libraries promop does not provide: a
condition using them is answered 500 saying so (the sandbox never guesses their value), and
no compile-time type checking beyond syntax (a non-bool result is an evaluation error).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from promop.sandbox.errors import ApiError
from promop.sandbox.validation import qualified_key_problem
from promop.schema.cel import EvalError, Unsupported, compile_error, compile_rule

MAX_CONDITIONS = 64
REQUEST_FIELDS = ("uid", "kind", "resource", "subResource", "requestKind", "requestResource",
                  "requestSubResource", "name", "namespace", "operation", "userInfo", "dryRun", "options")


def validate(conditions: Any, at: str) -> list[tuple[str, str]]:
    """The configuration's causes for one webhook's matchConditions (validateMatchConditions)."""
    if conditions is None:
        return []
    if not isinstance(conditions, list):
        return [(at, "Invalid value: must be a list")]
    out: list[tuple[str, str]] = []
    if len(conditions) > MAX_CONDITIONS:
        out.append((at, f"Too many: {len(conditions)}: must have at most {MAX_CONDITIONS} items"))
    names: set[str] = set()
    for i, condition in enumerate(conditions):
        here = f"{at}[{i}]"
        condition = condition if isinstance(condition, Mapping) else {}
        expression = str(condition.get("expression") or "").strip()
        if not expression:
            out.append((f"{here}.expression", "Required value"))
        else:
            error = compile_error(expression)
            if error:
                out.append((f"{here}.expression",
                            f"Invalid value: {json.dumps(expression)}: compilation failed: {error}"))
        name = condition.get("name") or ""
        if not name:
            out.append((f"{here}.name", "Required value"))
        else:
            problem = qualified_key_problem(str(name))
            if problem:
                out.append((f"{here}.name", f"Invalid value: {json.dumps(name)}: {problem}"))
            if name in names:
                out.append((f"{here}.name", f"Duplicate value: {json.dumps(name)}"))
            names.add(name)
    return out


def variables(request: Mapping[str, Any]) -> dict[str, Any]:
    """What the expressions see of an AdmissionRequest."""
    fields = {"name": "", "namespace": "", "subResource": "", "requestSubResource": ""}  # unset: empty, as in CEL
    fields.update((k, request[k]) for k in REQUEST_FIELDS if k in request)
    return {"object": request.get("object"), "oldObject": request.get("oldObject"), "request": fields}


def _evaluate(expression: str, bound: dict[str, Any], hook_name: str) -> bool:
    """The condition's bool; EvalError when it fails or gives something else."""
    try:
        rule = compile_rule(expression)
    except Unsupported as exc:
        raise ApiError(500, f'the sandbox cannot evaluate a matchCondition of webhook "{hook_name}": '
                            f"{exc} (kube-apiserver can; test this on a cluster)", reason="InternalError") from None
    result = rule.evaluate_with(bound)
    if not isinstance(result, bool):
        raise EvalError(f"expected a bool, got {type(result).__name__}")
    return result


def should_call(hook: Mapping[str, Any], request: Mapping[str, Any], resource: str) -> bool:
    """Whether the webhook is called for this request (True without conditions); 403 when an
    evaluation failed and failurePolicy is Fail. `resource` is the group-qualified plural."""
    conditions = hook.get("matchConditions") or []
    if not conditions:
        return True
    bound = variables(request)
    errors = []
    for condition in conditions:
        expression = str(condition.get("expression") or "").strip()
        try:
            if not _evaluate(expression, bound, str(hook.get("name", ""))):
                return False
        except EvalError as exc:
            errors.append(f"expression '{expression}' resulted in error: {exc}")
    if not errors:
        return True
    if (hook.get("failurePolicy") or "Fail") == "Ignore":
        return False
    text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    name = request.get("name") or ""
    message = f'{resource} "{name}" is forbidden: {text}' if name else f"{resource} is forbidden: {text}"
    plural, _, group = resource.partition(".")
    raise ApiError(403, message, reason="Forbidden", details={"name": name, "group": group, "kind": plural})
