"""Watches and informers against the sandbox and the real kube-apiserver: the same event streams.

The operator's informers rest on these: a watch without a resourceVersion starts with the current
state as ADDED; from a resourceVersion it replays what came after; a label-selected watch sees an
object that stops matching as DELETED; an expired resourceVersion is an ERROR event with a 410
(the client raises Gone, the reflector relists); a bookmark arrives before timeoutSeconds ends.
"""

from __future__ import annotations

import threading

import pytest
from real_api_lib import compact_etcd, eventually

from promop.kube.errors import Gone
from promop.kube.informer import Informer
from promop.kube.resources import CONFIGMAPS


def cm(name: str, ns: str, labels: dict | None = None, **data: str) -> dict:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "data": data}


# kube-controller-manager's root-ca-cert-publisher puts this ConfigMap in every namespace (the
# sandbox does not: docs/sandbox.md)
ROOT_CA = "kube-root-ca.crt"


def events(stream, count: int) -> list[tuple[str, str]]:
    out = []
    for ev in stream:
        if ev["type"] == "BOOKMARK" or ev["object"]["metadata"]["name"] == ROOT_CA:
            continue
        out.append((ev["type"], ev["object"]["metadata"]["name"]))
        if len(out) == count:
            break
    stream.close()
    return out


def test_watch_starts_with_the_state_then_replays_from_a_version(api):
    kube, ns = api.admin, api.ns
    kube.create(CONFIGMAPS, cm("one", ns))
    first = kube.watch(CONFIGMAPS, ns, timeout_seconds=10)
    assert events(first, 1) == [("ADDED", "one")]
    listed = kube.list(CONFIGMAPS, ns)
    kube.create(CONFIGMAPS, cm("two", ns))
    kube.patch(CONFIGMAPS, "one", {"data": {"k": "v"}}, ns)
    kube.delete(CONFIGMAPS, "two", ns)
    replay = kube.watch(CONFIGMAPS, ns, resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=10)
    assert events(replay, 3) == [("ADDED", "two"), ("MODIFIED", "one"), ("DELETED", "two")]


def test_label_selected_watch_sees_an_object_that_stops_matching_as_deleted(api):
    kube, ns = api.admin, api.ns
    listed = kube.list(CONFIGMAPS, ns)
    kube.create(CONFIGMAPS, cm("sel", ns, {"app": "x"}))
    kube.patch(CONFIGMAPS, "sel", {"metadata": {"labels": {"app": "y"}}}, ns)
    kube.patch(CONFIGMAPS, "sel", {"metadata": {"labels": {"app": "x"}}}, ns)
    stream = kube.watch(CONFIGMAPS, ns, resource_version=listed["metadata"]["resourceVersion"],
                        label_selector="app=x", timeout_seconds=10)
    assert events(stream, 3) == [("ADDED", "sel"), ("DELETED", "sel"), ("ADDED", "sel")]


def test_list_at_an_expired_resource_version_is_410_expired(api):
    kube, ns = api.admin, api.ns
    made = kube.create(CONFIGMAPS, cm("old", ns))
    if api.sandbox is not None:
        api.sandbox.faults.compact()
    else:  # as the apiserver does every 5 minutes
        compact_etcd(api.cp.run_dir, int(made["metadata"]["resourceVersion"]))
    with pytest.raises(Gone) as gone:
        kube._request("GET", CONFIGMAPS.path(ns), endpoint=CONFIGMAPS.endpoint(ns),
                      query={"resourceVersion": "1", "resourceVersionMatch": "Exact"})
    assert (gone.value.status, gone.value.reason) == (410, "Expired")
    assert gone.value.message == "The resourceVersion for the provided list is too old."


