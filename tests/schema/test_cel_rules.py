"""Kubernetes-style `x-kubernetes-validations` rules (from the Kubernetes docs' "Validation rules"
examples and the CEL libraries Kubernetes adds), each with a valid and an invalid value, judged by
offline validation (promop.schema.validate) and by the sandbox's create/update of a custom resource.

Every rule sits on its own property `spec.rNN`; the valid object holds every valid value, and each
invalid object changes one property, so exactly one violation, at that property, must come back."""

from __future__ import annotations

import json
import time

import pytest
import requests

from deadlines import scaled
from promop.sandbox import Sandbox
from promop.schema import cel, validate
from promop.schema.rules import rule_violations, unsupported_rules

OBJ = {"type": "object"}
INT = {"type": "integer"}
STR = {"type": "string"}
NUM = {"type": "number"}
STRS = {"type": "array", "items": STR}
INTS = {"type": "array", "items": INT}


def obj(**props) -> dict:
    return {"type": "object", "properties": props}


# name -> (schema without rules, rule (str or dict), valid value, invalid value, expected message)
# the message is what follows `spec.rNN: ` (or the fieldPath's path) in the apiserver's error
CASES = {
    "r01": (obj(minReplicas=INT, replicas=INT), "self.minReplicas <= self.replicas",
            {"minReplicas": 1, "replicas": 3}, {"minReplicas": 4, "replicas": 3},
            'Invalid value: "object": failed rule: self.minReplicas <= self.replicas'),
    "r02": (obj(ratio=NUM), "self.ratio >= 0.5", {"ratio": 0.5}, {"ratio": 0.25},
            'Invalid value: "object": failed rule: self.ratio >= 0.5'),
    "r03": ({"type": "object", "additionalProperties": STR}, "self.all(k, k.startsWith('x'))",
            {"xa": "1", "xb": "2"}, {"xa": "1", "b": "2"},
            "Invalid value: \"object\": failed rule: self.all(k, k.startsWith('x'))"),
    "r04": (obj(a=STR, b=STR), {"rule": "has(self.a) == has(self.b)", "message": "a and b go together"},
            {"a": "1", "b": "2"}, {"a": "1"}, 'Invalid value: "object": a and b go together'),
    "r05": (obj(list=INTS), "self.list.isSorted()", {"list": [1, 2, 2, 5]}, {"list": [2, 1]},
            'Invalid value: "object": failed rule: self.list.isSorted()'),
    "r06": (obj(mem=STR), "quantity(self.mem).isLessThan(quantity('1Gi'))", {"mem": "1023Mi"},
            {"mem": "1024Mi"}, "Invalid value: \"object\": failed rule: quantity(self.mem).isLessThan(quantity('1Gi'))"),
    "r07": (obj(u=STR), "url(self.u).getScheme() == 'https'", {"u": "https://example.com/x"},
            {"u": "http://example.com/x"}, "Invalid value: \"object\": failed rule: url(self.u).getScheme() == 'https'"),
    "r08": (obj(x=STR), "self.x.matches('^[a-z]+$')", {"x": "abc"}, {"x": "aBc"},
            "Invalid value: \"object\": failed rule: self.x.matches('^[a-z]+$')"),
    "r09": (obj(items=STRS), "self.items.exists_one(i, i == 'primary')", {"items": ["primary", "b"]},
            {"items": ["primary", "primary"]},
            "Invalid value: \"object\": failed rule: self.items.exists_one(i, i == 'primary')"),
    "r10": (obj(names=STRS), "self.names.map(n, n.size()).all(s, s <= 5)", {"names": ["abc", "defgh"]},
            {"names": ["abcdef"]}, 'Invalid value: "object": failed rule: self.names.map(n, n.size()).all(s, s <= 5)'),
    "r11": (obj(ports=INTS), "self.ports.filter(p, p > 1024).size() <= 1", {"ports": [80, 8080]},
            {"ports": [8080, 9090]}, 'Invalid value: "object": failed rule: self.ports.filter(p, p > 1024).size() <= 1'),
    "r12": (STR, "self.charAt(0) == 'a' && self.lowerAscii() == self", "abc", "aBc",
            "Invalid value: \"string\": failed rule: self.charAt(0) == 'a' && self.lowerAscii() == self"),
    "r13": (obj(tags=STRS), "self.tags.join(',').size() <= 10", {"tags": ["ab", "cd"]},
            {"tags": ["abcdef", "ghijkl"]}, "Invalid value: \"object\": failed rule: self.tags.join(',').size() <= 10"),
    "r14": (STR, "self.split(',').all(p, p.trim() != '')", "a, b", "a, ,b",
            "Invalid value: \"string\": failed rule: self.split(',').all(p, p.trim() != '')"),
    "r15": (STR, "self.replace('-', '').upperAscii().substring(0, 2) == 'AB'", "a-bc", "b-ac",
            "Invalid value: \"string\": failed rule: self.replace('-', '').upperAscii().substring(0, 2) == 'AB'"),
    "r16": (INTS, "self.sum() <= 10 && self.min() >= 0 && self.max() < 8", [0, 3, 7], [1, 8],
            'Invalid value: "array": failed rule: self.sum() <= 10 && self.min() >= 0 && self.max() < 8'),
    "r17": (STRS, "self.indexOf('stop') == self.lastIndexOf('stop')", ["go", "stop"], ["stop", "go", "stop"],
            "Invalid value: \"array\": failed rule: self.indexOf('stop') == self.lastIndexOf('stop')"),
    "r18": (STR, "self.find('[0-9]+') != '' && self.findAll('[0-9]').size() <= 2", "ab12", "a1b2c3",
            "Invalid value: \"string\": failed rule: self.find('[0-9]+') != '' && self.findAll('[0-9]').size() <= 2"),
    "r19": (STR, "isQuantity(self) && quantity(self).compareTo(quantity('100m')) >= 0", "0.1", "99m",
            "Invalid value: \"string\": failed rule: isQuantity(self) && quantity(self).compareTo(quantity('100m')) >= 0"),
    "r20": (STR, "url(self).getHostname() != 'localhost' && url(self).getEscapedPath().startsWith('/api')",
            "https://[::1]:8443/api/v1", "https://localhost:8443/api",
            "Invalid value: \"string\": failed rule: url(self).getHostname() != 'localhost' && "
            "url(self).getEscapedPath().startsWith('/api')"),
    "r21": (obj(type=STR, rollingUpdate=OBJ),
            {"rule": "!has(self.rollingUpdate) || self.type == 'RollingUpdate'",
             "messageExpression": "'rollingUpdate needs type RollingUpdate, not ' + self.type",
             "reason": "FieldValueForbidden", "fieldPath": ".type"},
            {"type": "RollingUpdate", "rollingUpdate": {}}, {"type": "OnDelete", "rollingUpdate": {}},
            "Forbidden: rollingUpdate needs type RollingUpdate, not OnDelete"),
    "r22": (obj(a=INT), "quantity('1Gi') == quantity('1024Mi') && self.a == 1", {"a": 1}, {"a": 2},
            "Invalid value: \"object\": failed rule: quantity('1Gi') == quantity('1024Mi') && self.a == 1"),
    "r23": (obj(m=STR), "self.m.size() < 3", {"m": "ab"}, {},  # no such key: an evaluation error
            'Invalid value: "object": no such key: m evaluating rule: self.m.size() < 3'),
}
# transition rules: (schema, rule, old, allowed new value, refused new value, message)
TRANSITIONS = {
    "t1": (STR, {"rule": "self == oldSelf", "message": "Value is immutable"}, "a", "a", "b",
           'Invalid value: "string": Value is immutable'),
    "t2": (INT, "self >= oldSelf", 3, 4, 2, 'Invalid value: "integer": failed rule: self >= oldSelf'),
}


