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
