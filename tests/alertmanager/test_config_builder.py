"""Matcher strategies, per-object rejection, base-config errors and the unmanaged mode."""

from __future__ import annotations

import pytest
import yaml

from promop.render.alertmanager.config import build_config

from .helpers import SIMPLE_BASE, alertmanager, amc, amtool_check, base_secret, secret, store_of

ROUTE = {"receiver": "r", "matchers": [{"name": "severity", "value": "critical", "matchType": "="}]}
INHIBIT = [{"sourceMatch": [{"name": "alertname", "value": "A", "matchType": "="}],
            "targetMatch": [{"name": "alertname", "value": "B", "matchType": "!="}], "equal": ["node"]}]


def render(objs, version="v0.25.0", base=SIMPLE_BASE, **spec):
    am = alertmanager(version, **spec)
    docs = [am, base_secret(base), *objs]
    return build_config(am, [d for d in docs if d["kind"] == "AlertmanagerConfig"], [], store_of(docs))


def two_configs():
    return [amc("own", "monitoring", route=ROUTE, receivers=[{"name": "r"}], inhibitRules=INHIBIT),
            amc("other", "team", route=ROUTE, receivers=[{"name": "r"}], inhibitRules=INHIBIT)]


def routes(result):
    return {r["receiver"]: r for r in result.config["route"]["routes"]}


def test_on_namespace_default(tmp_path):
    result = render(two_configs())
    for ns, name in (("monitoring", "own"), ("team", "other")):
        r = routes(result)[f"{ns}/{name}/r"]
        assert r["matchers"] == ['severity="critical"', f'namespace="{ns}"'] and r["continue"] is True
    rules = result.config["inhibit_rules"]
    assert rules[0]["source_matchers"] == ['alertname="A"', 'namespace="monitoring"']
    assert rules[0]["target_matchers"] == ['alertname!="B"', 'namespace="monitoring"']
    assert amtool_check(result.text, tmp_path).returncode == 0


def test_on_namespace_except_for_alertmanager_namespace():
    result = render(two_configs(), alertmanagerConfigMatcherStrategy={"type": "OnNamespaceExceptForAlertmanagerNamespace"})
    assert routes(result)["monitoring/own/r"]["matchers"] == ['severity="critical"']
    assert routes(result)["monitoring/own/r"]["continue"] is True
    assert routes(result)["team/other/r"]["matchers"] == ['severity="critical"', 'namespace="team"']
    own, other = result.config["inhibit_rules"]
    assert own["source_matchers"] == ['alertname="A"']
    assert other["source_matchers"] == ['alertname="A"', 'namespace="team"']


def test_strategy_none():
    result = render(two_configs(), alertmanagerConfigMatcherStrategy={"type": "None"})
    for r in routes(result).values():
        assert r["matchers"] == ['severity="critical"'] and r["continue"] is True
    assert all("namespace" not in str(rule) for rule in result.config["inhibit_rules"])


def test_on_namespace_before_0_22_uses_match_maps(tmp_path):
    route = {"receiver": "r", "matchers": [{"name": "severity", "value": "crit.*", "regex": True}]}
    rule = [{"sourceMatch": [{"name": "alertname", "value": "A"}], "targetMatch": [{"name": "namespace", "value": "x.*", "regex": True}]}]
    result = render([amc("c", route=route, receivers=[{"name": "r"}], inhibitRules=rule)], version="v0.21.0")
    r = result.config["route"]["routes"][0]
    assert r == {"receiver": "team/c/r", "match_re": {"severity": "crit.*"}, "match": {"namespace": "team"}, "continue": True}
    assert result.config["inhibit_rules"] == [{"source_match": {"alertname": "A", "namespace": "team"},
                                               "target_match": {"namespace": "team"}}]
    assert amtool_check(result.text, tmp_path).returncode == 0


def test_existing_namespace_inhibit_matcher_is_not_duplicated():
    rule = [{"sourceMatch": [{"name": "namespace", "value": "team", "matchType": "="}], "targetMatch": []}]
    result = render([amc("c", inhibitRules=rule)])
    assert result.config["inhibit_rules"][0]["source_matchers"] == ['namespace="team"']