def _with_rule(schema: dict, rule) -> dict:
    return dict(schema, **{"x-kubernetes-validations": [rule if isinstance(rule, dict) else {"rule": rule}]})


def _spec_schema() -> dict:
    props = {name: _with_rule(s, r) for name, (s, r, *_rest) in {**CASES, **TRANSITIONS}.items()}
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}


SCHEMA = _spec_schema()


def _valid_spec() -> dict:
    spec = {name: case[2] for name, case in CASES.items()}
    spec.update({name: case[2] for name, case in TRANSITIONS.items()})
    return spec


def _expected_path(name: str) -> str:
    rule = CASES[name][1]
    field_path = rule.get("fieldPath", "") if isinstance(rule, dict) else ""
    return f"spec.{name}" + field_path


def test_there_are_at_least_23_rules_and_all_are_supported():
    assert len(CASES) + len(TRANSITIONS) >= 23
    assert unsupported_rules(SCHEMA) == []


def test_the_valid_object_passes_offline():
    assert validate({"spec": _valid_spec()}, SCHEMA) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_invalid_value_fails_offline_with_the_apiservers_message(name):
    spec = dict(_valid_spec(), **{name: CASES[name][3]})
    [violation] = validate({"spec": spec}, SCHEMA)
    assert (violation.path, violation.message) == (_expected_path(name), CASES[name][4])


