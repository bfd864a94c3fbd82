"""matchConditions and reinvocationPolicy of the sandbox's admission chain, as kube-apiserver: a false
condition skips the webhook, an evaluation error follows failurePolicy (Fail: 403), the configuration's
conditions are validated (422), and an IfNeeded mutating webhook is called once more when a later
webhook changed the object (promop/sandbox/admission.py, match_conditions.py)."""

from __future__ import annotations

import base64
import json

import pytest

from promop.sandbox.errors import ApiError

from .test_sandbox_admission_chain import Scripted, _cm

GROUP = "admissionregistration.k8s.io"
RULES = [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]


def webhook(hook: Scripted, name: str, **fields) -> dict:
    return {"name": name, "clientConfig": {"url": hook.url, "caBundle": hook.bundle}, "rules": RULES,
            "sideEffects": "None", "admissionReviewVersions": ["v1"], **fields}


def register(sandbox, *webhooks: dict, kind: str = "ValidatingWebhookConfiguration", name: str = "cfg") -> dict:
    rt = sandbox.registry.lookup(GROUP, "v1", kind.lower() + "s")
    return sandbox.api.create(rt, "", {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name},
                                       "webhooks": list(webhooks)})


def update_cm(sandbox, name: str = "c", **data) -> dict:
    rt = sandbox.registry.lookup("", "v1", "configmaps")
    current = sandbox.api.get(rt, "default", name)
    return sandbox.api.update(rt, "default", name, dict(current, data=data))


def conditions(*pairs: tuple[str, str]) -> list[dict]:
    return [{"name": n, "expression": e} for n, e in pairs]


@pytest.fixture
def hook(tmp_path):
    s = Scripted(tmp_path / "one")
    yield s
    s.stop()


