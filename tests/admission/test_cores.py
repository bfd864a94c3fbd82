"""The webhook's pure parts beyond upstream's tests: URL checks shared with the Alertmanager renderer,
JSON pointers in the mutation, and the group/rule naming of refusals."""

from __future__ import annotations

import jsonpatch
import pytest

from promop.admission import rules
from promop.render.alertmanager.common import Reject
from promop.render.alertmanager.http_config import valid_url


@pytest.mark.parametrize("url", ["https://%<>wechatserver:8080/", "https://host/a%2", "https://host/%zz",
                                 "http://host/a\x7f", "http://host/\nx"])
def test_urls_go_refuses_are_refused(url):
    with pytest.raises(Reject):
        valid_url(url, "spec.receivers[0].webhookConfigs[0].url")


@pytest.mark.parametrize("url", ["https://host/a%20b", "http://wechatserver:8080/", "https://h/%2F%2f"])
def test_escaped_urls_pass(url):
    assert valid_url(url, "f") == url


def test_mutation_escapes_keys_and_keeps_strings():
    obj = {"metadata": {"annotations": {"a/b": "x"}},
           "spec": {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "1",
                                                        "labels": {"team/x": 1, "s": "kept", "t~": False}}]}]}}
    ops = rules.mutation_patch(obj)
    patched = jsonpatch.apply_patch(obj, ops)
    assert patched["spec"]["groups"][0]["rules"][0]["labels"] == {"team/x": "1", "s": "kept", "t~": "false"}
    assert patched["metadata"]["annotations"] == {"a/b": "x", "prometheus-operator-validated": "true"}
    assert not any(op["path"].endswith("/s") for op in ops)  # a string value is left alone


def test_each_cause_names_its_own_group_and_rule():
    spec = {"groups": [{"name": "first", "rules": [{"record": "ok", "expr": "1"}]},
                       {"name": "second", "rules": [{"record": "ok", "expr": "1"},
                                                    {"alert": "Broken", "expr": "rate(x[5m]"}]}]}
    request = {"uid": "u", "object": {"metadata": {"name": "r", "namespace": "n"}, "spec": spec}}
    response = rules.validate(request)
    assert response["allowed"] is False and response["uid"] == "u"
    [cause] = response["status"]["details"]["causes"]
    assert cause["message"].startswith('group "second", rule 2, "Broken": spec.groups[1].rules[1].expr: ')
    assert response["status"]["message"].startswith("PrometheusRule n/r is invalid: ")


def _amc(receiver: dict) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1beta1", "kind": "AlertmanagerConfig",
            "metadata": {"name": "a", "namespace": "n"},
            "spec": {"route": {"receiver": "r"}, "receivers": [{"name": "r", **receiver}]}}


@pytest.mark.parametrize("receiver", [
    {"pushoverConfigs": [{"userKey": {"name": "s", "key": "u"}, "token": {"name": "s", "key": "t"}}]},
    {"slackConfigs": [{"apiURL": {"name": "s", "key": "u"}}]},
    {"webhookConfigs": [{"urlSecret": {"name": "s", "key": "u"}}]},
    {"telegramConfigs": [{"botToken": {"name": "s", "key": "u"}, "chatID": 1}]},
    {"msteamsConfigs": [{"webhookUrl": {"name": "s", "key": "a"}}]},
    {"webhookConfigs": [{"url": "http://x", "httpConfig": {"tlsConfig": {
        "ca": {"secret": {"name": "s", "key": "ca"}}, "cert": {"secret": {"name": "s", "key": "c"}},
        "keySecret": {"name": "s", "key": "k"}}}}]},
])
def test_values_in_referenced_secrets_are_the_operators_to_check(receiver):
    """The webhook cannot read Secrets (upstream's does not either): a reference is taken as valid."""
    from promop.admission import amconfig

    assert amconfig.problems(_amc(receiver)) == []


def test_a_reference_without_a_name_is_still_refused():
    from promop.admission import amconfig

    receiver = {"webhookConfigs": [{"url": "http://x", "httpConfig": {
        "basicAuth": {"username": {"name": "", "key": "u"}}}}]}
    [(field, _)] = amconfig.problems(_amc(receiver))
    assert field == "spec.receivers[0].webhookConfigs[0].httpConfig.basicAuth.username.name"
