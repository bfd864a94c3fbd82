"""AlertmanagerConfig v1alpha1 <-> v1beta1: the differences between the two schemas of upstream's -full CRD."""

from __future__ import annotations

import pytest

from promop.admission import conversion

ALPHA = "monitoring.coreos.com/v1alpha1"
BETA = "monitoring.coreos.com/v1beta1"


def amc(api_version: str, spec: dict) -> dict:
    return {"apiVersion": api_version, "kind": "AlertmanagerConfig", "metadata": {"name": "a", "namespace": "n"},
            "spec": spec}


def test_regex_matchers_become_match_types_everywhere():
    spec = {"route": {"receiver": "r", "matchers": [{"name": "a", "value": "x.*", "regex": True},
                                                    {"name": "b", "value": "y"},
                                                    {"name": "c", "value": "z", "matchType": "!="}],
                      "routes": [{"matchers": [{"name": "d", "value": "w", "regex": True}]}]},
            "inhibitRules": [{"sourceMatch": [{"name": "s", "value": "1", "regex": True}],
                              "targetMatch": [{"name": "t", "value": "2"}]}]}
    out = conversion.convert(amc(ALPHA, spec), BETA)["spec"]
    assert out["route"]["matchers"] == [{"name": "a", "value": "x.*", "matchType": "=~"},
                                        {"name": "b", "value": "y", "matchType": "="},
                                        {"name": "c", "value": "z", "matchType": "!="}]
    assert out["route"]["routes"][0]["matchers"] == [{"name": "d", "value": "w", "matchType": "=~"}]
    assert out["inhibitRules"][0]["sourceMatch"] == [{"name": "s", "value": "1", "matchType": "=~"}]
    assert out["inhibitRules"][0]["targetMatch"] == [{"name": "t", "value": "2", "matchType": "="}]
    assert out["route"]["receiver"] == "r"
    back = conversion.convert(amc(BETA, out), ALPHA)["spec"]
    assert back["route"]["matchers"][0] == {"name": "a", "value": "x.*", "matchType": "=~"}


def test_secret_selectors_lose_optional_but_tls_refs_keep_it():
    receiver = {"name": "r", "slackConfigs": [{"apiURL": {"name": "s", "key": "k", "optional": True},
                                               "httpConfig": {"tlsConfig": {"ca": {"secret": {
                                                   "name": "c", "key": "ca", "optional": True}}}}}],
                "opsgenieConfigs": [{"apiKey": {"name": "o", "key": "k"}, "updateAlerts": True}]}
    out = conversion.convert(amc(ALPHA, {"receivers": [receiver]}), BETA)["spec"]["receivers"][0]
    assert out["slackConfigs"][0]["apiURL"] == {"name": "s", "key": "k"}
    assert out["slackConfigs"][0]["httpConfig"]["tlsConfig"]["ca"]["secret"]["optional"] is True
    assert out["opsgenieConfigs"] == [{"apiKey": {"name": "o", "key": "k"}}]


def test_same_version_is_unchanged_and_input_not_mutated():
    spec = {"muteTimeIntervals": [{"name": "x"}]}
    obj = amc(ALPHA, spec)
    assert conversion.convert(obj, ALPHA) == obj
    conversion.convert(obj, BETA)
    assert obj["spec"] == {"muteTimeIntervals": [{"name": "x"}]}


def test_bad_versions_fail_the_review_with_a_reason():
    body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u", "desiredAPIVersion": "monitoring.coreos.com/v2", "objects": [amc(ALPHA, {})]}}
    out = conversion.review(body)["response"]
    assert out["uid"] == "u" and out["result"]["status"] == "Failure"
    assert "monitoring.coreos.com/v2" in out["result"]["message"]
    with pytest.raises(conversion.ConversionError):
        conversion.convert({**amc(ALPHA, {}), "kind": "Alertmanager"}, BETA)
