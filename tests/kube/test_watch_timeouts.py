"""Watches on a real apiserver's terms: a quiet resource gets no data at all (no bookmarks)
until the watch's timeoutSeconds ends it. Ending at the timeout is not a failure; the
dead-stream guard is longer than that timeout; the re-watch resumes from the last RV.

Each test runs twice: against a sandbox that sends no bookmarks (a real server on an
idle watch) and one that sends them often, so it holds with either behaviour.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from prometheus_client import CollectorRegistry

from promop.kube.client import WATCH_IDLE_GRACE, KubeClient
from promop.kube.informer import Informer
from promop.kube.reflector import watch_timeouts
from promop.kube.resources import CONFIGMAPS
from promop.sandbox import Sandbox
from deadlines import scaled
from kube.kube_testlib import own_requests, tag, wait_until
from kube.test_informer import Recorder, assert_converges, cm, metric

NO_BOOKMARKS, FREQUENT_BOOKMARKS = 1e9, 0.2


@pytest.fixture(params=[NO_BOOKMARKS, FREQUENT_BOOKMARKS], ids=["no-bookmarks", "bookmarks"])
def sandbox(request):
    with Sandbox(port=0, bookmark_interval=request.param) as sb:
        yield sb


@pytest.fixture
def registry():
    return CollectorRegistry()


@pytest.fixture
def kube(sandbox, registry):
    api = sandbox.api_client()
    tag(api)
    client = KubeClient(api, qps=0, burst=0, pool_size=8, registry=registry)
    yield client
    client.close()


@pytest.fixture
def informers():
    made = []
    yield made
    for inf in made:
        inf.stop()


def start(kube, registry, informers, **kw) -> tuple[Informer, Recorder]:
    params = dict(namespace="default", backoff_base=0.02, backoff_cap=0.2, min_watch_duration=0.05,
                  registry=registry)
    params.update(kw)
    inf = Informer(kube, CONFIGMAPS, **params)
    rec = Recorder()
    inf.add_handler(**rec.handlers())
    informers.append(inf)
    inf.start()
    assert inf.wait_for_sync(scaled(10))
    return inf, rec


def watches(sandbox, kube) -> list[dict]:
    """The query of each watch this test's client opened on ConfigMaps, in order."""
    return [parse_qs(urlsplit(r.path).query) for r in own_requests(sandbox, kube.api_client)
            if r.verb == "watch" and r.resource == "configmaps"]


def test_the_guard_is_always_longer_than_the_server_timeout():
    for draw in (lambda lo, hi: lo, lambda lo, hi: hi - 1e-9):
        timeout, guard = watch_timeouts((300, 600), None, WATCH_IDLE_GRACE, draw)
        assert 300 <= timeout < 600 and guard == timeout + WATCH_IDLE_GRACE
    # a short guard (tests) lowers the server-side timeout below it instead
    for given in (1.5, 3.0, 10.0, 90.0):
        timeout, guard = watch_timeouts((300, 600), given, WATCH_IDLE_GRACE)
        assert guard == given and 1 <= timeout < given


def test_an_idle_resource_is_rewatched_only_when_the_server_ends_the_watch(kube, sandbox, registry, informers):
    """Quiet for several times the guard: every watch lasts until the server's timeout, each
    re-watch resumes from the list's RV at once, and nothing counts as a failure."""
    started = time.monotonic()
    # the grace is the margin for the server's end of a watch to arrive after its 2 s: stretched
    # on a loaded machine, where a late end would count as a failure
    grace = scaled(1.0)
    inf, _ = start(kube, registry, informers, watch_timeout_range=(2, 2), idle_grace=grace)
    guard = 2 + grace
    list_rv = inf.reflectors[0].last_rv
    wait_until(lambda: len(watches(sandbox, kube)) >= 4, what="three server-ended watches", timeout=30)
    assert time.monotonic() - started > guard  # quiet for longer than the guard
    assert metric(registry, "prometheus_operator_watch_operations_failed_total") == 0
    assert metric(registry, "prometheus_operator_list_operations_total") == 1  # never relisted
    assert inf.reflectors[0].backoff.failures == 0  # no backoff between the watches
    assert all(q["timeoutSeconds"] == ["2"] and q["allowWatchBookmarks"] == ["true"] for q in watches(sandbox, kube))
    if sandbox.bookmark_interval == NO_BOOKMARKS:  # nothing changed and nothing was said: the list's RV
        assert all(q["resourceVersion"] == [list_rv] for q in watches(sandbox, kube))


def test_a_quiet_watch_is_left_open_past_a_short_idle_period(kube, sandbox, registry, informers):
    """The old 90 s guard, shrunk: a watch with nothing to say stays open, as long as the
    server keeps it, however long the informer's idle grace."""
    inf, _ = start(kube, registry, informers, watch_timeout_range=(30, 30), idle_grace=0.2)
    wait_until(lambda: len(watches(sandbox, kube)) == 1, what="the watch")
    # well past the grace (0.2 s): still the same watch, no failure
    time.sleep(1.5)  # an observation window, not synchronisation: nothing may happen in it
    assert len(watches(sandbox, kube)) == 1
    assert metric(registry, "prometheus_operator_watch_operations_failed_total") == 0
    kube.create(CONFIGMAPS, cm("still-live"))
    wait_until(lambda: inf.store.get("default/still-live") is not None, what="an event on the same watch")
    assert len(watches(sandbox, kube)) == 1


def test_a_server_ended_watch_resumes_from_the_last_rv_with_nothing_lost(kube, sandbox, registry, informers):
    for i in range(3):
        kube.create(CONFIGMAPS, cm(f"r{i}", v="0"))
    inf, rec = start(kube, registry, informers, watch_timeout_range=(60, 60))
    kube.patch(CONFIGMAPS, "r0", {"data": {"v": "1"}}, "default")
    wait_until(lambda: rec.rvs().get("default/r0") == kube.get(CONFIGMAPS, "r0", "default")["metadata"]["resourceVersion"],
               what="the update through the watch")
    last_seen = inf.reflectors[0].last_rv
    # changes the open watch never delivers: held back, then the server ends the watch
    sandbox.faults.stall_watches(True)
    kube.create(CONFIGMAPS, cm("r3"))
    kube.patch(CONFIGMAPS, "r1", {"data": {"v": "2"}}, "default")
    kube.delete(CONFIGMAPS, "r2", "default")
    sandbox.faults.close_watches()
    wait_until(lambda: len(watches(sandbox, kube)) == 2, what="the re-watch")  # opened while still stalled
    sandbox.faults.stall_watches(False)
    assert_converges(kube, inf, rec, namespace="default")
    second = watches(sandbox, kube)[1]
    assert second["resourceVersion"] == [last_seen]
    assert ("delete", "default/r2", False) in rec.events("delete")  # the real delete event, not a relist's tombstone
    assert metric(registry, "prometheus_operator_watch_operations_failed_total") == 0
    assert metric(registry, "prometheus_operator_list_operations_total") == 1


def test_watches_default_to_a_guard_past_their_timeout_and_tcp_keepalive(kube):
    _, rv = kube.list_all(CONFIGMAPS, "default")
    with kube.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=5) as stream:
        assert stream._idle_timeout == 5 + WATCH_IDLE_GRACE
        sock = stream._response.connection.sock
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1  # urllib3's default kept