def test_matcher_values_are_escaped():
    route = {"receiver": "r", "matchers": [{"name": "msg", "value": 'say "hi"\\', "matchType": "="}]}
    result = render([amc("c", route=route, receivers=[{"name": "r"}])])
    assert result.config["route"]["routes"][0]["matchers"][0] == 'msg="say \\"hi\\"\\\\"'


GOOD = amc("good", route={"receiver": "r"}, receivers=[{"name": "r"}])
BAD_CASES = {
    "bad match type": ({"route": {"receiver": "r", "matchers": [{"name": "a", "value": "b", "matchType": "=="}]},
                        "receivers": [{"name": "r"}]}, "spec.route.matchers[0].matchType"),
    "bad regex": ({"route": {"receiver": "r", "matchers": [{"name": "a", "value": "(", "matchType": "=~"}]},
                   "receivers": [{"name": "r"}]}, "spec.route.matchers[0].value"),
    "unknown receiver": ({"route": {"receiver": "nope"}, "receivers": [{"name": "r"}]}, "spec.route.receiver"),
    "unknown child receiver": ({"route": {"receiver": "r", "routes": [{"receiver": "nope"}]}, "receivers": [{"name": "r"}]},
                               "spec.route.routes[0].receiver"),
    "unknown child key": ({"route": {"receiver": "r", "routes": [{"receiver": "r", "match": {"a": "b"}}]},
                           "receivers": [{"name": "r"}]}, "spec.route.routes[0].match"),
    "duplicate receivers": ({"route": {"receiver": "r"}, "receivers": [{"name": "r"}, {"name": "r"}]},
                            "spec.receivers[1].name"),
    "missing secret key": ({"route": {"receiver": "r"}, "receivers": [{"name": "r", "slackConfigs": [
        {"apiURL": {"name": "creds", "key": "absent"}}]}]}, "spec.receivers[0].slackConfigs[0].apiURL"),
    "missing secret": ({"route": {"receiver": "r"}, "receivers": [{"name": "r", "opsgenieConfigs": [
        {"apiKey": {"name": "nosuch", "key": "k"}}]}]}, "spec.receivers[0].opsgenieConfigs[0].apiKey"),
    "undefined time interval": ({"route": {"receiver": "r", "muteTimeIntervals": ["night"]}, "receivers": [{"name": "r"}]},
                                "spec.route.muteTimeIntervals[0]"),
    "bad time": ({"route": {"receiver": "r"}, "receivers": [{"name": "r"}], "muteTimeIntervals": [
        {"name": "n", "timeIntervals": [{"times": [{"startTime": "18:00", "endTime": "09:00"}]}]}]},
                 "spec.muteTimeIntervals[0].timeIntervals[0].times[0]"),
    "bad duration": ({"route": {"receiver": "r", "groupWait": "5 minutes"}, "receivers": [{"name": "r"}]},
                     "spec.route.groupWait"),
    # Upstream fails the whole reconcile on these (conversion time); we reject the object alone.
    "email without smarthost": ({"route": {"receiver": "r"}, "receivers": [{"name": "r", "emailConfigs": [{"to": "a@b"}]}]},
                                "spec.receivers[0].emailConfigs[0].smarthost"),
    "victorops reserved field": ({"route": {"receiver": "r"}, "receivers": [{"name": "r", "victoropsConfigs": [
        {"routingKey": "k", "customFields": [{"key": "entity_id", "value": "x"}]}]}]},
                                 "spec.receivers[0].victoropsConfigs[0].customFields"),
    "no root receiver": ({"route": {"groupBy": ["job"]}, "receivers": [{"name": "r"}]}, "spec.route.receiver"),
    "groupBy ... not alone": ({"route": {"receiver": "r", "groupBy": ["...", "job"]}, "receivers": [{"name": "r"}]},
                              "spec.route.groupBy"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_invalid_config_is_rejected_alone(case, tmp_path):
    spec, field = BAD_CASES[case]
    creds = secret("creds", key="v")
    result = render([GOOD, amc("bad", **spec), creds])
    assert [(p.name, p.field) for p in result.rejected] == [("bad", field)], result.rejected
    assert result.fatal is None
    assert result.accepted() == [("team", "good")]
    assert [r["receiver"] for r in result.config["route"]["routes"]] == ["team/good/r"]
    assert all(not r["name"].startswith("team/bad/") for r in result.config["receivers"])
    assert amtool_check(result.text, tmp_path).returncode == 0


def test_receiver_only_object_without_route_contributes_only_inhibit_rules():
    obj = amc("c", receivers=[{"name": "r", "webhookConfigs": [{"url": "https://x.example"}]}], inhibitRules=INHIBIT)
    result = render([obj])
    assert [r["name"] for r in result.config["receivers"]] == ["null"]
    assert len(result.config["inhibit_rules"]) == 1


def test_selection_by_labels_and_namespace():
    am = alertmanager("v0.25.0", alertmanagerConfigSelector={"matchLabels": {"team": "a"}},
                      alertmanagerConfigNamespaceSelector={"matchLabels": {"env": "prod"}})
    objs = [amc("x", "a", route={"receiver": "r"}, receivers=[{"name": "r"}]),
            amc("y", "b", route={"receiver": "r"}, receivers=[{"name": "r"}])]
    nss = [{"metadata": {"name": "a", "labels": {"env": "prod"}}}, {"metadata": {"name": "b", "labels": {"env": "dev"}}}]
    docs = [am, base_secret(SIMPLE_BASE), *objs]
    result = build_config(am, objs, nss, store_of(docs))
    decisions = {d.name: d for d in result.selection}
    assert decisions["x"].selected and not decisions["y"].selected
    assert "namespace 'b' not matched" in decisions["y"].reason


@pytest.mark.parametrize("text,field", [
    ("route: [", "Secret monitoring/alertmanager-main key alertmanager.yaml"),
    ("route:\n  receiver: x\nreceivers:\n- name: y\n", "route.receiver"),
    ("receivers:\n- name: y\n", "route"),
    ('route:\n  receiver: "null"\n  continue: true\nreceivers:\n- name: "null"\n', "route.continue"),
    ('route:\n  receiver: "null"\nreceivers:\n- name: "null"\nbogus: 1\n', "bogus"),
])
def test_invalid_base_config_is_fatal(text, field):
    result = render([GOOD], base=text)
    assert result.fatal is not None and field in result.fatal.field, result.fatal
    assert result.config is None and result.text == ""


def test_unmanaged_mode_copies_the_secret_verbatim():
    am = alertmanager("v0.25.0")
    del am["spec"]["alertmanagerConfigSelector"]
    text = "route: {receiver: x}\nreceivers: [{name: x}]\n# comment kept\n"
    docs = [am, base_secret(text)]
    result = build_config(am, [GOOD], [], store_of(docs))
    assert result.unmanaged and result.text == text and result.selection == []


def test_missing_user_secret_gives_the_default_config(tmp_path):
    am = alertmanager("v0.25.0")
    result = build_config(am, [], [], store_of([am]))
    assert yaml.safe_load(result.text) == {"route": {"receiver": "null"}, "receivers": [{"name": "null"}], "templates": []}
    assert amtool_check(result.text, tmp_path).returncode == 0


def test_global_configuration_not_found_is_fatal():
    am = alertmanager("v0.25.0", alertmanagerConfiguration={"name": "missing"})
    result = build_config(am, [], [], store_of([am]))
    assert result.fatal is not None and "not found" in result.fatal.message


@pytest.mark.parametrize("version", ["0.14.0", "v1.0.0", "latest"])
def test_unsupported_version_is_fatal(version):
    result = render([GOOD], version=version)
    assert result.fatal is not None and result.fatal.field == "spec.version"


def test_base_durations_and_user_secret_extra_keys():
    base = 'route:\n  receiver: "null"\n  group_interval: 300s\n  repeat_interval: 0s\nreceivers:\n- name: "null"\n'
    am = alertmanager("v0.25.0")
    user = base_secret(base)
    user["stringData"]["my.tmpl"] = "{{ define \"x\" }}{{ end }}"
    result = build_config(am, [], [], store_of([am, user]))
    assert result.config["route"] == {"receiver": "null", "group_interval": "5m"}
    assert set(result.extra_data) == {"my.tmpl"}
