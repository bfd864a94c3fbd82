"""Upstream's pkg/admission tests (admission_test.go), against our webhook over HTTP, with upstream's testdata."""

from __future__ import annotations

import base64
import json

import jsonpatch
import pytest

from .helpers import amc_review, conversion_review, golden, post

VALIDATE = "/admission-prometheusrules/validate"
MUTATE = "/admission-prometheusrules/mutate"
AMC = "/admission-alertmanagerconfigs/validate"


def _patch(response: dict) -> list[dict]:
    assert response["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))


@pytest.mark.parametrize("name", ["goodRulesWithAnnotations.golden", "badRulesNoAnnotations.golden"])
def test_mutate_rule_gives_a_patch(webhook, name):
    _, out = post(webhook() + MUTATE, golden(name))
    assert out["kind"] == "AdmissionReview" and out["apiVersion"] == "admission.k8s.io/v1"
    assert out["response"]["uid"] == "87c5df7f-5090-11e9-b9b4-02425473f309"
    ops = _patch(out["response"])
    obj = json.loads(golden(name))["request"]["object"]
    patched = jsonpatch.apply_patch(obj, ops)
    assert patched["metadata"]["annotations"]["prometheus-operator-validated"] == "true"
    if "annotations" in obj["metadata"]:  # existing annotations are kept, not replaced
        assert "kubectl.kubernetes.io/last-applied-configuration" in patched["metadata"]["annotations"]


@pytest.mark.parametrize("name", ["goodRulesWithAnnotations.golden", "goodRulesWithExternalLabelsInAnnotations.golden"])
def test_admit_good_rule(webhook, name):
    _, out = post(webhook() + VALIDATE, golden(name))
    assert out["response"]["allowed"] is True, out


def test_admit_bad_rule_two_causes_named_by_group_and_rule(webhook):
    _, out = post(webhook() + VALIDATE, golden("badRulesNoAnnotations.golden"))
    response = out["response"]
    assert response["allowed"] is False
    causes = response["status"]["details"]["causes"]
    assert len(causes) == 2
    assert "unexpected right parenthesis ')'" in causes[0]["message"]
    assert "“" in causes[1]["message"]  # upstream: "unrecognized character in action: U+201C"
    for cause in causes:
        assert cause["message"].startswith('group "test.rules", rule 1, "Test": '), cause
    assert response["status"]["code"] == 400
    assert "test.rules" in response["status"]["message"] and "right parenthesis" in response["status"]["message"]


def test_admit_bad_rule_with_boolean_in_annotations(webhook):
    _, out = post(webhook() + VALIDATE, golden("badRulesWithBooleanInAnnotations.golden"))
    response = out["response"]
    assert response["allowed"] is False
    [cause] = response["status"]["details"]["causes"]
    assert cause["field"] == "spec.groups[0].rules[0].annotations.badBoolean"
    assert "must be a string" in cause["message"]


def test_mutate_non_strings_to_strings_then_valid(webhook):
    base = webhook()
    original = json.loads(golden("nonStringsInLabelsAnnotations.golden"))
    _, before = post(base + VALIDATE, json.dumps(original).encode())
    assert before["response"]["allowed"] is False  # the mutation is what makes it valid
    _, out = post(base + MUTATE, json.dumps(original).encode())
    patched = jsonpatch.apply_patch(original["request"]["object"], _patch(out["response"]))
    rule = patched["spec"]["groups"][0]["rules"][0]
    assert rule["labels"] == {"severity": "critical", "labNil": "", "labInt": "1", "labEmpty": "", "labBool": "true"}
    assert rule["annotations"]["annBool"] == "false" and rule["annotations"]["annInteger"] == "1"
    assert rule["annotations"]["annNil"] == ""
    original["request"]["object"] = patched
    for path in (MUTATE, VALIDATE):
        _, again = post(base + path, json.dumps(original).encode())
        assert again["response"]["allowed"] is True, again


@pytest.mark.parametrize("name,version,allowed", [
    ("Test_reject_on_duplicate_receiver_v1alpha1.golden", "v1alpha1", False),
    ("Test_reject_on_duplicate_receiver_v1beta1.golden", "v1beta1", False),
    ("Test_reject_on_invalid_receiver_v1alpha1.golden", "v1alpha1", False),
    ("Test_reject_on_invalid_receiver_v1beta1.golden", "v1beta1", False),
    ("Test_reject_on_invalid_mute_time_intervals_v1alpha1.golden", "v1alpha1", False),
    ("Test_reject_on_invalid_time_intervals_v1beta1.golden", "v1beta1", False),
    ("Test_happy_path_v1alpha1.golden", "v1alpha1", True),
    ("Test_happy_path_v1beta1.golden", "v1beta1", True),
])
def test_alertmanager_config_admission(webhook, name, version, allowed):
    _, out = post(webhook() + AMC, amc_review(version, golden(name)))
    assert out["response"]["allowed"] is allowed, out


def test_alertmanager_config_refusal_names_the_field(webhook):
    _, out = post(webhook() + AMC, amc_review("v1beta1", golden("Test_reject_on_invalid_time_intervals_v1beta1.golden")))
    [cause] = out["response"]["status"]["details"]["causes"]
    assert cause["field"] == "spec.timeIntervals[0].timeIntervals[0].weekdays[0]"  # v1beta1's own field name
    assert "Xaturday" in cause["message"]


@pytest.mark.parametrize("source,target,name,key", [
    ("v1alpha1", "v1beta1", "happy_path_v1alpha1_v1beta1.golden", "timeIntervals"),
    ("v1beta1", "v1alpha1", "happy_path_v1beta1_v1alpha1.golden", "muteTimeIntervals"),
])
def test_alertmanager_config_conversion(webhook, source, target, name, key):
    _, out = post(webhook() + "/convert", conversion_review(source, target, golden(name)))
    response = out["response"]
    assert out["kind"] == "ConversionReview" and response["uid"] == "87c5df7f-5090-11e9-b9b4-02425473f309"
    assert response["result"]["status"] == "Success", response
    [converted] = response["convertedObjects"]
    assert converted["apiVersion"] == f"monitoring.coreos.com/{target}"
    intervals = converted["spec"][key]
    assert len(intervals) == 1 and intervals[0]["name"] == "out-of-business-hours"
    other = {"timeIntervals": "muteTimeIntervals", "muteTimeIntervals": "timeIntervals"}[key]
    assert other not in converted["spec"]
    assert converted["metadata"] == {"name": "test", "namespace": "monitoring"}


def test_utf8_rules_by_validation_scheme(webhook):
    body = golden("goodRulesWithUTF8.golden")
    _, legacy = post(webhook("legacy") + VALIDATE, body)
    assert legacy["response"]["allowed"] is False and legacy["response"]["status"]["message"]
    _, utf8 = post(webhook("utf8") + VALIDATE, body)
    assert utf8["response"]["allowed"] is True, utf8
    for scheme in ("legacy", "utf8"):
        _, ascii_ = post(webhook(scheme) + VALIDATE, golden("goodRulesWithAnnotations.golden"))
        assert ascii_["response"]["allowed"] is True