@pytest.mark.parametrize("name", sorted(TRANSITIONS))
def test_transition_rules_offline(name):
    schema, rule, old, allowed, refused, message = TRANSITIONS[name]
    spec = _valid_spec()
    old_obj = {"spec": dict(spec, **{name: old})}
    assert validate({"spec": dict(spec, **{name: refused})}, SCHEMA) == []  # create: no oldSelf
    assert validate({"spec": dict(spec, **{name: allowed})}, SCHEMA, old_obj) == []
    [violation] = validate({"spec": dict(spec, **{name: refused})}, SCHEMA, old_obj)
    assert (violation.path, violation.message) == (f"spec.{name}", message)


def test_transition_rule_without_an_old_value_for_that_field_is_skipped():
    spec = _valid_spec()
    old_obj = {"spec": {k: v for k, v in spec.items() if k != "t1"}}
    assert validate({"spec": dict(spec, t1="b")}, SCHEMA, old_obj) == []


def test_map_list_items_correlate_with_their_old_items_by_key():
    schema = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
              "items": {"type": "object", "properties": {"name": STR, "v": INT},
                        "x-kubernetes-validations": [{"rule": "self.v >= oldSelf.v"}]}}
    old = [{"name": "a", "v": 2}, {"name": "b", "v": 5}]
    assert rule_violations([{"name": "b", "v": 5}, {"name": "a", "v": 3}], schema, old) == []
    [v] = rule_violations([{"name": "b", "v": 5}, {"name": "a", "v": 1}], schema, old)
    assert v.path == "[1]"
    # a set/atomic list does not correlate: no oldSelf, the rule is not checked
    atomic = dict(schema, **{"x-kubernetes-list-type": "atomic"})
    assert rule_violations([{"name": "a", "v": 1}], atomic, old) == []


def test_message_expression_falls_back_to_message_when_it_fails_or_is_empty():
    for expression in ("self.nope", "''", "1"):
        schema = _with_rule(obj(a=INT), {"rule": "self.a > 1", "message": "too small",
                                         "messageExpression": expression})
        [v] = rule_violations({"a": 1}, schema)
        assert v.message == 'Invalid value: "object": too small'


def test_reasons():
    for reason, start in (("FieldValueRequired", "Required value: m"), ("FieldValueDuplicate",
                                                                        'Duplicate value: "object"'),
                          ("FieldValueInvalid", 'Invalid value: "object": m')):
        schema = _with_rule(obj(a=INT), {"rule": "false", "message": "m", "reason": reason})
        [v] = rule_violations({"a": 1}, schema)
        assert v.message == start


