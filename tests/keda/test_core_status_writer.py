"""The coalescing status writer and the lastActiveTime rule, without a cluster.

The rules (docs/keda.md "Where promop differs"): a scale loop never waits for a status write; per
ScaledObject the latest status wins, one write at a time, failures retried with backoff; and
lastActiveTime is written with another status change, when none is stored, or when the stored one is
min(cooldownPeriod/2, 60 s) old, never on each active poll in between.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from deadlines import scaled

from promop.autoscaler.keda.activetime import persist_last_active, refresh_period
from promop.autoscaler.keda.statuswriter import StatusWriter, patch_from, rebase
from promop.kube.errors import ApiError
from promop.sandbox.patch import merge_patch
from promop.kube.rate_limiter import ItemExponentialFailureRateLimiter
from promop.kube.rate_limiting_queue import RateLimitingQueue
from tests.keda.runtime_harness import wait_for

T0 = datetime(2026, 12, 7, 3, 0, 0, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def iso(seconds: float) -> str:
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- lastActiveTime ---------------------------------------------------------------------------------
def test_refresh_period_is_half_the_cooldown_capped_at_a_minute():
    assert refresh_period(300) == 60
    assert refresh_period(100) == 50
    assert refresh_period(30) == 15
    assert refresh_period(0) == 0


def test_last_active_time_written_only_when_stale_by_the_period():
    old = {"lastActiveTime": iso(0), "conditions": [{"type": "Active", "status": "True"}]}
    for t in (1, 30, 59.9):                # an active poll each: the stored value is kept
        new = {"conditions": [{"type": "Active", "status": "True"}]}
        assert persist_last_active(old, new, at(t), None, 60) == at(0)
        assert new["lastActiveTime"] == iso(0)
    new = {"conditions": [{"type": "Active", "status": "True"}]}
    assert persist_last_active(old, new, at(60), None, 60) == at(60)
    assert new["lastActiveTime"] == iso(60)


def test_last_active_time_exact_with_any_other_change():
    old = {"lastActiveTime": iso(0), "conditions": [{"type": "Active", "status": "True"}]}
    new = {"conditions": [{"type": "Active", "status": "False", "reason": "ScalerCooldown"}]}
    assert persist_last_active(old, new, at(7), None, 60) == at(7)
    assert new["lastActiveTime"] == iso(7)


def test_last_active_time_written_when_none_is_stored_and_kept_unset_when_never_active():
    new: dict = {}
    assert persist_last_active({}, new, at(3), None, 60) == at(3) and new["lastActiveTime"] == iso(3)
    new = {}
    assert persist_last_active({}, new, None, None, 60) is None and "lastActiveTime" not in new


def test_a_value_on_its_way_is_not_overwritten_by_the_caches_older_one():
    old = {"lastActiveTime": iso(0)}       # the cache has not seen the write of 61 s yet
    new: dict = {}
    assert persist_last_active(old, new, at(70), at(61), 60) == at(61)
    assert new["lastActiveTime"] == iso(61)


# -- the writer -------------------------------------------------------------------------------------
class FakeClient:
    """Records status patches; `gate` holds them (a slow apiserver); `fail` answers the next ones."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, dict]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail: list[int] = []
        self.lock = threading.Lock()
        self.inflight: dict[str, int] = {}
        self.max_concurrent = 0
        self.started = threading.Event()

    def patch(self, res, name, body, namespace, subresource=None):
        assert subresource == "status"
        key = f"{namespace}/{name}"
        with self.lock:
            self.inflight[key] = self.inflight.get(key, 0) + 1
            self.max_concurrent = max(self.max_concurrent, self.inflight[key])
        self.started.set()
        try:
            self.gate.wait(30)
            with self.lock:
                if self.fail:
                    code = self.fail.pop(0)
                    raise ApiError(f"injected {code}", status=code)
                self.patches.append((key, body["status"]))
            return {}
        finally:
            with self.lock:
                self.inflight[key] -= 1


