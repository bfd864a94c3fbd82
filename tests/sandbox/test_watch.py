"""WATCH through kubernetes.watch.Watch and raw streams: replay, 410, bookmarks, timeouts,
selector transitions and partial metadata."""

from __future__ import annotations

import json
import threading
import time

import pytest
from kubernetes import watch
from kubernetes.client import ApiException

from .helpers import configmap

PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


def collect(func, count: int, timeout: float = 5, **kwargs) -> list[dict]:
    """Read `count` events (type, name, rv) from a watch; fails on timeout."""
    events = []
    w = watch.Watch()
    for event in w.stream(func, timeout_seconds=int(timeout) + 1, **kwargs):
        obj = event["raw_object"]
        events.append({"type": event["type"], "name": obj["metadata"].get("name"),
                       "rv": obj["metadata"].get("resourceVersion"), "object": obj})
        if len(events) == count:
            w.stop()
            break
    return events


def raw_stream(core, namespace="default", **kwargs):
    """A raw watch response; iterate lines of JSON."""
    return core.list_namespaced_config_map(namespace, watch=True, _preload_content=False,
                                           **kwargs)


def iter_events(response):
    """The events of a raw watch response, one decoded JSON line at a time, until it ends."""
    buffer = b""
    for chunk in response.stream(1024):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)


def read_events(response, count: int) -> list[dict]:
    """The first `count` events (fewer if the stream ends first)."""
    events = []
    for event in iter_events(response):
        events.append(event)
        if len(events) == count:
            break
    return events


def test_watch_streams_added_modified_deleted(core):
    listed = core.list_namespaced_config_map("default")
    core.create_namespaced_config_map("default", configmap("a", k="1"))
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "2"}})
    core.delete_namespaced_config_map("a", "default")
    events = collect(core.list_namespaced_config_map, 3, namespace="default",
                     resource_version=listed.metadata.resource_version)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["rv"]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3
    assert events[1]["object"]["data"] == {"k": "2"}


def test_watch_without_resource_version_starts_with_current_state(core):
    core.create_namespaced_config_map("default", configmap("a"))
    core.create_namespaced_config_map("default", configmap("b"))
    events = collect(core.list_namespaced_config_map, 2, namespace="default")
    assert [(e["type"], e["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


def test_live_events_reach_an_open_watch(core):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    response = raw_stream(core, resource_version=rv, timeout_seconds=5)
    core.create_namespaced_config_map("default", configmap("live"))
    [event] = read_events(response, 1)
    response.release_conn()
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "live"


def test_resume_from_resource_version_replays_only_later_events(core):
    core.create_namespaced_config_map("default", configmap("a"))
    middle = core.create_namespaced_config_map("default", configmap("b"))
    core.create_namespaced_config_map("default", configmap("c"))
    events = collect(core.list_namespaced_config_map, 1, namespace="default",
                     resource_version=middle.metadata.resource_version)
    assert [e["name"] for e in events] == ["c"]


def test_compacted_history_gives_410_expired(core, sandbox):
    old = core.create_namespaced_config_map("default", configmap("a"))
    core.create_namespaced_config_map("default", configmap("b"))
    sandbox.faults.compact()
    response = raw_stream(core, resource_version=old.metadata.resource_version,
                          timeout_seconds=5)
    [event] = read_events(response, 1)
    assert event["type"] == "ERROR"
    assert event["object"]["kind"] == "Status" and event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"
    with pytest.raises(ApiException) as excinfo:  # the client's own 410 handling
        collect(core.list_namespaced_config_map, 1, namespace="default",
                resource_version=old.metadata.resource_version)
    assert excinfo.value.status == 410


def test_history_window_is_bounded(api_client):
    from kubernetes import client
    from promop.sandbox import Sandbox

    with Sandbox(history_size=3) as small:
        core = client.CoreV1Api(small.api_client())
        first = core.create_namespaced_config_map("default", configmap("a"))
        for n in range(4):
            core.create_namespaced_config_map("default", configmap(f"x{n}"))
        response = raw_stream(core, resource_version=first.metadata.resource_version,
                              timeout_seconds=5)
        [event] = read_events(response, 1)
        assert event["type"] == "ERROR" and event["object"]["code"] == 410


def test_bookmarks_carry_the_current_resource_version(sandbox, core):
    sandbox.bookmark_interval = 0.1
    made = core.create_namespaced_config_map("default", configmap("a"))
    core.create_namespace({"metadata": {"name": "elsewhere"}})  # bumps the global RV
    response = raw_stream(core, resource_version=made.metadata.resource_version,
                          allow_watch_bookmarks=True, timeout_seconds=30)
    events = iter_events(response)
    first = next(events)  # the store moved past what the watch was told: a bookmark is due
    assert first["type"] == "BOOKMARK"
    assert first["object"]["kind"] == "ConfigMap"
    assert int(first["object"]["metadata"]["resourceVersion"]) == sandbox.store.rv
    core.create_namespace({"metadata": {"name": "later"}})
    newer = str(sandbox.store.rv)
    # while the store changes, the next tick's bookmark moves on to the newer RV
    second = next(events)
    assert second["type"] == "BOOKMARK"
    assert second["object"]["metadata"]["resourceVersion"] == newer
    response.close()


def test_no_bookmarks_on_an_idle_watch(sandbox, core):
    """A real apiserver sends none while nothing changes (clients must not treat silence as a
    dead stream); the interval here is 20 ticks of the test's wait."""
    sandbox.bookmark_interval = 0.05
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    response = raw_stream(core, resource_version=rv, allow_watch_bookmarks=True,
                          timeout_seconds=60)
    assert not _readable(response, 1.0)
    core.create_namespaced_config_map("default", configmap("wakes"))
    events = iter_events(response)
    event = next(events)
    assert event["type"] == "ADDED"  # the event itself, then silence again: nothing new
    assert not _readable(response, 0.5)
    response.close()


def test_a_bookmark_shortly_before_the_timeout(sandbox, core):
    """The apiserver sends one 2 s before `timeoutSeconds` ends, even on an idle watch, so the
    client re-watches from a fresh resourceVersion."""
    sandbox.bookmark_before_timeout = 0.5
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    started = time.monotonic()
    response = raw_stream(core, resource_version=rv, allow_watch_bookmarks=True,
                          timeout_seconds=2)
    events = read_events(response, 5)
    elapsed = time.monotonic() - started
    assert [e["type"] for e in events] == ["BOOKMARK"]
    assert events[0]["object"]["metadata"]["resourceVersion"] == str(sandbox.store.rv)
    assert 1.9 <= elapsed < 10  # the stream itself still ends at the timeout


def test_default_bookmark_interval_is_a_minute():
    from promop.sandbox import Sandbox

    sandbox = Sandbox()
    assert sandbox.bookmark_interval == 60.0 and sandbox.bookmark_before_timeout == 2.0


def _readable(response, seconds: float) -> bool:
    import select

    return bool(select.select([response.connection.sock], [], [], seconds)[0])


def test_no_bookmarks_unless_allowed(sandbox, core):
    sandbox.bookmark_interval = 0.05
    start = time.monotonic()
    response = raw_stream(core, timeout_seconds=1)
    assert read_events(response, 1) == []  # the stream ends at the timeout, empty
    assert 0.9 <= time.monotonic() - start < 10  # the default is 1800 s


def test_timeout_seconds_closes_the_stream(core):
    start = time.monotonic()
    events = list(watch.Watch().stream(core.list_namespaced_config_map, "default",
                                       timeout_seconds=1))
    assert events == []
    assert 0.9 <= time.monotonic() - start < 10  # the default is 1800 s


def test_label_selector_transitions_become_added_and_deleted(core):
    rv = core.create_namespaced_config_map(
        "default", configmap("a", labels={"app": "x"})).metadata.resource_version
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"app": "y"}}})
    core.patch_namespaced_config_map("a", "default", {"data": {"ignored": "1"}})
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"app": "x"}}})
    core.create_namespaced_config_map("default", configmap("other", labels={"app": "y"}))
    events = collect(core.list_namespaced_config_map, 2, namespace="default",
                     label_selector="app=x", resource_version="1")
    assert [(e["type"], e["name"]) for e in events][:2] == [("ADDED", "a"), ("DELETED", "a")]
    events = collect(core.list_namespaced_config_map, 2, namespace="default",
                     label_selector="app=x", resource_version=rv)
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]
    assert events[0]["object"]["metadata"]["labels"] == {"app": "x"}  # the last matching state


