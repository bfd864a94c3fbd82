"""Relabel conversion and validation rules (Prometheus's relabel.Config.Validate)."""

from __future__ import annotations

import pytest

from promop.render.relabel import RelabelError, to_prometheus, validate
from promop.render.versions import Version

V2 = Version("v2.42.0")


def test_conversion_key_order_and_lowercased_action():
    rc = {"action": "HashMod", "modulus": 3, "targetLabel": "t", "sourceLabels": ["a", "b"], "separator": "",
          "replacement": "$1", "regex": "(.*)"}
    out = to_prometheus(rc)
    assert list(out) == ["source_labels", "separator", "target_label", "regex", "modulus", "replacement", "action"]
    assert out["action"] == "hashmod" and out["separator"] == ""


@pytest.mark.parametrize("rc", [
    {"sourceLabels": ["a"], "targetLabel": "b"},  # default action replace
    {"sourceLabels": ["a"], "targetLabel": "${1}_x", "regex": "(.*)"},
    {"action": "labelmap", "regex": "__meta_(.+)"},
    {"action": "labeldrop", "regex": "tmp_.*"},
    {"action": "keepequal", "sourceLabels": ["a"], "targetLabel": "b"},
    {"action": "Uppercase", "sourceLabels": ["a"], "targetLabel": "b"},
])
def test_valid(rc):
    validate(rc, V2)


@pytest.mark.parametrize("rc,field,fragment", [
    ({"action": "keepequal", "sourceLabels": ["a"], "targetLabel": "b"}, "action", "needs Prometheus >= 2.41.0"),
    ({"action": "dropequal", "sourceLabels": ["a"], "targetLabel": "b", "regex": "x"}, "action", "takes only sourceLabels and targetLabel"),
    ({"action": "lowercase", "sourceLabels": ["a"], "targetLabel": "b", "replacement": "x"}, "replacement", "does not take a replacement"),
    ({"action": "hashmod", "sourceLabels": ["a"], "targetLabel": "${1}", "modulus": 2}, "targetLabel", "not a valid label name"),
    ({"action": "replace", "sourceLabels": ["a"], "targetLabel": "1abc"}, "targetLabel", "not a valid target label"),
    ({"action": "labelkeep", "regex": "x", "targetLabel": "y"}, "action", "takes only a regex"),
    ({"sourceLabels": "a", "targetLabel": "b"}, "sourceLabels", "must be a list"),
])
def test_invalid(rc, field, fragment):
    version = Version("v2.40.0") if rc.get("action") == "keepequal" else V2
    with pytest.raises(RelabelError) as e:
        validate(rc, version)
    assert e.value.field == field and fragment in e.value.message


def test_utf8_label_names_from_prometheus_3():
    validate({"sourceLabels": ["http.method"], "action": "keep", "regex": "GET"}, Version("v3.0.0"))
    with pytest.raises(RelabelError):
        validate({"sourceLabels": ["http.method"], "action": "keep", "regex": "GET"}, V2)


def test_snake_case_for_raw_configs():
    with pytest.raises(RelabelError) as e:
        validate({"action": "hashmod", "source_labels": ["a"], "target_label": "b"}, V2, snake=True)
    assert e.value.field == "modulus"
