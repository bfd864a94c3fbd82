"""The incremental selection (promop.render.selection_index) equals a full select() after any edit.

Property-style: seeded random sequences of edits (labels, status-only version bumps, additions,
deletions, objects without uid, Namespace label changes, selector changes, an invalid selector),
each followed by select_all() with the one RenderCache kept across the sequence, compared with
select_all() without a cache (a full select() of every candidate) and with the selected objects
picked by name.
"""

from __future__ import annotations

import random

import pytest

from promop.render import RenderCache
from promop.render.model import RenderInputs, obj_meta
from promop.render.pipeline import select_all
from promop.render.selection import select
from promop.render.selection_index import SelectionIndex

TEAMS = ["a", "b", "c"]
NAMESPACES = ["n0", "n1", "n2", "mon"]
SELECTORS = [
    {},
    {"matchLabels": {"team": "a"}},
    {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "b"]}]},
    {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]},
    {"matchExpressions": [{"key": "team", "operator": "Bogus", "values": ["a"]}]},  # invalid: selects nothing
]
NS_SELECTORS = [None, {}, {"matchLabels": {"env": "prod"}}, {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}]


class World:
    """The informer's view: objects are replaced (never changed in place), with a new resourceVersion."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.rv = 0
        self.monitors: dict[tuple[str, str], dict] = {}
        self.rules: dict[tuple[str, str], dict] = {}
        self.namespaces = {n: self._ns(n, rng.choice(["prod", "dev", None])) for n in NAMESPACES}
        self.prometheus = self._prom(SELECTORS[0], NS_SELECTORS[1], SELECTORS[1])
        for i in range(30):
            self.add(self.monitors, f"sm-{i}")
        for i in range(8):
            self.add(self.rules, f"r-{i}")

    def next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def _ns(self, name: str, env: str | None) -> dict:
        labels = {"env": env} if env else {}
        return {"metadata": {"name": name, "uid": f"ns-{name}", "resourceVersion": self.next_rv(), "labels": labels}}

    def _prom(self, sel: dict, ns_sel: dict | None, rule_sel: dict) -> dict:
        spec = {"serviceMonitorSelector": sel, "ruleSelector": rule_sel}
        if ns_sel is not None:
            spec["serviceMonitorNamespaceSelector"] = ns_sel
            spec["ruleNamespaceSelector"] = ns_sel
        return {"metadata": {"name": "p", "namespace": "mon", "uid": "p-uid", "resourceVersion": self.next_rv()},
                "spec": spec}

    def _obj(self, ns: str, name: str, uid: bool = True) -> dict:
        team = self.rng.choice([*TEAMS, None])
        md = {"name": name, "namespace": ns, "labels": {"team": team} if team else {}}
        if uid:
            md.update(uid=f"{ns}/{name}/{self.rv}", resourceVersion=self.next_rv())
        return {"metadata": md, "spec": {"endpoints": [{"port": "web"}]}}

    def add(self, table: dict, name: str) -> None:
        ns = self.rng.choice(NAMESPACES)
        table[(ns, name)] = self._obj(ns, name, uid=self.rng.random() > 0.1)

    def step(self) -> str:
        rng = self.rng
        op = rng.choice(["relabel", "relabel", "status", "delete", "add", "ns", "selector", "rule", "none"])
        table = rng.choice([self.monitors, self.monitors, self.rules])
        if op in ("relabel", "status", "delete") and table:
            key = rng.choice(sorted(table))
            old = table[key]
            if op == "delete":
                del table[key]
            elif op == "status":  # a new dict, same content, new version (a status write)
                md = {**old["metadata"]}
                if "uid" in md:
                    md["resourceVersion"] = self.next_rv()
                table[key] = {**old, "metadata": md, "status": {"bindings": [self.rv]}}
            else:
                table[key] = {**self._obj(*key, uid="uid" in old["metadata"]),
                              "metadata": {**self._obj(*key)["metadata"], "uid": old["metadata"].get("uid", "x")}}
                if "uid" not in old["metadata"]:
                    del table[key]["metadata"]["uid"]
        elif op == "add":
            self.add(table, f"new-{self.rv}-{rng.randrange(1000)}")
        elif op == "ns":
            name = rng.choice(NAMESPACES)
            self.namespaces[name] = self._ns(name, rng.choice(["prod", "dev", None]))
        elif op == "selector":
            self.prometheus = self._prom(rng.choice(SELECTORS), rng.choice(NS_SELECTORS), rng.choice(SELECTORS))
        elif op == "rule":
            self.add(self.rules, f"r-{self.rv}")
        return op

    def inputs(self) -> RenderInputs:
        # a fresh list per render, with the same dicts for unchanged objects (as the informer's list())
        return RenderInputs(prometheus=self.prometheus, service_monitors=list(self.monitors.values()),
                            prometheus_rules=list(self.rules.values()), namespaces=list(self.namespaces.values()))


def by_name(decisions, objs):
    chosen = {(d.namespace, d.name) for d in decisions if d.selected}
    return [o for o in objs if obj_meta(o) in chosen]


@pytest.mark.parametrize("seed", range(12))
def test_incremental_selection_equals_full_select_over_random_edits(seed):
    rng = random.Random(seed)
    world, cache = World(rng), RenderCache(max_renders=2)
    ops = []
    for _ in range(120):
        ops.append(world.step())
        inputs = world.inputs()
        for _twice in range(2):  # references() then render(): the same lists asked twice
            got_warnings, want_warnings = [], []
            got = select_all(inputs, got_warnings, None, cache)
            want = select_all(inputs, want_warnings, None, None)
            assert got == want, f"seed {seed}, after {ops[-5:]}"
            assert got_warnings == want_warnings
            for kind, objs in (("ServiceMonitor", inputs.service_monitors), ("PrometheusRule", inputs.prometheus_rules)):
                picked = cache.selection_index(kind).selected(objs)
                assert picked is not None and [id(o) for o in picked] == [id(o) for o in by_name(want[kind], objs)]
    index = cache.selection_index("ServiceMonitor")
    assert index.full_updates < len(ops)  # edits of a monitor were incremental, not full recomputes


def test_an_edit_decides_on_the_changed_object_only(monkeypatch):
    """The point of the index: after an edit of one object, one decision is made, not one per candidate."""
    world = World(random.Random(99))
    cache = RenderCache()
    select_all(world.inputs(), None, None, cache)
    calls = []
    index = cache.selection_index("ServiceMonitor")
    real = index._decide  # noqa: SLF001 - counting the decider's calls
    monkeypatch.setattr(index, "_decide", lambda obj: calls.append(obj_meta(obj)) or real(obj))
    key = sorted(k for k, o in world.monitors.items() if "uid" in o["metadata"])[0]
    old = world.monitors[key]
    world.monitors[key] = {**old, "metadata": {**old["metadata"], "labels": {"team": "b"}, "resourceVersion": world.next_rv()}}
    decisions = select_all(world.inputs(), None, None, cache)["ServiceMonitor"]
    no_uid = sum(1 for o in world.monitors.values() if "uid" not in o["metadata"])
    assert calls.count(key) == 1 and len(calls) == 1 + no_uid  # objects without uid are always decided again
    assert decisions == select(world.prometheus, list(world.monitors.values()), "ServiceMonitor", list(world.namespaces.values()))


def test_the_same_object_twice_is_decided_as_select_does():
    obj = {"metadata": {"name": "x", "namespace": "mon", "uid": "u", "resourceVersion": "1"}}
    prom = {"metadata": {"name": "p", "namespace": "mon"}, "spec": {"serviceMonitorSelector": {}}}
    index = SelectionIndex("ServiceMonitor")
    for _ in range(2):
        got, _ = index.update("basis", prom, [obj, obj], [])
        assert got == select(prom, [obj, obj], "ServiceMonitor")


@pytest.mark.parametrize("with_uid", [True, False])
def test_an_object_changed_in_place_is_decided_again(with_uid):
    """A caller may change a dict in place between renders (tests, the CLI): with a uid it must bump the
    resourceVersion (the render cache's contract), without one the object is never trusted."""
    md = {"name": "x", "namespace": "mon", "labels": {"team": "a"}}
    if with_uid:
        md.update(uid="u", resourceVersion="1")
    obj = {"metadata": md}
    prom = {"metadata": {"name": "p", "namespace": "mon"}, "spec": {"serviceMonitorSelector": {"matchLabels": {"team": "a"}}}}
    cache = RenderCache()
    inputs = RenderInputs(prometheus=prom, service_monitors=[obj])
    assert select_all(inputs, None, None, cache)["ServiceMonitor"][0].selected
    md["labels"] = {"team": "b"}
    if with_uid:
        md["resourceVersion"] = "2"
    assert not select_all(inputs, None, None, cache)["ServiceMonitor"][0].selected


def test_per_objects_reuses_only_the_same_object_at_the_same_version():
    """RenderCache.per_objects (references and unsupported-field warnings per render) looks unchanged
    objects up by identity: a new resourceVersion, a new dict or a missing uid computes again."""
    cache = RenderCache()
    calls = []

    def compute(obj):
        calls.append(obj["metadata"]["name"])
        return obj["metadata"].get("labels", {}).get("team")

    a = {"metadata": {"name": "a", "uid": "ua", "resourceVersion": "1", "labels": {"team": "x"}}}
    b = {"metadata": {"name": "b", "labels": {"team": "y"}}}  # no uid: keyed by its content, not identity
    assert cache.per_objects("t", [a, b], compute) == ["x", "y"]
    assert cache.per_objects("t", [a, b], compute) == ["x", "y"] and calls == ["a", "b"]
    a["metadata"].update(labels={"team": "z"}, resourceVersion="2")
    b["metadata"]["labels"] = {"team": "w"}
    assert cache.per_objects("t", [a, b], compute) == ["z", "w"] and calls == ["a", "b", "a", "b"]
    a2 = {"metadata": {**a["metadata"], "labels": {"team": "q"}, "resourceVersion": "3"}}
    assert cache.per_objects("t", [a2], compute) == ["q"]
