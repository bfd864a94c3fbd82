"""The reloader's own API client (reloader/kubeapi.py) against a real API (the sandbox), and its
watch loop against scripted event streams.

client-go's contract (../shared/reference/client-go.md, Kubernetes API concepts "Efficient detection
of changes"): a watch resumes from the last resourceVersion it saw, from any event, bookmarks
included, so no event is delivered twice; a DELETED event means the object is gone; an ERROR
event with code 410 (Gone) means the version is too old: read the object again, then watch.
"""
from __future__ import annotations

import logging
import threading

import pytest
from kubernetes import client

from reloader.kubeapi import Api, ApiError, ObjectRef, ObjectWatch
from reloader.logs import Log
from reloader_testlib import wait_for

import requests

LOG = Log(logging.getLogger("test-kubeapi"), {})
REF = ObjectRef("configmaps", "default", "rules")


def configmap(name: str, **data: str) -> dict:
    return {"metadata": {"name": name}, "data": data}


@pytest.fixture
def core(sandbox):
    api = sandbox.api_client()
    yield client.CoreV1Api(api)
    api.close()


@pytest.fixture
def api(sandbox):
    session = requests.Session()
    yield Api(sandbox.url, session)
    session.close()


class Recorder:
    """What the watch delivered, in order: ("object", data) or ("missing",)."""

    def __init__(self) -> None:
        self.seen: list[tuple] = []
        self.lock = threading.Lock()

    def on_object(self, obj: dict) -> None:
        with self.lock:
            self.seen.append(("object", dict(obj.get("data") or {})))

    def on_missing(self) -> None:
        with self.lock:
            self.seen.append(("missing",))

    def snapshot(self) -> list[tuple]:
        with self.lock:
            return list(self.seen)

    def wait_len(self, n: int) -> list[tuple]:
        return wait_for(lambda: self.snapshot() if len(self.snapshot()) >= n else None,
                        what=f"{n} deliveries (have {self.snapshot()})")


def test_get_returns_the_object_or_none(api, core):
    assert api.get(REF) is None
    core.create_namespaced_config_map("default", configmap("rules", a="1"))
    got = api.get(REF)
    assert got["data"] == {"a": "1"} and got["metadata"]["resourceVersion"]


def test_get_errors_carry_the_status(sandbox, api):
    sandbox.faults.fail_next(1, 500, verb="get", resource="configmaps")
    with pytest.raises(ApiError) as excinfo:
        api.get(REF)
    assert excinfo.value.status == 500


def test_watch_from_a_version_sees_only_the_named_objects_later_changes(api, core):
    made = core.create_namespaced_config_map("default", configmap("rules", a="1"))
    core.create_namespaced_config_map("default", configmap("other", b="1"))
    core.patch_namespaced_config_map("other", "default", {"data": {"b": "2"}})
    core.patch_namespaced_config_map("rules", "default", {"data": {"a": "2"}})
    core.delete_namespaced_config_map("rules", "default")
    events = []
    for event in api.watch(REF, made.metadata.resource_version, 1):
        if event["type"] != "BOOKMARK":
            events.append((event["type"], event["object"]["metadata"]["name"],
                           event["object"].get("data")))
        if len(events) == 2:
            break
    assert events == [("MODIFIED", "rules", {"a": "2"}), ("DELETED", "rules", {"a": "2"})]


def test_object_watch_follows_changes_deletion_and_recreation(api, core):
    core.create_namespaced_config_map("default", configmap("rules", a="1"))
    rec = Recorder()
    watch = ObjectWatch(api, REF, rec.on_object, rec.on_missing, LOG).start()
    try:
        rec.wait_len(1)
        wait_for(watch.connected.is_set, what="watch connected")
        core.patch_namespaced_config_map("rules", "default", {"data": {"a": "2"}})
        rec.wait_len(2)
        core.delete_namespaced_config_map("rules", "default")
        rec.wait_len(3)
        core.create_namespaced_config_map("default", configmap("rules", a="3"))
        assert rec.wait_len(4) == [("object", {"a": "1"}), ("object", {"a": "2"}), ("missing",),
                                   ("object", {"a": "3"})]
    finally:
        watch.close()