def test_root_rules_see_only_name_and_generate_name_of_metadata():
    schema = {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('w') && !has(self.metadata.labels)"}]}
    assert rule_violations({"metadata": {"name": "w1", "labels": {"a": "b"}}}, schema) == []
    assert len(rule_violations({"metadata": {"name": "x1"}}, schema)) == 1


def test_unsupported_functions_are_reported_not_guessed():
    schema = _with_rule(STR, "ip(self).family() == 4")
    assert rule_violations("1.2.3.4", schema) == []
    [line] = unsupported_rules({"type": "object", "properties": {"addr": schema}})
    assert line.startswith("addr: ip(self).family() == 4: ") and "ip" in line.split(": ", 2)[2]


def test_namespaced_libraries_are_unsupported_not_evaluation_errors():
    for rule in ("math.greatest(self, 1) == self", "sets.contains(self, [1])"):
        with pytest.raises(cel.Unsupported):
            cel.compile_rule(rule)


def test_compile_error():
    assert cel.compile_error("self.a == 1") is None
    assert cel.compile_error("self.ratio >= 0.5") is None
    message = cel.compile_error("self.a ==")
    assert message and "Syntax error" in message and "\n" not in message


def test_library_edge_cases():
    def run(expression, value=None):
        return cel.compile_rule(expression).evaluate(value)

    assert run("'hello'.charAt(5)") == "" and run("'hello'.indexOf('l', 3)") == 3
    assert run("'hello'.lastIndexOf('l')") == 3 and run("'a,b,c'.split(',', 2)") == ["a", "b,c"]
    assert run("'hello'.substring(1)") == "ello" and run("['a','b'].join()") == "ab"
    assert run("[].sum()") == 0 and run("[1, 2].indexOf(3)") == -1
    assert run("quantity('1.5').isInteger()") is False and run("quantity('2k').asInteger()") == 2000
    assert run("quantity('1').add(quantity('500m')).sub(2).sign()") == -1
    assert run("url('https://u@example.com:80/a%20b?x=1&x=2').getQuery()") == {"x": ["1", "2"]}
    assert run("url('https://example.com/a%20b').getEscapedPath()") == "/a%20b"
    assert run("isURL('not a url')") is False and run("isQuantity('1Gx')") is False
    for bad in ("'abc'.charAt(4)", "[].min()", "quantity('1.5').asInteger()", "url('x y')",
                "'abc'.substring(2, 1)", "[1, 'a'].isSorted()"):
        with pytest.raises(cel.EvalError):
            run(bad)


# -- the same rules through the sandbox -------------------------------------------------------------

URL = "/apis/example.com/v1/namespaces/default/widgets"


@pytest.fixture(scope="module")
def widgets():
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                              "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": SCHEMA}}]}}
    with Sandbox(port=0) as sandbox, requests.Session() as session:
        made = session.post(sandbox.url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                            json=crd)
        assert made.status_code == 201, made.text
        deadline = time.monotonic() + scaled(5)
        while session.get(sandbox.url + URL).status_code != 200:
            assert time.monotonic() < deadline, "the Widget CRD was never served"
            time.sleep(0.01)

        def call(method, path="", body=None):
            return session.request(method, sandbox.url + URL + path, data=json.dumps(body),
                                   headers={"Content-Type": "application/json"})

        yield call


def _widget(name: str, spec: dict) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def test_the_valid_object_is_created_by_the_sandbox(widgets):
    answer = widgets("POST", body=_widget("valid", _valid_spec()))
    assert answer.status_code == 201, answer.text


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_invalid_value_is_refused_by_the_sandbox(widgets, name):
    answer = widgets("POST", body=_widget(f"bad-{name}", dict(_valid_spec(), **{name: CASES[name][3]})))
    assert answer.status_code == 422, answer.text
    status = answer.json()
    assert status["message"] == f'Widget.example.com "bad-{name}" is invalid: ' \
                                f"{_expected_path(name)}: {CASES[name][4]}"
    [cause] = status["details"]["causes"]
    assert cause["field"] == _expected_path(name)


@pytest.mark.parametrize("name", sorted(TRANSITIONS))
def test_transition_rules_on_update_in_the_sandbox(widgets, name):
    schema, rule, old, allowed, refused, message = TRANSITIONS[name]
    obj_name = f"tr-{name}"
    created = widgets("POST", body=_widget(obj_name, dict(_valid_spec(), **{name: old})))
    assert created.status_code == 201, created.text
    stored = created.json()
    refused_update = widgets("PUT", "/" + obj_name, dict(stored, spec=dict(stored["spec"], **{name: refused})))
    assert refused_update.status_code == 422, refused_update.text
    assert refused_update.json()["message"].endswith(f"spec.{name}: {message}")
    allowed_update = widgets("PUT", "/" + obj_name, dict(stored, spec=dict(stored["spec"], **{name: allowed})))
    assert allowed_update.status_code == 200, allowed_update.text


def test_matches_is_re2_as_in_go_not_the_packages_rust_regex():
    digit = cel.compile_rule("self.matches('^\\\\d$')")
    assert digit("3") and not digit("\u0663")  # Go's \d is ASCII; Rust's regex would match
    assert cel.compile_rule("matches(self, 'b')")("abc")  # the function form too
    # 'matches(' inside a string literal is left alone
    assert cel.compile_rule("self == 'x.matches(1)' || self.matches(\"^a\")")("x.matches(1)")
    with pytest.raises(cel.EvalError):
        cel.compile_rule("self.matches('(')")("a")  # an invalid RE2 pattern fails the rule
