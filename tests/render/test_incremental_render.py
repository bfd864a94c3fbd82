"""An edit's render patches the last one (promop.render.listdiff, assembly, the cache's list passes):
the output must be exactly the uncached render's after any sequence of edits.

Seeded random sequences over a few hundred ServiceMonitors (enough for a config of many gzip
members, and, with a low --config-secret-max-bytes, a split): edits of one or several monitors
(new path, new job count, a monitor turned invalid and back, one that reads a Secret, a Secret
value changed, one rename), status-only writes (a new dict and version, same content),
additions and deletions, and an in-place change with a bumped resourceVersion. After each step
render(inputs, cache) is compared with render(inputs) field by field.
"""

from __future__ import annotations

import base64
import random

import pytest

from promop.render import RenderCache, RenderInputs, render
from promop.render.model import RenderOptions

from .helpers import prometheus_obj, secret, service_monitor

N = 600


class World:
    def __init__(self, rng: random.Random, limit: int | None) -> None:
        self.rng, self.rv = rng, 0
        self.monitors: dict[str, dict] = {}
        self.token = "one"
        self.limit = limit
        self.parts = 0
        for i in range(N):  # one in ten reads the Secret, a few are rejected
            self.monitors[f"sm-{i:04d}"] = self.make(f"sm-{i:04d}", 1 if i % 10 == 1 else 3 if i % 50 == 3 else 0)

    def next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def make(self, name: str, variant: int = 0) -> dict:
        endpoints = [{"port": "web", "path": f"/m{variant}"}]
        if variant % 5 == 1:
            endpoints.append({"port": "metrics", "bearerTokenSecret": {"name": "creds", "key": "token"}})
        if variant % 5 == 2:
            endpoints.append({"port": "other", "interval": "10s"})
        if variant % 5 == 3:
            endpoints = [{"port": "web", "scheme": "bogus-scheme"}]  # invalid: rejected
        if variant % 5 == 4:
            endpoints.append({"port": "web", "bearerTokenSecret": {"name": "absent", "key": "token"}})  # rejected
        sm = service_monitor(name, namespace=f"ns-{sum(map(ord, name)) % 7}", endpoints=endpoints)
        sm["metadata"].update(uid=f"uid-{name}", resourceVersion=self.next_rv())
        return sm

    def step(self) -> str:
        rng, names = self.rng, sorted(self.monitors)
        op = rng.choice(["edit", "edit", "edit", "many", "status", "add", "delete", "secret", "inplace", "none"])
        if op == "edit":
            name = rng.choice(names)
            self.monitors[name] = self.make(name, rng.randrange(50))
        elif op == "many":
            for name in rng.sample(names, 5):
                self.monitors[name] = self.make(name, rng.randrange(50))
        elif op == "status":
            name = rng.choice(names)
            old = self.monitors[name]
            self.monitors[name] = {**old, "metadata": {**old["metadata"], "resourceVersion": self.next_rv()},
                                   "status": {"bindings": [self.rv]}}
        elif op == "add":
            name = f"new-{self.rv}"
            self.monitors[name] = self.make(name, rng.randrange(50))
        elif op == "delete":
            del self.monitors[rng.choice(names)]
        elif op == "secret":
            self.token = {"one": "two", "two": "three", "three": "one"}[self.token]
        elif op == "inplace":  # a caller changing a dict in place, bumping its version (the cache's contract)
            md = self.monitors[rng.choice(names)]
            md["spec"]["endpoints"][0]["path"] = f"/inplace-{self.rv}"
            md["metadata"]["resourceVersion"] = self.next_rv()
        return op

    def inputs(self) -> RenderInputs:
        options = RenderOptions(config_secret_max_bytes=self.limit) if self.limit else RenderOptions()
        return RenderInputs(prometheus_obj(version="v2.45.0"), service_monitors=list(self.monitors.values()),
                            secrets={(f"ns-{k}", "creds"): secret("creds", namespace=f"ns-{k}", token=self.token)
                                     for k in range(7)},
                            options=options, config_parts=self.parts)


def _same(got, want) -> None:
    assert got.job_count == want.job_count == len(want.config["scrape_configs"])
    assert got.config_text == want.config_text
    assert got.config == want.config
    assert got.objects() == want.objects()
    assert got.rejected == want.rejected and got.warnings == want.warnings and got.selection == want.selection
    assert got.jobs == want.jobs


@pytest.mark.parametrize("seed,limit,keep_jobs", [(0, None, True), (1, None, False), (2, None, True),
                                                  (3, 6_000, True), (4, 6_000, False)])
def test_patched_renders_equal_uncached_renders(seed, limit, keep_jobs):
    """keep_jobs=False is the operator's cache: fragments hold their jobs as text, decoded when read."""
    rng = random.Random(seed)
    world, cache = World(rng, limit), RenderCache(keep_jobs=keep_jobs)
    ops = []
    for _ in range(40):
        ops.append(world.step())
        inputs = world.inputs()
        got = render(inputs, cache)
        want = render(world.inputs())
        try:
            _same(got, want)
        except AssertionError:
            raise AssertionError(f"seed {seed}: differs after {ops[-6:]}") from None
        world.parts = len(got.config_parts)
    if limit:
        assert world.parts >= 2  # the split was exercised
    gz = base64.b64decode(got.config_secret["data"]["prometheus.yaml.gz"])
    assert len(gz) > 0


def test_an_edit_touches_one_fragment_and_one_piece(monkeypatch):
    """The point: after one edit the cache renders one fragment, and the assembly is patched, not redone."""
    from promop.render import assembly
    world, cache = World(random.Random(7), None), RenderCache()
    render(world.inputs(), cache)
    name = "sm-0100"
    world.monitors[name] = world.make(name, 10)  # variant 10: plain, one job, as variant 0
    want = render(world.inputs())
    full = []
    real_assembled, real_cut = assembly._assembled, assembly._cut
    monkeypatch.setattr(assembly, "_assembled", lambda *a: full.append("assemble") or real_assembled(*a))
    monkeypatch.setattr(assembly, "_cut", lambda *a: full.append("cut") or real_cut(*a))
    misses = cache.misses
    _same(render(world.inputs(), cache), want)
    assert cache.misses == misses + 1
    assert full == []


def test_the_operators_cache_keeps_jobs_as_text_only():
    """RenderCache(keep_jobs=False): no fragment holds decoded jobs until someone reads the config."""
    world, cache = World(random.Random(5), None), RenderCache(keep_jobs=False)
    result = render(world.inputs(), cache)
    frags = cache.config_memo.assembled.frags
    assert frags and all(callable(f.__dict__.get("_jobs_value")) for f in frags if f.texts)
    assert result.job_count == len(render(world.inputs()).config["scrape_configs"])
    assert all(callable(f.__dict__.get("_jobs_value")) for f in frags if f.texts)  # job_count decoded nothing
    result.config  # noqa: B018 - reading it decodes
    assert not any(callable(f.__dict__.get("_jobs_value")) for f in frags)
