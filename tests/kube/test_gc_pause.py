"""The GC pause around LIST page decoding: scoped, nestable, thread-safe, and never leaves
the collector off (or turns on one that the application had turned off)."""

from __future__ import annotations

import gc
import threading

import pytest

from promop.kube.gc_pause import gc_paused


@pytest.fixture(autouse=True)
def gc_restored():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_inside_and_enabled_after():
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_an_exception_still_ends_the_pause():
    gc.enable()
    with pytest.raises(ValueError):
        with gc_paused():
            raise ValueError("decode failed")
    assert gc.isenabled()


def test_a_collector_the_application_disabled_stays_disabled():
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_pauses_from_many_threads_end_with_the_collector_on():
    gc.enable()
    inside = threading.Barrier(8)
    seen_enabled_inside = []

    def worker():
        for round_ in range(200):
            with gc_paused():
                if gc.isenabled():
                    seen_enabled_inside.append(round_)
                if round_ == 0:
                    inside.wait(10)  # all eight inside at once at least once

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert seen_enabled_inside == []  # no thread ever ran its decode with the collector on
    assert gc.isenabled()


def test_list_pages_are_decoded_with_the_collector_paused(api_client, monkeypatch):
    """The client's page decode runs inside the pause (and only the decode: not the HTTP wait)."""
    from prometheus_client import CollectorRegistry

    import promop.kube.client as client_module
    from promop.kube.client import KubeClient
    from promop.kube.resources import CONFIGMAPS

    kube = KubeClient(api_client, qps=0, burst=0, registry=CollectorRegistry())
    kube.create(CONFIGMAPS, {"metadata": {"name": "gc-probe", "namespace": "default"}})
    states = []
    real_loads = client_module.orjson.loads

    class Spy:
        @staticmethod
        def loads(data):
            states.append(gc.isenabled())
            return real_loads(data)

    requests = []
    real_request = kube._request

    def request(*args, **kw):
        requests.append(gc.isenabled())
        return real_request(*args, **kw)

    monkeypatch.setattr(client_module, "orjson", Spy)
    monkeypatch.setattr(kube, "_request", request)
    gc.enable()
    items, _ = kube.list_all(CONFIGMAPS, "default")
    assert any(o["metadata"]["name"] == "gc-probe" for o in items)
    assert states and not any(states)  # decoded paused
    assert requests and all(requests)  # waited for the server with the collector on
    assert gc.isenabled()


def test_the_pause_leaves_generations_and_freezes_alone():
    """No promotion: what a pause allocated starts young, as any object does, and an
    application's own freeze is neither added to nor undone."""
    gc.enable()
    gc.collect()
    with gc_paused():
        kept = {"metadata": {"name": "a"}}  # a dict holding a dict: tracked by the collector
    assert gc.is_tracked(kept)
    assert any(o is kept for o in gc.get_objects(0))
    assert gc.get_freeze_count() == 0


def test_cycles_made_garbage_during_a_pause_are_still_collected():
    import weakref

    class Node:
        pass

    gc.enable()
    with gc_paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        probe = weakref.ref(a)
        del a, b
    assert probe() is not None  # a cycle: reference counting alone cannot free it
    gc.collect()
    assert probe() is None
