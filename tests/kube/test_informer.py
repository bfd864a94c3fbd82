"""Informers against the API sandbox over HTTP.

After every fault the sandbox can inject, the cache must equal a fresh LIST and the
handlers must have seen each object's final state. Timings are shrunk through the
informer's parameters; every wait is a poll with a deadline.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid

import pytest
from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.informer import Informer
from promop.kube.resources import CONFIGMAPS, NAMESPACES
from promop.kube.store import Tombstone, object_key
from deadlines import scaled
from kube.kube_testlib import own_requests, tag, wait_until

FAST = dict(backoff_base=0.02, backoff_cap=0.2, idle_timeout=3.0, min_watch_duration=0.05)


class Recorder:
    """Handler that keeps what it was told: key -> last object, plus the raw event log."""

    def __init__(self):
        self.lock = threading.Lock()
        self.state: dict[str, dict] = {}
        self.log: list[tuple] = []

    def on_add(self, obj, initial):
        with self.lock:
            self.state[object_key(obj)] = obj
            self.log.append(("add", object_key(obj), initial))

    def on_update(self, old, new):
        with self.lock:
            self.state[object_key(new)] = new
            self.log.append(("update", object_key(new), old is new))

    def on_delete(self, obj):
        with self.lock:
            self.state.pop(object_key(obj), None)
            self.log.append(("delete", object_key(obj), isinstance(obj, Tombstone)))

    def handlers(self):
        return dict(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)

    def rvs(self):
        with self.lock:
            return {k: o["metadata"]["resourceVersion"] for k, o in self.state.items()}

    def events(self, kind):
        with self.lock:
            return [e for e in self.log if e[0] == kind]


def rvs(objs):
    return {object_key(o): o["metadata"]["resourceVersion"] for o in objs}


def assert_converges(kube, informer, recorder, namespace=None, timeout=15.0, **list_kw):
    """Cache == fresh LIST == what the handler last saw, by resourceVersion."""
    last = {}

    def ok():
        fresh = rvs(kube.list_all(CONFIGMAPS, namespace, **list_kw)[0])
        last.update(fresh=fresh, store=rvs(informer.store.list()), handler=recorder.rvs())
        return fresh == last["store"] == last["handler"]

    try:
        wait_until(ok, "the cache and handlers to converge", timeout)
    except AssertionError:
        f, s, h = last["fresh"], last["store"], last["handler"]
        raise AssertionError(
            f"not converged: missing in store {sorted(set(f) - set(s))[:5]}, extra in store "
            f"{sorted(set(s) - set(f))[:5]}, stale in store {[k for k in f if k in s and s[k] != f[k]][:5]}, "
            f"handler differs on {[k for k in set(f) | set(h) if f.get(k) != h.get(k)][:5]}"
        ) from None


def watching(kube, informer, *namespaces):
    """Returns once the informer's watch (one per namespace) is open and delivering: a fault
    injected before that could miss a watch the server has not registered yet."""
    for ns in namespaces or ("default",):
        name = f"marker-{len(informer.store)}-{time.monotonic_ns()}"
        kube.create(CONFIGMAPS, cm(name, ns=ns))
        wait_until(lambda: informer.store.get(f"{ns}/{name}") is not None, what=f"the watch in {ns}")


@contextlib.contextmanager
def disconnected(sandbox, informer):
    """The informer's watches are closed and cannot come back (429s) while the body runs;
    then the event history is compacted, so whatever happened meanwhile is only learnt by a relist.

    Closing the open streams is not enough: a watch request that passed the sandbox's
    fault check just before the 429s were injected registers after close_watches() and
    would stream the body's changes live. So the body runs only once every reflector
    has had a watch refused: a reflector sends one request at a time, so from then on
    it has no stream, and every new request it makes is refused."""
    client = informer.client.api_client
    seen = len(own_requests(sandbox, client))
    sandbox.faults.fail_next(10**6, 429, verb="watch")

    def all_refused() -> bool:
        sandbox.faults.close_watches()  # again: closes a stream that registered late
        refused = {r.namespace for r in own_requests(sandbox, client)[seen:] if r.verb == "watch" and r.code == 429}
        return all(reflector.namespace in refused for reflector in informer.reflectors)

    wait_until(all_refused, "every reflector's watch to be refused")
    yield
    sandbox.faults.compact()
    sandbox.faults.clear()


def kube_keys(kube, *namespaces):
    return [object_key(o) for ns in namespaces for o in kube.list_all(CONFIGMAPS, ns)[0]]


def cm(name, ns="default", labels=None, **data):
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "data": data}


@pytest.fixture
def registry():
    return CollectorRegistry()


@pytest.fixture
def kube(api_client, registry):
    tag(api_client)
    return KubeClient(api_client, qps=0, burst=0, pool_size=16, registry=registry)


@pytest.fixture
def make_informer(kube, registry):
    made = []

    def make(res=CONFIGMAPS, recorder=None, **kw):
        params = dict(FAST, registry=registry)
        params.update(kw)
        inf = Informer(kube, res, **params)
        if recorder is not None:
            inf.add_handler(**recorder.handlers())
        made.append(inf)
        return inf

    yield make
    for inf in made:
        inf.stop(timeout=5)


def metric(registry, name):
    return registry.get_sample_value(name, {"resource": "configmaps"}) or 0.0


def churn(kube, prefix, n=6):
    """Creates, updates and deletes, so every event type is in flight."""
    for i in range(n):
        kube.create(CONFIGMAPS, cm(f"{prefix}{i}", v="0"))
    for i in range(0, n, 2):
        kube.patch(CONFIGMAPS, f"{prefix}{i}", {"data": {"v": "1"}}, "default")
    for i in range(1, n, 3):
        kube.delete(CONFIGMAPS, f"{prefix}{i}", "default")


def test_initial_sync_then_live_events(kube, make_informer, registry):
    for i in range(5):
        kube.create(CONFIGMAPS, cm(f"pre{i}"))
    rec = Recorder()
    inf = make_informer(recorder=rec)
    assert not inf.has_synced()
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    assert rvs(inf.store.list()) == rvs(kube.list_all(CONFIGMAPS)[0])
    wait_until(lambda: len(rec.events("add")) == 5)
    assert all(initial for _, _, initial in rec.events("add"))
    churn(kube, "live")
    assert_converges(kube, inf, rec)
    live_adds = [e for e in rec.events("add") if e[1].startswith("default/live")]
    assert live_adds and not any(initial for _, _, initial in live_adds)
    assert not any(tomb for _, _, tomb in rec.events("delete"))  # seen live, so real final states
    assert metric(registry, "prometheus_operator_list_operations_total") == 1
    assert metric(registry, "prometheus_operator_watch_operations_total") >= 1
    # managedFields are stripped by the default transform
    assert all("managedFields" not in o["metadata"] for o in inf.store.list())


def test_handler_sees_every_change_of_one_object_in_order(kube, make_informer):
    kube.create(CONFIGMAPS, cm("seq", v="0"))
    seen = []
    inf = make_informer()
    inf.add_handler(on_add=lambda o, i: seen.append(o["data"]["v"]),
                    on_update=lambda old, new: seen.append(new["data"]["v"]))
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    for v in range(1, 30):
        kube.patch(CONFIGMAPS, "seq", {"data": {"v": str(v)}}, "default")
    wait_until(lambda: len(seen) == 30, what="30 notifications")
    assert seen == [str(v) for v in range(30)]


def test_dropped_watches_rewatch_without_relist(kube, sandbox, make_informer, registry):
    rec = Recorder()
    inf = make_informer(recorder=rec)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    watching(kube, inf)
    for round_ in range(4):
        churn(kube, f"r{round_}-")
        sandbox.faults.close_watches()
    assert_converges(kube, inf, rec)
    assert metric(registry, "prometheus_operator_list_operations_total") == 1
    assert sandbox.count_requests(verb="list", resource="configmaps") >= 1
    assert metric(registry, "prometheus_operator_watch_operations_total") >= 2


def test_compaction_relists_and_deletes_while_disconnected_become_tombstones(kube, sandbox, make_informer, registry):
    for i in range(6):
        kube.create(CONFIGMAPS, cm(f"t{i}", v="0"))
    rec = Recorder()
    inf = make_informer(recorder=rec)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    watching(kube, inf)
    wait_until(lambda: len(rec.rvs()) == 7)  # 6 + the marker
    with disconnected(sandbox, inf):
        kube.delete(CONFIGMAPS, "t0", "default")
        kube.delete(CONFIGMAPS, "t1", "default")
        kube.patch(CONFIGMAPS, "t2", {"data": {"v": "changed"}}, "default")
        kube.create(CONFIGMAPS, cm("t-new"))
    assert_converges(kube, inf, rec)
    assert metric(registry, "prometheus_operator_list_operations_total") >= 2
    tombstones = {key for _, key, tomb in rec.events("delete") if tomb}
    assert tombstones == {"default/t0", "default/t1"}
    assert rec.state["default/t2"]["data"] == {"v": "changed"}


def test_tombstone_carries_the_last_known_state(kube, sandbox, make_informer):
    kube.create(CONFIGMAPS, cm("gone", v="last"))
    deleted = []
    inf = make_informer()
    inf.add_handler(on_delete=deleted.append)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    watching(kube, inf)
    with disconnected(sandbox, inf):
        kube.delete(CONFIGMAPS, "gone", "default")
    wait_until(lambda: deleted, what="the tombstone")
    [tomb] = deleted
    assert isinstance(tomb, Tombstone) and tomb.key == "default/gone" and tomb.obj["data"] == {"v": "last"}


@pytest.mark.parametrize("code", [429, 500])
def test_error_bursts_on_watch_and_list(kube, sandbox, make_informer, registry, code):
    sandbox.faults.fail_next(3, code, verb="list", resource="configmaps")
    rec = Recorder()
    inf = make_informer(recorder=rec)
    inf.start()
    assert inf.wait_for_sync(scaled(10)), "the informer must sync after a burst of failed LISTs"
    assert metric(registry, "prometheus_operator_list_operations_failed_total") == 3
    watching(kube, inf)
    sandbox.faults.fail_next(4, code, verb="watch", resource="configmaps")
    sandbox.faults.close_watches()
    churn(kube, "burst")
    wait_until(lambda: metric(registry, "prometheus_operator_watch_operations_failed_total") >= 4,
               what="the burst of failed watches to be used up")
    churn(kube, "after-burst")
    assert_converges(kube, inf, rec)
    if code == 429:  # throttling: re-watch only
        assert metric(registry, "prometheus_operator_list_operations_total") == 4
    else:  # other errors relist
        assert metric(registry, "prometheus_operator_list_operations_total") > 4


def test_sandbox_restart(kube, sandbox, make_informer):
    rec = Recorder()
    inf = make_informer(recorder=rec)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    churn(kube, "before")
    sandbox.stop(keep_port=True)  # the same port for start(), whatever runs in parallel
    time.sleep(0.1)  # let the reflector meet the dead server (it must back off, not spin)
    sandbox.start()
    churn(kube, "after")
    assert_converges(kube, inf, rec)


def test_restart_with_compaction(kube, sandbox, make_informer):
    for i in range(4):
        kube.create(CONFIGMAPS, cm(f"k{i}"))
    rec = Recorder()
    inf = make_informer(recorder=rec)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    wait_until(lambda: len(rec.rvs()) == 4)
    with disconnected(sandbox, inf):
        sandbox.restart()
        kube.delete(CONFIGMAPS, "k3", "default")
    assert_converges(kube, inf, rec)
    assert "default/k3" in {key for _, key, tomb in rec.events("delete") if tomb}


def test_dead_stream_does_not_hang_beyond_the_idle_timeout(kube, sandbox, make_informer, registry):
    rec = Recorder()
    inf = make_informer(recorder=rec, idle_timeout=0.5)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    sandbox.faults.stall_watches(True)
    stalled_at = time.monotonic()
    wait_until(lambda: metric(registry, "prometheus_operator_watch_operations_failed_total") >= 1, timeout=5,
               what="the idle timeout to fire")
    assert time.monotonic() - stalled_at < scaled(3)  # not the watch's own timeout (minutes)
    kube.create(CONFIGMAPS, cm("after-stall"))
    sandbox.faults.stall_watches(False)
    assert_converges(kube, inf, rec)
    assert metric(registry, "prometheus_operator_list_operations_total") == 1  # re-watched, no relist


def test_metadata_only(kube, make_informer):
    kube.create(CONFIGMAPS, cm("meta", secret="s3cr3t"))
    rec = Recorder()
    inf = make_informer(recorder=rec, metadata_only=True)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    kube.create(CONFIGMAPS, cm("meta2", secret="s3cr3t"))
    assert_converges(kube, inf, rec)
    objs = inf.store.list()
    assert len(objs) == 2
    for o in objs:
        assert set(o) == {"apiVersion", "kind", "metadata"} and o["kind"] == "PartialObjectMetadata"
    assert "s3cr3t" not in repr(objs) and "s3cr3t" not in repr(rec.state)


def test_label_and_field_selectors(kube, make_informer):
    kube.create(CONFIGMAPS, cm("in1", labels={"team": "a"}))
    kube.create(CONFIGMAPS, cm("out1", labels={"team": "b"}))
    rec = Recorder()
    inf = make_informer(recorder=rec, label_selector="team=a")
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    kube.create(CONFIGMAPS, cm("in2", labels={"team": "a"}))
    kube.create(CONFIGMAPS, cm("out2", labels={"team": "b"}))
    kube.patch(CONFIGMAPS, "in1", {"metadata": {"labels": {"team": "b"}}}, "default")  # leaves the selection
    kube.patch(CONFIGMAPS, "out1", {"metadata": {"labels": {"team": "a"}}}, "default")  # joins it
    assert_converges(kube, inf, rec, label_selector="team=a")
    assert sorted(inf.store.keys()) == ["default/in2", "default/out1"]

    rec2 = Recorder()
    by_name = make_informer(recorder=rec2, field_selector="metadata.name=in2", name="by-name")
    by_name.start()
    assert by_name.wait_for_sync(scaled(10))
    assert by_name.store.keys() == ["default/in2"]


def test_paging_over_500_objects(kube, sandbox, make_informer):
    for i in range(1100):
        kube.create(CONFIGMAPS, cm(f"p{i:04d}"))
    sandbox.reset_requests()
    rec = Recorder()
    inf = make_informer(recorder=rec)
    inf.start()
    assert inf.wait_for_sync(scaled(30))
    assert len(inf.store) == 1100
    # this test's own requests: a client another test left running could reach a reused port
    lists = [r for r in own_requests(sandbox, kube.api_client) if r.verb == "list" and r.resource == "configmaps"]
    assert len(lists) == 1 and "resourceVersion=0" in lists[0].path  # the watch cache's list: whole
    assert_converges(kube, inf, rec)
    sandbox.reset_requests()
    items, _ = kube.list_all(CONFIGMAPS)  # a consistent read is paged
    assert len(items) == 1100
    lists = [r for r in own_requests(sandbox, kube.api_client) if r.verb == "list" and r.resource == "configmaps"]
    assert len(lists) == 3  # 500 + 500 + 100


def test_resync_redelivers_from_cache_without_api_calls(kube, sandbox, make_informer):
    for i in range(3):
        kube.create(CONFIGMAPS, cm(f"rs{i}"))
    rec = Recorder()
    inf = make_informer(recorder=rec, resync_period=0.1)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    sandbox.reset_requests()
    wait_until(lambda: len([e for e in rec.events("update") if e[2]]) >= 6, what="two resyncs")
    assert all(same for _, _, same in rec.events("update"))  # on_update(obj, obj)
    assert not [r for r in own_requests(sandbox, kube.api_client) if r.verb in ("list", "get")]


def test_namespaces_list_watches_only_those(kube, sandbox, make_informer):
    for ns in ("a", "b", "c"):
        kube.create(NAMESPACES, {"metadata": {"name": ns}})
        kube.create(CONFIGMAPS, cm("x", ns=ns))
    rec = Recorder()
    inf = make_informer(recorder=rec, namespaces=["a", "b"])
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    assert len(inf.reflectors) == 2
    assert sorted(inf.store.keys()) == ["a/x", "b/x"]
    watching(kube, inf, "a", "b")
    kube.create(CONFIGMAPS, cm("y", ns="b"))
    kube.create(CONFIGMAPS, cm("y", ns="c"))
    with disconnected(sandbox, inf):
        kube.delete(CONFIGMAPS, "x", "a")
    expected = sorted(kube_keys(kube, "a", "b"))
    assert "a/x" not in expected and "b/y" in expected
    wait_until(lambda: sorted(inf.store.keys()) == expected, what="namespace-scoped relist")
    wait_until(lambda: sorted(rec.rvs()) == expected)
    tombstones = {key for _, key, tomb in rec.events("delete") if tomb}
    assert tombstones == {"a/x"}


def test_late_handler_gets_synthetic_adds(kube, make_informer):
    for i in range(3):
        kube.create(CONFIGMAPS, cm(f"late{i}"))
    inf = make_informer()
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    rec = Recorder()
    inf.add_handler(**rec.handlers())
    wait_until(lambda: len(rec.events("add")) == 3)
    assert all(initial for _, _, initial in rec.events("add"))
    kube.create(CONFIGMAPS, cm("late-live"))
    assert_converges(kube, inf, rec)


def test_handler_errors_are_counted_and_a_slow_handler_stalls_only_itself(kube, make_informer, registry):
    gate = threading.Event()
    slow_seen = []

    def slow(obj, initial):
        gate.wait(scaled(30))  # released by the test; the bound only ends a failed test
        slow_seen.append(object_key(obj))

    def broken(obj, initial):
        raise RuntimeError("handler bug")

    rec = Recorder()
    inf = make_informer()
    inf.add_handler(on_add=slow)
    inf.add_handler(on_add=broken)
    inf.add_handler(**rec.handlers())
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    for i in range(5):
        kube.create(CONFIGMAPS, cm(f"h{i}"))
    assert_converges(kube, inf, rec)  # the healthy handler is current while `slow` is stuck
    assert slow_seen == []
    wait_until(lambda: inf.handler_errors == 5)
    assert metric(registry, "prometheus_operator_informer_handler_errors_total") == 5
    gate.set()
    wait_until(lambda: len(slow_seen) == 5)


def test_stop_ends_all_threads(kube, make_informer):
    inf = make_informer(recorder=Recorder(), namespaces=["default", "kube-system"], resync_period=0.5)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    before = {t.name for t in threading.enumerate() if t.name.startswith("informer-") or t.name.startswith("reflector-")}
    assert before
    inf.stop(timeout=scaled(5))
    alive = [t.name for t in threading.enumerate() if t.name in before]
    assert alive == []


def test_constructor_validation(kube):
    with pytest.raises(ValueError, match="not both"):
        Informer(kube, CONFIGMAPS, namespace="a", namespaces=["b"])
    with pytest.raises(ValueError, match="namespaces is empty"):
        Informer(kube, CONFIGMAPS, namespaces=[])
    with pytest.raises(ValueError, match="cluster-scoped"):
        Informer(kube, NAMESPACES, namespace="a")


def test_resync_also_fires_while_events_keep_flowing(kube, make_informer):
    """The resync deadline is absolute: a steady stream of events does not postpone it."""
    kube.create(CONFIGMAPS, cm("busy", v="0"))
    rec = Recorder()
    inf = make_informer(recorder=rec, resync_period=0.2)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            i += 1
            kube.patch(CONFIGMAPS, "busy", {"data": {"v": str(i)}}, "default")

    t = threading.Thread(target=writer)
    t.start()
    try:
        wait_until(lambda: any(same for _, _, same in rec.events("update")), what="a resync during the writes")
    finally:
        stop.set()
        t.join(10)


def test_an_expired_continue_token_mid_list_still_syncs_the_whole_cache(api_client, sandbox, registry):
    """410 on page 2 of the initial LIST: the pager falls back to one full LIST, keyed and
    transformed like the pages."""
    ns = f"expire-{uuid.uuid4().hex[:8]}"
    base = KubeClient(api_client, qps=0, burst=0, registry=CollectorRegistry())
    base.create(NAMESPACES, {"metadata": {"name": ns}})
    for i in range(7):
        base.create(CONFIGMAPS, {"metadata": {"name": f"e{i}", "namespace": ns,
                                              "labels": {"team": "platform"}}, "data": {"i": str(i)}})
    expired = []

    class Expiring(KubeClient):
        def _list_data(self, res, namespace=None, **kw):
            if kw.get("continue_token") and not expired:
                expired.append(kw["continue_token"])
                sandbox.faults.fail_next(1, 410, verb="list", resource="configmaps")
            return super()._list_data(res, namespace, **kw)

        def _send_list(self, res, namespace=None, **kw):  # the next page, requested early
            if kw.get("continue_token") and not expired:
                expired.append(kw["continue_token"])
                sandbox.faults.fail_next(1, 410, verb="list", resource="configmaps")
            return super()._send_list(res, namespace, **kw)

    kube = Expiring(api_client, qps=0, burst=0, registry=registry)
    rec = Recorder()
    inf = Informer(kube, CONFIGMAPS, namespace=ns, page_size=2, registry=registry, **FAST)
    inf.add_handler(**rec.handlers())
    # 410 on the RV=0 list: the reflector lists again at once with a consistent, paged read
    sandbox.faults.fail_next(1, 410, verb="list", resource="configmaps")
    try:
        inf.start()
        assert inf.wait_for_sync(scaled(10))
        assert expired, "the test never made a continue token expire"
        assert sorted(inf.store.keys()) == [f"{ns}/e{i}" for i in range(7)]
        assert all("managedFields" not in o["metadata"] for o in inf.store.list())  # the default transform ran
        wait_until(lambda: len(rec.events("add")) == 7, what="seven on_add calls")
        assert sorted(rec.state) == sorted(inf.store.keys())
    finally:
        inf.stop(timeout=5)