def test_object_watch_resumes_after_the_last_event_without_replaying(sandbox, api, core):
    core.create_namespaced_config_map("default", configmap("rules", a="1"))
    rec = Recorder()
    watch = ObjectWatch(api, REF, rec.on_object, rec.on_missing, LOG).start()
    try:
        rec.wait_len(1)
        wait_for(watch.connected.is_set, what="watch connected")
        core.patch_namespaced_config_map("rules", "default", {"data": {"a": "2"}})
        rec.wait_len(2)
        sandbox.faults.stall_watches(True)        # no bookmark moves the version on before the drop
        before = sandbox.count_requests(verb="watch", resource="configmaps")
        sandbox.faults.close_watches()
        sandbox.faults.stall_watches(False)
        wait_for(lambda: sandbox.count_requests(verb="watch", resource="configmaps") > before,
                 what="the watch re-opened")
        core.patch_namespaced_config_map("rules", "default", {"data": {"a": "3"}})
        rec.wait_len(3)
        assert rec.snapshot() == [("object", {"a": "1"}), ("object", {"a": "2"}), ("object", {"a": "3"})]
    finally:
        watch.close()


class ScriptedApi:
    """Answers GET with `obj` and each WATCH with the next scripted list of events; records the
    resourceVersion every watch was opened from. After the script, it stops the watcher."""

    def __init__(self, obj: dict | None, script: list[list[dict]]):
        self.obj = obj
        self.script = list(script)
        self.gets = 0
        self.watched_from: list[str] = []
        self.done = threading.Event()
        self.watcher: ObjectWatch | None = None

    def get(self, ref: ObjectRef, timeout: float = 10.0) -> dict | None:
        self.gets += 1
        return self.obj

    def watch(self, ref: ObjectRef, resource_version: str, timeout_seconds: int):
        self.watched_from.append(resource_version)
        if not self.script:
            assert self.watcher is not None
            self.watcher.close()
            self.done.set()
            return
        yield from self.script.pop(0)


def cm(rv: str, **data: str) -> dict:
    return {"metadata": {"name": "rules", "namespace": "default", "resourceVersion": rv}, "data": data}


def run_script(obj: dict | None, script: list[list[dict]]) -> tuple[ScriptedApi, Recorder]:
    api = ScriptedApi(obj, script)
    rec = Recorder()
    api.watcher = ObjectWatch(api, REF, rec.on_object, rec.on_missing, LOG,  # type: ignore[arg-type]
                              on_error=lambda: rec.seen.append(("error",)))
    api.watcher.start()
    assert api.done.wait(10), "the scripted watch never finished"
    return api, rec


def test_every_event_moves_the_version_bookmarks_included():
    api, rec = run_script(cm("10", a="1"), [
        [{"type": "MODIFIED", "object": cm("12", a="2")}],
        [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}],
        [{"type": "DELETED", "object": cm("17", a="2")}],
    ])
    assert api.watched_from == ["10", "12", "15", "17"]
    assert rec.snapshot() == [("object", {"a": "1"}), ("object", {"a": "2"}), ("missing",)]
    assert api.gets == 1


def test_gone_reads_the_object_again_then_watches_from_its_version():
    api, rec = run_script(cm("10", a="1"), [
        [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}],
    ])
    assert api.gets == 2
    assert api.watched_from == ["10", "10"]
    # an expired version is routine (a relist), not an API failure: no error counted, no back-off
    assert rec.snapshot() == [("object", {"a": "1"}), ("object", {"a": "1"})]


def test_an_error_event_counts_as_a_failure_and_starts_over():
    api, rec = run_script(cm("10", a="1"), [
        [{"type": "ERROR", "object": {"kind": "Status", "code": 500, "message": "boom"}}],
    ])
    assert api.gets == 2
    assert rec.snapshot() == [("object", {"a": "1"}), ("error",), ("object", {"a": "1"})]


def test_a_missing_object_is_reported_and_watched_from_the_start():
    api, rec = run_script(None, [[{"type": "ADDED", "object": cm("20", a="new")}]])
    assert rec.snapshot() == [("missing",), ("object", {"a": "new"})]
    assert api.watched_from == ["", "20"]
