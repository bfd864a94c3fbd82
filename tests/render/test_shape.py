"""Shape checks: the fast yes/no walk agrees with the full walk that names every wrong field."""

from __future__ import annotations

import random

import pytest

from promop.render import shape
from promop.render.shape import ENDPOINT, MONITOR_SPEC, PROMETHEUS_CONFIG_SPEC, shape_problems

_SCALARS = ["x", "", 0, 7, -1, True, False, 1.5, None, [], {}, ["a"], {"k": "v"}]


def _random_value(rng: random.Random, sh, depth: int = 0):
    """A value of `sh`'s shape, with now and then a wrong type somewhere."""
    if rng.random() < 0.08 or depth > 5:
        return rng.choice(_SCALARS)
    if isinstance(sh, str):
        return {"string": "s", "boolean": True, "integer": 3, "integer or string": rng.choice([4, "web"])}[sh]
    if isinstance(sh, tuple):
        kind, inner = sh
        if kind == "list":
            return [_random_value(rng, inner, depth + 1) for _ in range(rng.randint(0, 3))]
        return {f"k{i}": _random_value(rng, inner, depth + 1) for i in range(rng.randint(0, 3))}
    keys = rng.sample(sorted(sh), min(len(sh), rng.randint(0, 6)))
    out = {k: _random_value(rng, sh[k], depth + 1) for k in keys}
    if rng.random() < 0.2:
        out["unknownField"] = rng.choice(_SCALARS)  # not the shape's business
    return out


@pytest.mark.parametrize("sh", [MONITOR_SPEC, ENDPOINT, PROMETHEUS_CONFIG_SPEC], ids=["monitor", "endpoint", "prometheus"])
def test_the_fast_walk_says_ok_exactly_when_the_full_walk_finds_nothing(sh) -> None:
    rng = random.Random(32)
    bad = 0
    for _ in range(3000):
        value = _random_value(rng, sh)
        full = shape._problems(value, sh, "spec")
        assert shape._shape_ok(value, sh) == (not full), value
        assert shape_problems(value, sh, "spec") == full
        bad += bool(full)
    assert 300 < bad < 2700  # both answers were exercised


def test_a_wrong_type_deep_down_is_named_with_its_path() -> None:
    spec = {"selector": {"matchLabels": {"app": "a"}},
            "endpoints": [{"port": "web"}, {"port": "web", "relabelings": [{"sourceLabels": "job"}]}]}
    assert shape_problems(spec, MONITOR_SPEC, "spec") == [
        ("spec.endpoints[1].relabelings[0].sourceLabels", "must be a list, got 'job'")]
    spec["endpoints"][1]["relabelings"][0]["sourceLabels"] = ["job"]
    spec["selector"]["matchLabels"]["app"] = 1
    assert shape_problems(spec, MONITOR_SPEC, "spec") == [("spec.selector.matchLabels.app", "must be a string, got 1")]
    assert shape_problems({"sampleLimit": True}, MONITOR_SPEC, "spec") == [
        ("spec.sampleLimit", "must be a integer, got True")]
    assert shape_problems({"endpoints": [{"targetPort": False}]}, MONITOR_SPEC, "spec") == [
        ("spec.endpoints[0].targetPort", "must be a integer or string, got False")]
    assert shape_problems({"endpoints": None, "jobLabel": None}, MONITOR_SPEC, "spec") == []
    assert shape_problems("x", MONITOR_SPEC, "spec") == [("spec", "must be a mapping, got 'x'")]
