"""Malformed AlertmanagerConfigs (wrong shapes anywhere) are rejected alone; the render never raises."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promop.render.alertmanager.config import build_config

from .helpers import SIMPLE_BASE, alertmanager, amc, base_secret, store_of

GOOD = amc("good", "team", route={"receiver": "r", "routes": [{"receiver": "r", "matchers": [
    {"name": "a", "value": "b", "matchType": "="}]}]}, receivers=[{"name": "r", "webhookConfigs": [
        {"url": "https://x.example", "httpConfig": {"tlsConfig": {"insecureSkipVerify": True}}}]}])

junk = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children,
                                                                                       max_size=3), max_leaves=8)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _replace(obj, path, value):
    target = obj
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(junk, st.integers(min_value=0, max_value=10_000))
def test_a_malformed_object_is_rejected_alone(value, seed):
    bad = copy.deepcopy(GOOD)
    bad["metadata"]["name"] = "bad"
    paths = [p for p in _paths(bad["spec"]) if p]
    _replace(bad["spec"], random.Random(seed).choice(paths), value)
    am = alertmanager("v0.25.0")
    docs = [am, base_secret(SIMPLE_BASE)]
    result = build_config(am, [GOOD, bad], [], store_of(docs))
    assert result.fatal is None
    assert ("team", "good") in result.accepted()
    assert any(r["name"] == "team/good/r" for r in result.config["receivers"])
    assert all(p.name == "bad" for p in result.rejected)


@pytest.mark.parametrize("spec", [None, [], "x", {"route": "x"}, {"receivers": {"a": 1}}, {"inhibitRules": "x"},
                                  {"muteTimeIntervals": [{"name": "n", "timeIntervals": "x"}]}])
def test_wrong_top_level_shapes(spec):
    bad = {**amc("bad", "team"), "spec": spec}
    am = alertmanager("v0.25.0")
    result = build_config(am, [GOOD, bad], [], store_of([am, base_secret(SIMPLE_BASE)]))
    assert ("team", "good") in result.accepted() and result.fatal is None


BASE = {"global": {"resolve_timeout": "5m"}, "route": {"receiver": "null", "routes": [{"receiver": "null",
        "matchers": ["a=b"], "group_wait": "30s"}]}, "receivers": [{"name": "null"}],
        "inhibit_rules": [{"source_matchers": ["a=b"], "target_matchers": ["c=d"]}],
        "mute_time_intervals": [{"name": "m", "time_intervals": [{"weekdays": ["monday"]}]}]}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(junk, st.integers(min_value=0, max_value=10_000))
def test_a_malformed_base_config_is_a_clear_error_never_a_crash(value, seed):
    import yaml

    base = copy.deepcopy(BASE)
    paths = [p for p in _paths(base) if p]
    _replace(base, random.Random(seed).choice(paths), value)
    am = alertmanager("v0.25.0")
    result = build_config(am, [GOOD], [], store_of([am, base_secret(yaml.safe_dump(base))]))
    assert result.fatal is not None or ("team", "good") in result.accepted()
