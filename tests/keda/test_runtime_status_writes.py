"""Status writes of the ScaledObject controller on the sandbox: lastActiveTime's rule, the cooldown, a
restart, and scale loops that never wait for a status write.

The rule is promop's documented deviation from KEDA (docs/keda.md "Where promop differs"): KEDA writes
lastActiveTime on every active poll; promop keeps it exact in memory (the cooldown reads that) and
writes it with another status change, when none is stored, or when the stored one is
min(cooldownPeriod/2, 60 s) old, so a restart shortens one cooldown by less than that. The cooldown
itself is KEDA's (reference keda.md §2.5): scale to zero once lastActiveTime + cooldownPeriod < now.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from deadlines import scaled

from promop.autoscaler.keda.cache import ResultCache
from promop.autoscaler.keda.controller import KedaController
from promop.autoscaler.keda.resources import DEPLOYMENTS, SCALEDOBJECTS
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError
from tests.keda.runtime_harness import KedaHarness, deployment, scaled_object, wait_for

T0 = datetime(2026, 12, 7, 3, 0, 0, tzinfo=timezone.utc)
KEY = "default/w"
COOLDOWN = 20          # refresh period min(20/2, 60) = 10 s


def iso(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def h(sandbox):
    harness = KedaHarness(sandbox)
    yield harness
    harness.close()


class Wall:
    """The controller's wall clock, moved by the test (the polls are driven by the test too)."""

    def __init__(self) -> None:
        self.t = T0

    def at(self, seconds: float) -> None:
        self.t = T0 + timedelta(seconds=seconds)

    def __call__(self) -> datetime:
        return self.t


def manual_controller(h: KedaHarness, wall: Wall) -> KedaController:
    """Informers and the status writer running; reconciles and polls only when the test calls them."""
    ctl = KedaController(KubeClient(h.sandbox.api_client()), wall=wall, first_tick_jitter=False,
                         informer_kwargs={"backoff_base": 0.05, "backoff_cap": 0.5})
    # the shared query cache on the test's clock too: a value is fresh for one polling interval of it
    ctl.cache = ctl.evaluator.cache = ResultCache(clock=lambda: wall().timestamp())
    ctl.start_informers()
    assert ctl.wait_for_sync(scaled(20)), ctl.readiness()
    ctl.status_writer.start()
    wait_for(lambda: ctl.scaledobjects.store.get(KEY), what="the ScaledObject in the cache")
    ctl.process(KEY)
    assert KEY in ctl.states, "the reconcile started no loop"
    return ctl


def stored(h: KedaHarness) -> str | None:
    return ((h.so("w") or {}).get("status") or {}).get("lastActiveTime")


def poll(h: KedaHarness, ctl: KedaController, wall: Wall, seconds: float) -> None:
    """One poll at T0+seconds, then until its status is written and back in the controller's cache."""
    wall.at(seconds)
    ctl.scale_loop.poll(KEY)
    wait_for(lambda: ctl.status_writer.backlog() == 0, what="the status writer idle")
    server = (h.so("w") or {}).get("status")
    wait_for(lambda: (ctl.scaledobjects.store.get(KEY) or {}).get("status") == server, what="the cache up to date")


def make(h: KedaHarness) -> None:
    h.client.create(DEPLOYMENTS, deployment("w", 1), "default")
    h.prom.set("q_w", "25")
    h.client.create(SCALEDOBJECTS, scaled_object("w", "w", h.prom.url, "q_w", cooldownPeriod=COOLDOWN,
                                                 pollingInterval=1), "default")