@pytest.fixture
def writer():
    client = FakeClient()
    queue = RateLimitingQueue(rate_limiter=ItemExponentialFailureRateLimiter(0.005, 0.05), name=None)
    w = StatusWriter(client, workers=3, queue=queue)
    w.client_fake = client
    w.start()
    yield w
    client.gate.set()
    w.stop(2)


def idle(w: StatusWriter) -> bool:
    return w.backlog() == 0


def test_submit_returns_at_once_while_a_write_hangs(writer):
    fake = writer.client_fake
    fake.gate.clear()
    assert writer.submit("ns/a", "ns", "a", {}, {"x": 1})
    wait_for(fake.started.is_set, what="the write started")
    t = time.monotonic()
    for i in range(50):
        writer.submit("ns/a", "ns", "a", {}, {"x": i + 2})
        writer.submit(f"ns/o{i}", "ns", f"o{i}", {}, {"x": i})
    assert time.monotonic() - t < scaled(1.0)   # no submit waited for the hanging write (held up to 30 s)
    fake.gate.set()
    wait_for(lambda: idle(writer), what="the writer idle")


def test_latest_status_wins_and_one_write_at_a_time_per_object(writer):
    fake = writer.client_fake
    fake.gate.clear()
    writer.submit("ns/a", "ns", "a", {}, {"v": 1})
    wait_for(fake.started.is_set, what="the first write in flight")
    for v in (2, 3, 4):                     # while it hangs: coalesced into one more write
        writer.submit("ns/a", "ns", "a", {}, {"v": v})
    fake.gate.set()
    wait_for(lambda: idle(writer), what="the writer idle")
    assert [p for _, p in fake.patches] == [{"v": 1}, {"v": 4}]
    assert fake.max_concurrent == 1


@pytest.mark.parametrize("code", [409, 429, 500, 0])
def test_a_failed_write_is_retried_with_the_latest_status(writer, code):
    fake = writer.client_fake
    fake.fail = [code, code]
    writer.submit("ns/a", "ns", "a", {"v": 0}, {"v": 1})
    wait_for(lambda: idle(writer) and fake.patches, what="the write after two failures")
    assert fake.patches == [("ns/a", {"v": 1})]


def test_a_refused_write_is_not_retried(writer):
    fake = writer.client_fake
    fake.fail = [422]
    writer.submit("ns/a", "ns", "a", {"v": 0}, {"v": 1})
    wait_for(lambda: idle(writer), what="the writer idle")
    writer.submit("ns/b", "ns", "b", {"v": 0}, {"v": 1})   # a later write goes through: the queue moved on
    wait_for(lambda: fake.patches, what="b written")
    assert fake.patches == [("ns/b", {"v": 1})]


def test_nothing_to_write_is_not_written_nor_rewritten_from_a_stale_cache(writer):
    fake = writer.client_fake
    assert not writer.submit("ns/a", "ns", "a", {"v": 1}, {"v": 1})
    assert writer.submit("ns/a", "ns", "a", {"v": 1}, {"v": 2})
    wait_for(lambda: idle(writer) and fake.patches, what="written")
    # the cache still shows v=1: the same status again is not a second write
    assert not writer.submit("ns/a", "ns", "a", {"v": 1}, {"v": 2})
    assert fake.patches == [("ns/a", {"v": 2})]


def test_write_now_waits_for_the_write_in_flight_and_supersedes_the_waiting_one(writer):
    fake = writer.client_fake
    fake.gate.clear()
    writer.submit("ns/a", "ns", "a", {}, {"c": "loop1", "lastActiveTime": iso(5)})
    wait_for(fake.started.is_set, what="the loop's write in flight")
    writer.submit("ns/a", "ns", "a", {}, {"c": "loop2", "lastActiveTime": iso(9)})
    done = threading.Event()

    def reconcile() -> None:
        writer.write_now("ns/a", "ns", "a", {}, {"c": "reconcile", "lastActiveTime": iso(1)})
        done.set()

    threading.Thread(target=reconcile, daemon=True).start()
    assert not done.wait(0.3)                # the write in flight is not doubled
    fake.gate.set()
    wait_for(done.is_set, what="the reconcile's write")
    wait_for(lambda: idle(writer), what="the writer idle")
    assert fake.max_concurrent == 1
    # the reconcile's status is the last word (loop2 is written before it only if a writer thread took it
    # first), keeping the newer lastActiveTime the reconcile's stale view lacks
    written = [p.get("c") for _, p in fake.patches]
    assert written[0] == "loop1" and written[-1] == "reconcile" and len(written) <= 3
    assert fake.patches[-1][1]["lastActiveTime"] == iso(9)


