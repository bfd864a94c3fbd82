"""AlertmanagerConfig routes go *before* the base configuration's own child routes.

../shared/reference/alertmanager-operator.md §6.1: "the collected routes are prepended to the base
root route's `routes` (before the user's own child routes), so they are evaluated first", in sorted
`<ns>/<name>` order. Checked on the built configuration, on the text written to the Secret, and
with the real Alertmanager's router (`amtool config routes test`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from .helpers import AMTOOL, alertmanager, amc, base_secret, build_from_docs

BASE = """\
route:
  receiver: "null"
  routes:
  - receiver: base-critical
    matchers: ['severity="critical"']
  - receiver: base-other
receivers:
- name: "null"
- name: base-critical
- name: base-other
"""
ROUTE = {"receiver": "r", "matchers": [{"name": "severity", "value": "critical", "matchType": "="}]}
EXPECTED = ["ops/b/r", "team/a/r", "base-critical", "base-other"]


def rendered():
    docs = [alertmanager("v0.25.0"), base_secret(BASE),
            amc("a", "team", route=ROUTE, receivers=[{"name": "r"}]),
            amc("b", "ops", route=ROUTE, receivers=[{"name": "r"}])]
    result = build_from_docs(docs)
    assert not result.rejected, result.rejected
    return result


def test_config_routes_come_before_the_base_routes():
    result = rendered()
    assert [r["receiver"] for r in result.config["route"]["routes"]] == EXPECTED


def test_written_text_has_the_same_order():
    text = rendered().text
    assert [r["receiver"] for r in yaml.safe_load(text)["route"]["routes"]] == EXPECTED


def test_base_child_routes_keep_their_own_children_and_order():
    base = BASE.replace("  - receiver: base-other\n",
                        "  - receiver: base-other\n    routes:\n    - receiver: base-critical\n"
                        "      matchers: ['team=\"x\"']\n")
    docs = [alertmanager("v0.25.0"), base_secret(base), amc("a", "team", route=ROUTE, receivers=[{"name": "r"}])]
    result = build_from_docs(docs)
    for cfg in (result.config, yaml.safe_load(result.text)):
        routes = cfg["route"]["routes"]
        assert [r["receiver"] for r in routes] == ["team/a/r", "base-critical", "base-other"]
        assert routes[2]["routes"] == [{"receiver": "base-critical", "matchers": ['team="x"']}]


def test_real_alertmanager_routes_a_team_alert_through_its_config_first(tmp_path: Path):
    if not Path(AMTOOL).exists():
        pytest.skip("amtool (Debian prometheus-alertmanager) is not installed")
    path = tmp_path / "alertmanager.yaml"
    path.write_text(rendered().text)
    out = subprocess.run([AMTOOL, "config", "routes", "test", f"--config.file={path}",
                          "severity=critical", "namespace=team"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # the team's route matches and continues; the base's critical route then catches it and stops
    assert out.stdout.split() == ["team/a/r,base-critical"]


def test_receivers_and_inhibit_rules_are_appended_after_the_base_ones():
    base = BASE + "inhibit_rules:\n- source_matchers: ['alertname=\"Base\"']\n  target_matchers: ['severity=\"info\"']\n"
    inhibit = [{"sourceMatch": [{"name": "alertname", "value": "A", "matchType": "="}],
                "targetMatch": [{"name": "alertname", "value": "B", "matchType": "="}]}]
    docs = [alertmanager("v0.25.0"), base_secret(base),
            amc("a", "team", route=ROUTE, receivers=[{"name": "r"}], inhibitRules=inhibit)]
    result = build_from_docs(docs)
    for cfg in (result.config, yaml.safe_load(result.text)):
        assert [r["name"] for r in cfg["receivers"]] == ["null", "base-critical", "base-other", "team/a/r"]
        assert [r["source_matchers"][0] for r in cfg["inhibit_rules"]] == ['alertname="Base"', 'alertname="A"']
