"""Selector strings from query parameters."""

from __future__ import annotations

import pytest

from promop.sandbox.errors import ApiError
from promop.sandbox.selectors import (object_predicate, parse_field_selector,
                                      parse_label_selector)


def matches(selector: str, labels: dict) -> bool:
    predicate = object_predicate(parse_label_selector(selector), [])
    return predicate({"metadata": {"labels": labels}})


@pytest.mark.parametrize("selector, labels, expected", [
    ("a=b", {"a": "b"}, True),
    ("a=b", {"a": "c"}, False),
    ("a==b", {"a": "b"}, True),
    ("a!=b", {}, True),
    ("a!=b", {"a": "b"}, False),
    ("a in (x, y)", {"a": "y"}, True),
    ("a in (x,y)", {}, False),
    ("a notin (x)", {}, True),
    ("a notin (x)", {"a": "x"}, False),
    ("a", {"a": ""}, True),
    ("!a", {"a": ""}, False),
    ("!a", {}, True),
    ("a=", {"a": ""}, True),
    ("example.com/app=x,tier", {"example.com/app": "x", "tier": "1"}, True),
    ("inx=1", {"inx": "1"}, True),
    ("n>3", {"n": "4"}, True),
    ("n<3", {"n": "4"}, False),
    (" a = b , c ", {"a": "b", "c": "1"}, True),
])
def test_label_selector_strings(selector, labels, expected):
    assert matches(selector, labels) is expected


@pytest.mark.parametrize("bad", ["a in b", "a in (b", "=b", "a b", "a=b,", "!", "n>x"])
def test_malformed_label_selectors(bad):
    with pytest.raises(ApiError) as excinfo:
        parse_label_selector(bad)
    assert excinfo.value.code == 400


def test_empty_selectors_select_everything():
    assert parse_label_selector("") == [] and parse_field_selector(None) == []
    assert object_predicate([], []) is None


def test_field_selectors_with_escapes_and_inequality():
    predicate = object_predicate([], parse_field_selector(
        r"metadata.namespace!=kube-system,type!=helm.sh/release.v1,metadata.name=a\,b"))
    assert predicate({"metadata": {"namespace": "x", "name": "a,b"}, "type": "Opaque"})
    assert not predicate({"metadata": {"namespace": "kube-system", "name": "a,b"}})
    assert not predicate({"metadata": {"namespace": "x", "name": "a,b"},
                          "type": "helm.sh/release.v1"})


def test_field_selector_without_operator_is_rejected():
    with pytest.raises(ApiError) as excinfo:
        parse_field_selector("metadata.name")
    assert excinfo.value.code == 400


# ---- fields.ParseSelector, from apimachinery's pkg/fields/selector_test.go -------------------

from promop.fieldselector import FieldRequirement as Term  # noqa: E402
from promop.fieldselector import escape_value, parse_field_selector as parse_fields, unescape_value  # noqa: E402
from promop.labelselector import SelectorError  # noqa: E402


@pytest.mark.parametrize("text,terms", [
    ("", []),
    ("x=a,y=b,z=c", [Term("x", "=", "a"), Term("y", "=", "b"), Term("z", "=", "c")]),
    ("z=c,x=a", [Term("x", "=", "a"), Term("z", "=", "c")]),  # terms sorted, as upstream
    ("x!=a,y=b", [Term("x", "!=", "a"), Term("y", "=", "b")]),
    ("x=", [Term("x", "=", "")]),
    ("x= ", [Term("x", "=", " ")]),  # no trimming: the space is the value
    ("x =a", [Term("x ", "=", "a")]),
    ("x==a", [Term("x", "=", "a")]),
    ("x=a,", [Term("x", "=", "a")]),  # an empty term is skipped
    (",x=a", [Term("x", "=", "a")]),
    (r"x=a\,b", [Term("x", "=", "a,b")]),
    (r"x=a\=b", [Term("x", "=", "a=b")]),
    (r"x=a\\b", [Term("x", "=", "a\\b")]),
    (r"x=a\\,y=b", [Term("x", "=", "a\\"), Term("y", "=", "b")]),
    (r"x!=\=a", [Term("x", "!=", "=a")]),
    ("x=a||y", [Term("x", "=", "a||y")]),
])
def test_field_selector_parse(text, terms):
    assert parse_fields(text) == terms


@pytest.mark.parametrize("text,message", [
    ("x", "invalid selector: 'x'; can't understand 'x'"),
    ("x=a,y", "invalid selector: 'x=a,y'; can't understand 'y'"),
    ("x=a||y=b", "invalid field selector: unescaped character in value: 61"),
    ("x!==a", "invalid field selector: unescaped character in value: 61"),
    ("x==a==b", "invalid field selector: unescaped character in value: 61"),
    ("x=a=b", "invalid field selector: unescaped character in value: 61"),
    (r"x=a\b", "invalid field selector: invalid escape sequence: \\b"),
    ("x=a\\", "invalid field selector: invalid escape sequence: \\"),
    ("x<1", "invalid selector: 'x<1'; can't understand 'x<1'"),
])
def test_field_selector_errors(text, message):
    with pytest.raises(SelectorError) as exc:
        parse_fields(text)
    assert str(exc.value) == message


@pytest.mark.parametrize("value", ["", "a", "a,b", "a=b", "a\\b", "\\,=", "a\\\\,,=="])
def test_field_escape_round_trips(value):
    assert unescape_value(escape_value(value)) == value


def test_field_terms_match_a_field_set():
    assert Term("status.phase", "=", "Running").matches({"status.phase": "Running"})
    assert not Term("status.phase", "=", "Running").matches({})
    assert Term("status.phase", "!=", "Running").matches({})
    assert Term("spec.nodeName", "=", "").matches({})


def test_sandbox_field_selector_keeps_spaces_like_the_apiserver():
    with pytest.raises(ApiError) as excinfo:
        parse_field_selector("metadata.name=a=b")
    assert excinfo.value.code == 400
    (term,) = parse_field_selector("metadata.name= x")
    assert term.path == ("metadata", "name") and term.value == " x"


def test_sandbox_label_selector_errors_are_apimachinerys():
    with pytest.raises(ApiError) as excinfo:
        parse_label_selector("a b")
    assert "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt" in str(excinfo.value)


@pytest.mark.parametrize("verb,selector,name", [
    ("list", "metadata.name=allowed", "allowed"),
    ("watch", "metadata.name==allowed", "allowed"),
    ("list", "metadata.namespace=x,metadata.name=allowed", "allowed"),
    ("list", "metadata.name!=allowed", ""),
    ("list", "metadata.name=a=b", ""),  # does not parse: no name, as upstream
    ("list", "metadata.name=..", ""),
    ("list", "metadata.name=a%2Fb", ""),
    ("get", "metadata.name=allowed", ""),
    ("list", "", ""),
])
def test_a_name_field_selector_narrows_authorization(verb, selector, name):
    from promop.sandbox.server import _selected_name

    assert _selected_name(verb, {"fieldSelector": [selector]}) == name