def test_write_now_raises_the_apiservers_error():
    fake = FakeClient()
    fake.fail = [409]
    w = StatusWriter(fake, workers=1)
    with pytest.raises(ApiError):
        w.write_now("ns/a", "ns", "a", {}, {"v": 1})


def test_the_patch_covers_every_status_the_server_may_hold():
    desired = {"a": 1, "h": {"x": 1}}
    patch = patch_from([{"a": 1, "h": {"x": 1}, "gone": 3}, {"a": 0, "h": {"x": 0, "y": 2}}], desired)
    assert patch == {"a": 1, "h": {"x": 1, "y": None}, "gone": None}


def test_a_reconcile_keeps_what_the_waiting_loop_status_says_beyond_its_own_change():
    """The reconcile's cache lacks the loop's status (it is still waiting): its write must carry its
    own change (Ready) and keep the loop's (Active, triggersActivity), not replace them."""
    fake = FakeClient()
    w = StatusWriter(fake, workers=1)            # not started: the loop's status waits
    cached = {"conditions": [{"type": "Ready", "status": "Unknown"}, {"type": "Active", "status": "Unknown"}]}
    loop = {"conditions": [{"type": "Ready", "status": "Unknown"}, {"type": "Active", "status": "True"}],
            "triggersActivity": {"s0-prometheus": {"isActive": True}}}
    w.submit("ns/a", "ns", "a", cached, loop)
    reconciled = {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Active", "status": "Unknown"}],
                  "hpaName": "keda-hpa-a"}
    w.write_now("ns/a", "ns", "a", cached, reconciled)
    (_, patch), = fake.patches
    assert patch["conditions"] == [{"type": "Ready", "status": "True"}, {"type": "Active", "status": "True"}]
    assert patch["triggersActivity"] == {"s0-prometheus": {"isActive": True}}
    assert patch["hpaName"] == "keda-hpa-a"


def test_rebase_takes_the_reconciles_changes_and_removals_only():
    onto = {"a": 1, "b": 2, "conditions": [{"type": "X", "status": "True"}, {"type": "Y", "status": "True"}]}
    old = {"a": 0, "b": 2, "gone": 1, "conditions": [{"type": "X", "status": "False"}, {"type": "Y", "status": "False"}]}
    new = {"a": 0, "b": 3, "conditions": [{"type": "X", "status": "False"}, {"type": "Z", "status": "True"}]}
    assert rebase(old, new, onto) == {"a": 1, "b": 3, "conditions": [{"type": "X", "status": "True"},
                                                                      {"type": "Z", "status": "True"}]}


# -- statuses built on a cache that has not seen our last write yet -------------------------------------
def server_status(fake: FakeClient) -> dict:
    status: dict = {}
    for _, patch in fake.patches:
        status = merge_patch(status, patch)  # RFC 7386, as the apiserver applies each
    return status


RECONCILED = {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Active", "status": "Unknown"}],
              "hpaName": "keda-hpa-a"}
LOOP = {"conditions": [{"type": "Active", "status": "True"}], "triggersActivity": {"s0": {"isActive": True}}}


def test_a_loop_status_from_the_stale_cache_does_not_undo_the_reconcile_write_in_flight(writer):
    """CI's real-tier failure: the loop read the cache (no status yet), the reconcile's write went out,
    then the loop's status was patched from the reconcile's as a base: hpaName null, Ready lost."""
    fake = writer.client_fake
    fake.gate.clear()
    t = threading.Thread(target=writer.write_now, args=("ns/a", "ns", "a", {}, RECONCILED))
    t.start()
    wait_for(fake.started.is_set, what="the reconcile's write in flight")
    assert writer.submit("ns/a", "ns", "a", {}, LOOP)
    fake.gate.set()
    t.join(5)
    wait_for(lambda: idle(writer), what="the writer idle")
    status = server_status(fake)
    assert status["hpaName"] == "keda-hpa-a"
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Ready": "True", "Active": "True"}
    assert status["triggersActivity"] == {"s0": {"isActive": True}}