def test_last_active_time_is_refreshed_by_period_and_the_cooldown_reads_memory(h):
    make(h)
    wall = Wall()
    ctl = manual_controller(h, wall)
    try:
        poll(h, ctl, wall, 0)
        assert stored(h) == iso(0)                  # none stored: written
        for t in (3, 6, 9):                         # active polls within the period: not written
            poll(h, ctl, wall, t)
            assert stored(h) == iso(0), f"lastActiveTime written by the active poll at {t} s"
        poll(h, ctl, wall, 10)                      # stored one 10 s old: refreshed
        assert stored(h) == iso(10)
        poll(h, ctl, wall, 15)                      # memory 15, stored 10
        assert stored(h) == iso(10)
        h.prom.set("q_w", "0")
        poll(h, ctl, wall, 31)                      # 15 + 20 > 31: cooling down (the stored 10 + 20 is past)
        assert h.replicas("w") == 1
        assert h.condition("w", "Active").get("reason") == "ScalerCooldown"
        assert stored(h) == iso(15)                 # written exactly with the Active change
        poll(h, ctl, wall, 36)
        assert h.replicas("w") == 0
    finally:
        ctl.stop(2)


def test_after_a_restart_the_cooldown_is_at_most_the_refresh_period_shorter(h):
    make(h)
    wall = Wall()
    ctl = manual_controller(h, wall)
    try:
        for t in (0, 9, 11, 15):                    # stored: 0, then 11 (11 s old >= 10); memory 15
            poll(h, ctl, wall, t)
        assert stored(h) == iso(11)
    finally:
        ctl.stop(2)
    h.prom.set("q_w", "0")
    wall.at(16)
    fresh = manual_controller(h, wall)              # reads lastActiveTime from the status
    try:
        poll(h, fresh, wall, 30)                    # KEDA (exact 15) would wait until 35; the bound is 35 - 10
        assert h.replicas("w") == 1
        poll(h, fresh, wall, 32)                    # 11 + 20 < 32: the cooldown ended 4 s early (<= 10 s)
        assert h.replicas("w") == 0
    finally:
        fresh.stop(2)


class StatusGate:
    """Makes every ScaledObject status PATCH hang (`slow`) or answer 429 (`refused`) once armed."""

    def __init__(self, client: KubeClient, mode: str) -> None:
        self.armed = threading.Event()
        self.release = threading.Event()
        self.mode = mode
        self.calls = 0
        inner = client.patch

        def patch(res, name, body, namespace=None, **kw):
            if self.armed.is_set() and kw.get("subresource") == "status" and res.plural == "scaledobjects":
                self.calls += 1
                if mode == "refused":
                    raise ApiError("injected: too many requests", status=429)
                self.release.wait(scaled(60))
            return inner(res, name, body, namespace, **kw)

        client.patch = patch


@pytest.mark.parametrize("mode", ["slow", "refused"])
def test_a_hanging_or_refused_status_write_delays_no_poll(h, mode):
    for name in ("a", "b"):
        h.client.create(DEPLOYMENTS, deployment(name, 1), "default")
        h.prom.set(f"q_{name}", "25")
        # cooldown 2 s: lastActiveTime is due every second, so every poll has a status to write
        h.client.create(SCALEDOBJECTS, scaled_object(name, name, h.prom.url, f"q_{name}", cooldownPeriod=2),
                        "default")
    client = KubeClient(h.sandbox.api_client())
    gate = StatusGate(client, mode)
    # one loop thread: a poll waiting for its status write would stop every other poll
    ctl = KedaController(client, loop_workers=1, status_workers=2,
                         informer_kwargs={"backoff_base": 0.05, "backoff_cap": 0.5})
    h.controller = ctl
    ctl.start_informers()
    assert ctl.wait_for_sync(scaled(20))
    ctl.start_workers()
    try:
        for name in ("a", "b"):
            wait_for(lambda n=name: h.condition(n, "Ready").get("reason") == "ScaledObjectReady", what=f"{name} Ready")
        gate.armed.set()
        wait_for(lambda: gate.calls >= 1, what="a status write caught by the gate")
        before = {n: h.prom.count(f"q_{n}") for n in ("a", "b")}
        # pollingInterval 1 s: four more polls of each while the writes hang or fail
        wait_for(lambda: all(h.prom.count(f"q_{n}") >= before[n] + 4 for n in ("a", "b")),
                 timeout=20, what="polls of both ScaledObjects going on")
        assert ctl.status_writer.backlog() >= 1
    finally:
        gate.release.set()