def test_watch_from_an_expired_resource_version_is_410(api):
    """The sandbox after compaction. The real apiserver's watch cache answers RV 1 with the current
    state as ADDED events while it has evicted nothing since it started, and with the ERROR 410 once
    its window has moved on (it depends on how much the session wrote before: docs/sandbox.md), so
    the real half accepts either, and checks the 410's words when it comes."""
    kube, ns = api.admin, api.ns
    kube.create(CONFIGMAPS, cm("old", ns))
    if api.real:
        stream = kube.watch(CONFIGMAPS, ns, resource_version="1", timeout_seconds=5)
        try:
            assert events(stream, 1) == [("ADDED", "old")]
        except Gone as gone:
            assert gone.status == 410 and gone.message.startswith("too old resource version: 1 (")
        return
    api.sandbox.faults.compact()
    stream = kube.watch(CONFIGMAPS, ns, resource_version="1", timeout_seconds=10)
    with pytest.raises(Gone) as gone:
        for _ in stream:
            pass
    assert gone.value.status == 410 and gone.value.reason in ("Expired", "Gone")
    assert gone.value.message.startswith("too old resource version: 1 (")


def test_bookmark_before_the_watch_times_out(api):
    kube, ns = api.admin, api.ns
    made = kube.create(CONFIGMAPS, cm("b", ns))
    rv = made["metadata"]["resourceVersion"]
    stream = kube.watch(CONFIGMAPS, ns, resource_version=rv, timeout_seconds=4, allow_bookmarks=True)
    kube.patch(CONFIGMAPS, "b", {"data": {"k": "v"}}, ns)
    seen = [ev for ev in stream if ev["object"]["metadata"].get("name") != ROOT_CA]  # published any time
    kinds = [ev["type"] for ev in seen]
    assert kinds[0] == "MODIFIED" and "BOOKMARK" in kinds, kinds
    bookmark = next(ev for ev in seen if ev["type"] == "BOOKMARK")["object"]
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(seen[0]["object"]["metadata"]["resourceVersion"])
    assert bookmark["kind"] == "ConfigMap"


def test_informer_follows_adds_updates_deletes(api):
    kube, ns = api.admin, api.ns
    kube.create(CONFIGMAPS, cm("pre", ns))
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def note(kind: str, obj) -> None:
        name = (obj.get("metadata") if isinstance(obj, dict) else obj.obj["metadata"])["name"]
        if name == ROOT_CA:
            return
        with lock:
            seen.append((kind, name))

    inf = Informer(api.client(), CONFIGMAPS, namespace=ns)
    inf.add_handler(on_add=lambda o, initial: note("add-initial" if initial else "add", o),
                    on_update=lambda old, new: note("update", new),
                    on_delete=lambda o: note("delete", o))
    inf.start()
    try:
        assert inf.wait_for_sync(30)
        kube.create(CONFIGMAPS, cm("new", ns))
        kube.patch(CONFIGMAPS, "pre", {"data": {"k": "v"}}, ns)
        kube.delete(CONFIGMAPS, "new", ns)
        want = [("add-initial", "pre"), ("add", "new"), ("update", "pre"), ("delete", "new")]
        eventually(lambda: seen == want, 10, f"the informer's events {want}")
        assert sorted(k for k in inf.store.keys() if not k.endswith(ROOT_CA)) == [f"{ns}/pre"]
    finally:
        inf.stop()


def test_expired_continue_token_is_410_and_list_all_falls_back_to_one_full_list(api):
    kube, ns = api.admin, api.ns
    for name in ("c1", "c2", "c3"):
        made = kube.create(CONFIGMAPS, cm(name, ns, {"page": "me"}))
    first = kube.list(CONFIGMAPS, ns, label_selector="page=me", limit=1)
    token = first["metadata"]["continue"]
    assert token
    made = kube.create(CONFIGMAPS, cm("later", ns))  # the token's version is then history
    if api.sandbox is not None:
        api.sandbox.faults.compact()
    else:
        compact_etcd(api.cp.run_dir, int(made["metadata"]["resourceVersion"]))
    with pytest.raises(Gone) as gone:
        kube.list(CONFIGMAPS, ns, label_selector="page=me", limit=1, continue_token=token)
    assert (gone.value.status, gone.value.reason) == (410, "Expired")
    assert gone.value.message.startswith("The provided continue parameter is too old to display a consistent "
                                         "list result. You can start a new list without the continue parameter, "
                                         "or use the continue token in this response")
    items, _ = kube.list_all(CONFIGMAPS, ns, page_size=1, label_selector="page=me")
    assert sorted(o["metadata"]["name"] for o in items) == ["c1", "c2", "c3"]