def test_a_loop_status_from_the_stale_cache_does_not_undo_the_reconcile_write_just_done(writer):
    fake = writer.client_fake
    writer.write_now("ns/a", "ns", "a", {}, RECONCILED)
    assert writer.submit("ns/a", "ns", "a", {}, LOOP)     # the cache still has no status
    wait_for(lambda: idle(writer), what="the writer idle")
    status = server_status(fake)
    assert status["hpaName"] == "keda-hpa-a"
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Ready": "True", "Active": "True"}


def test_a_reconcile_from_the_stale_cache_keeps_the_loop_status_just_written(writer):
    fake = writer.client_fake
    cached = {"conditions": [{"type": "Ready", "status": "Unknown"}, {"type": "Active", "status": "Unknown"}]}
    loop = {**LOOP, "conditions": [{"type": "Ready", "status": "Unknown"}, {"type": "Active", "status": "True"}]}
    assert writer.submit("ns/a", "ns", "a", cached, loop)
    wait_for(lambda: idle(writer) and fake.patches, what="the loop's write")
    writer.write_now("ns/a", "ns", "a", cached, RECONCILED)   # built on the cache, which lags the loop's write
    status = server_status(fake)
    assert status["hpaName"] == "keda-hpa-a"
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Ready": "True", "Active": "True"}
    assert status["triggersActivity"] == {"s0": {"isActive": True}}


def obj(rv: str, status: dict | None = None) -> dict:
    return {"metadata": {"resourceVersion": rv}, "status": status or {}}


class RvClient(FakeClient):
    """Answers each patch with the next resourceVersion, as the apiserver does."""

    rv = 10

    def patch(self, res, name, body, namespace, subresource=None):
        super().patch(res, name, body, namespace, subresource)
        self.rv += 1
        return {"metadata": {"resourceVersion": str(self.rv)}}


def test_latest_is_our_last_write_until_the_cache_shows_it_then_the_cache():
    fake = RvClient()
    w = StatusWriter(fake, workers=1)
    assert w.latest("ns/a", obj("10", {"x": 1})) == {"x": 1}          # nothing written: the cache
    w.write_now("ns/a", "ns", "a", {"x": 1}, {"x": 2})                 # answered with rv 11
    assert w.latest("ns/a", obj("10", {"x": 1})) == {"x": 2}          # the cache lags: our write
    assert w.latest("ns/a", obj("12", {"x": 5})) == {"x": 5}          # newer than our write: the cache
    assert w.latest("ns/a", obj("10", {"x": 1})) == {"x": 1}          # the view was dropped
    w.write_now("ns/a", "ns", "a", {"x": 5}, {"x": 6})
    w.forget("ns/a")                                                   # deleted: nothing of it is kept
    assert w.latest("ns/a", obj("1", {})) == {}


def test_a_loop_decision_equal_to_the_stale_cache_still_wins_over_its_own_last_write():
    """Poll N wrote Active=True; poll N+1 (the cache still shows False) decides False: built on latest(),
    its False is a change and is written, not lost in a rebase."""
    fake = RvClient()
    w = StatusWriter(fake, workers=1)
    cached = obj("10", {"conditions": [{"type": "Active", "status": "False"}]})
    w.write_now("ns/a", "ns", "a", cached["status"], {"conditions": [{"type": "Active", "status": "True"}]})
    base = w.latest("ns/a", cached)
    assert base == {"conditions": [{"type": "Active", "status": "True"}]}
    w.write_now("ns/a", "ns", "a", base, {"conditions": [{"type": "Active", "status": "False"}]})
    assert server_status(fake)["conditions"] == [{"type": "Active", "status": "False"}]