@pytest.fixture
def other(tmp_path):
    s = Scripted(tmp_path / "two")
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _dirs(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()


# -- matchConditions ------------------------------------------------------------------------------------------

def test_the_webhook_is_called_only_when_every_condition_is_true(sandbox, hook):
    register(sandbox, webhook(hook, "check.example.com", matchConditions=conditions(
        ("labelled", "has(object.metadata.labels) && 'team' in object.metadata.labels"),
        ("not-kube-system", "request.namespace != 'kube-system'"))))
    hook.answer = lambda r: {"allowed": False, "status": {"message": "no"}}
    _cm(sandbox, "plain")  # the first condition is false: not called
    assert hook.seen == []
    rt = sandbox.registry.lookup("", "v1", "configmaps")
    with pytest.raises(ApiError) as err:
        sandbox.api.create(rt, "default", {"metadata": {"name": "owned", "labels": {"team": "a"}}})
    assert err.value.message == 'admission webhook "check.example.com" denied the request: no'
    assert len(hook.seen) == 1
    sandbox.api.create(rt, "kube-system", {"metadata": {"name": "owned", "labels": {"team": "a"}}})  # second false
    assert len(hook.seen) == 1


def test_a_cluster_scoped_request_has_an_empty_namespace(sandbox, hook):
    rules = [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"]}]
    register(sandbox, webhook(hook, "check.example.com", rules=rules, matchConditions=conditions(
        ("cluster", "request.namespace == '' && request.subResource == ''"))))
    sandbox.api.create(sandbox.registry.lookup("", "v1", "namespaces"), "", {"metadata": {"name": "fresh"}})
    assert len(hook.seen) == 1 and "namespace" not in hook.seen[0]["request"]


def test_conditions_see_the_old_object_and_the_request(sandbox, hook):
    register(sandbox, webhook(hook, "check.example.com", matchConditions=conditions(
        ("update", "request.operation == 'UPDATE'"),
        ("changed-a", "oldObject.data.a != object.data.a"),
        ("kind", "request.kind.kind == 'ConfigMap' && request.resource.resource == 'configmaps'"))))
    _cm(sandbox, "c", a="1")  # CREATE: not called (and oldObject is null there)
    update_cm(sandbox, "c", a="1", b="2")  # a unchanged: not called
    assert hook.seen == []
    update_cm(sandbox, "c", a="2")
    assert [r["request"]["operation"] for r in hook.seen] == ["UPDATE"]


def test_a_false_condition_skips_the_webhook_even_beside_an_error(sandbox, hook):
    register(sandbox, webhook(hook, "check.example.com", failurePolicy="Fail", matchConditions=conditions(
        ("broken", "object.data.missing == 'x'"), ("no", "false"))))
    _cm(sandbox, a="1")
    assert hook.seen == []


def test_an_evaluation_error_with_fail_is_403_and_with_ignore_skips(sandbox, hook):
    register(sandbox, webhook(hook, "check.example.com", matchConditions=conditions(
        ("broken", "object.data.missing == 'x'"), ("yes", "true"))))
    with pytest.raises(ApiError) as err:
        _cm(sandbox, "c", a="1")
    assert (err.value.code, err.value.reason) == (403, "Forbidden")
    assert err.value.message == ('configmaps "c" is forbidden: expression \'object.data.missing == \'x\'\' '
                                 "resulted in error: no such key: missing")
    assert hook.seen == []
    rt = sandbox.registry.lookup(GROUP, "v1", "validatingwebhookconfigurations")
    sandbox.api.delete(rt, "", "cfg", {})
    register(sandbox, webhook(hook, "check.example.com", failurePolicy="Ignore", matchConditions=conditions(
        ("broken", "object.data.missing == 'x'"))))
    assert _cm(sandbox, "c", a="1")["data"] == {"a": "1"} and hook.seen == []


def test_several_errors_are_listed_and_a_non_bool_is_an_error(sandbox, hook):
    register(sandbox, webhook(hook, "check.example.com", matchConditions=conditions(
        ("one", "object.data.x == 'y'"), ("two", "'text'"))))
    with pytest.raises(ApiError) as err:
        _cm(sandbox, "c", a="1")
    assert err.value.code == 403 and err.value.message.startswith('configmaps "c" is forbidden: [expression')
    assert "expression ''text'' resulted in error" in err.value.message and hook.seen == []


def test_conditions_on_a_mutating_webhook(sandbox, hook):
    ops = [{"op": "add", "path": "/data/added", "value": "yes"}]
    hook.answer = lambda r: {"allowed": True, "patchType": "JSONPatch",
                             "patch": base64.b64encode(json.dumps(ops).encode()).decode()}
    register(sandbox, webhook(hook, "mutate.example.com", matchConditions=conditions(
        ("wants", "has(object.data) && object.data.wants == 'it'"))), kind="MutatingWebhookConfiguration")
    assert _cm(sandbox, "a", wants="not")["data"] == {"wants": "not"}
    assert _cm(sandbox, "b", wants="it")["data"] == {"wants": "it", "added": "yes"}


def test_a_condition_the_sandbox_cannot_evaluate_is_a_500_saying_so(sandbox, hook):
    register(sandbox, webhook(hook, "check.example.com", failurePolicy="Ignore", matchConditions=conditions(
        ("may", "authorizer.group('').resource('configmaps').check('create').allowed()"))))
    with pytest.raises(ApiError) as err:
        _cm(sandbox)
    assert err.value.code == 500 and "the sandbox cannot evaluate a matchCondition" in err.value.message
    assert "authorizer" in err.value.message or "allowed" in err.value.message
    assert hook.seen == []


@pytest.mark.parametrize("bad, cause", [
    (conditions(*[(f"c{i}", "true") for i in range(65)]),
     "webhooks[0].matchConditions: Too many: 65: must have at most 64 items"),
    (conditions(("same", "true"), ("same", "true")), 'webhooks[0].matchConditions[1].name: Duplicate value: "same"'),
    (conditions(("syntax", "object.data ==")), 'webhooks[0].matchConditions[0].expression: Invalid value: '
                                                '"object.data ==": compilation failed:'),
    ([{"expression": "true"}], "webhooks[0].matchConditions[0].name: Required value"),
    ([{"name": "empty", "expression": "  "}], "webhooks[0].matchConditions[0].expression: Required value"),
    (conditions(("not a name!", "true")), 'webhooks[0].matchConditions[0].name: Invalid value: "not a name!"'),
])
def test_bad_conditions_are_refused(sandbox, hook, bad, cause):
    with pytest.raises(ApiError) as err:
        register(sandbox, webhook(hook, "check.example.com", matchConditions=bad))
    assert err.value.code == 422 and cause in err.value.message, err.value.message


def test_sixty_four_conditions_are_fine(sandbox, hook):
    register(sandbox, webhook(hook, "check.example.com",
                              matchConditions=conditions(*[(f"c{i}", "true") for i in range(64)])))
    _cm(sandbox)
    assert len(hook.seen) == 1


# -- reinvocationPolicy ---------------------------------------------------------------------------------------

def adds(key: str, value_of=lambda request: "set"):
    """A mutating answer adding data[key] (when missing) with `value_of(request)`."""
    def answer(request):
        if key in (request["object"].get("data") or {}):
            return {"allowed": True}
        ops = [{"op": "add", "path": f"/data/{key}", "value": value_of(request)}]
        return {"allowed": True, "patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(ops).encode()).decode()}
    return answer


def test_if_needed_is_called_again_after_a_later_webhook_changed_the_object(sandbox, hook, other):
    hook.answer = adds("first", lambda r: "saw-second" if "second" in r["object"]["data"] else "alone")
    other.answer = adds("second")
    register(sandbox, webhook(hook, "a.example.com", reinvocationPolicy="IfNeeded"),
             webhook(other, "b.example.com", reinvocationPolicy="IfNeeded"), kind="MutatingWebhookConfiguration")
    stored = _cm(sandbox, x="1")
    assert stored["data"] == {"x": "1", "first": "alone", "second": "set"}
    assert len(hook.seen) == 2 and "second" in hook.seen[1]["request"]["object"]["data"]
    assert len(other.seen) == 1  # its own change does not call it again


def test_never_is_not_called_again(sandbox, hook, other):
    hook.answer = adds("first")
    other.answer = adds("second")
    register(sandbox, webhook(hook, "a.example.com"), webhook(other, "b.example.com"),
             kind="MutatingWebhookConfiguration")
    sandbox.api.begin_request()
    assert _cm(sandbox)["data"] == {"first": "set", "second": "set"}
    assert (len(hook.seen), len(other.seen)) == (1, 1)
    rt = sandbox.registry.lookup(GROUP, "v1", "mutatingwebhookconfigurations")
    assert [h["reinvocationPolicy"] for h in sandbox.api.get(rt, "", "cfg")["webhooks"]] == ["Never", "Never"]


def test_no_change_no_reinvocation_and_only_one_extra_round(sandbox, hook, other):
    calls = []
    hook.answer = lambda r: (calls.append(1), adds(f"n{len(calls)}")(r))[1]  # changes the object every time
    other.answer = lambda r: {"allowed": True}  # never changes it
    register(sandbox, webhook(hook, "a.example.com", reinvocationPolicy="IfNeeded"),
             webhook(other, "b.example.com", reinvocationPolicy="IfNeeded"), kind="MutatingWebhookConfiguration")
    assert _cm(sandbox)["data"] == {"n1": "set"}
    assert (len(hook.seen), len(other.seen)) == (1, 1)  # b changed nothing: nobody is called again
    # now b changes the object: a is called again (and changes it again), but there is no third round
    other.answer = adds("b")
    assert _cm(sandbox, "d")["data"] == {"n2": "set", "b": "set", "n3": "set"}
    assert (len(hook.seen), len(other.seen)) == (3, 2)


def test_a_webhook_skipped_in_the_first_round_is_not_called_on_reinvocation(sandbox, hook, other):
    hook.answer = adds("first")
    other.answer = adds("trigger")
    register(sandbox, webhook(hook, "a.example.com", reinvocationPolicy="IfNeeded", matchConditions=conditions(
        ("triggered", "has(object.data) && 'trigger' in object.data"))),
        webhook(other, "b.example.com"), kind="MutatingWebhookConfiguration")
    assert _cm(sandbox, x="1")["data"] == {"x": "1", "trigger": "set"}
    assert hook.seen == []


def test_a_bad_reinvocation_policy_is_refused(sandbox, hook):
    with pytest.raises(ApiError) as err:
        register(sandbox, webhook(hook, "a.example.com", reinvocationPolicy="Always"),
                 kind="MutatingWebhookConfiguration")
    assert err.value.code == 422
    assert 'webhooks[0].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"' \
        in err.value.message