def test_field_selector_on_watch(core):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", configmap("skip"))
    core.create_namespaced_config_map("default", configmap("want"))
    events = collect(core.list_namespaced_config_map, 1, namespace="default",
                     field_selector="metadata.name!=skip", resource_version=rv)
    assert [e["name"] for e in events] == ["want"]


def test_namespaced_watch_ignores_other_namespaces(core):
    core.create_namespace({"metadata": {"name": "other"}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("other", configmap("x"))
    core.create_namespaced_config_map("default", configmap("y"))
    events = collect(core.list_namespaced_config_map, 1, namespace="default",
                     resource_version=rv)
    assert [e["name"] for e in events] == ["y"]
    events = collect(core.list_config_map_for_all_namespaces, 2, resource_version=rv)
    assert [e["name"] for e in events] == ["x", "y"]


def test_partial_metadata_watch(core):
    rv = core.list_namespaced_secret("default").metadata.resource_version
    core.create_namespaced_secret("default", {"metadata": {"name": "s"},
                                              "stringData": {"k": "v"}})
    response = core.list_namespaced_secret("default", watch=True, resource_version=rv,
                                           timeout_seconds=5, _preload_content=False,
                                           _headers={"Accept": PARTIAL})
    [event] = read_events(response, 1)
    assert event["object"]["kind"] == "PartialObjectMetadata"
    assert "data" not in event["object"]
    assert event["object"]["metadata"]["name"] == "s"


def test_many_concurrent_watchers_each_get_every_event(core, sandbox):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    results: dict[int, list] = {}

    def watcher(n):
        results[n] = collect(core.list_namespaced_config_map, 20, namespace="default",
                             resource_version=rv)

    threads = [threading.Thread(target=watcher, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for n in range(20):
        core.create_namespaced_config_map("default", configmap(f"cm-{n}"))
    for thread in threads:
        thread.join(10)
    assert all([e["name"] for e in results[n]] == [f"cm-{i}" for i in range(20)]
               for n in range(4))
