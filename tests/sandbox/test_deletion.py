"""Finalizers, deletionTimestamp, ownerReference garbage collection and namespaces: the
request marks or removes the object, the garbage collector and the namespace controller act in
the background afterwards, as on a real cluster (issue 18 §3)."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes.client import ApiException

from deadlines import scaled
from .helpers import configmap


def owned_by(owner, name: str, block: bool = False) -> dict:
    body = configmap(name)
    body["metadata"]["ownerReferences"] = [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
        "uid": owner.metadata.uid, "blockOwnerDeletion": block}]
    return body


def names(core, namespace="default") -> list[str]:
    return [i.metadata.name for i in core.list_namespaced_config_map(namespace).items]


def eventually(check, timeout: float = 10.0, what: str = "the condition"):
    timeout = scaled(timeout)  # times PROMOP_TEST_TIMEOUT_SCALE (tests/deadlines.py)
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def names_become(core, expected: list[str], namespace="default") -> None:
    eventually(lambda: names(core, namespace) == expected, what=f"config maps {expected}")


def test_finalizers_hold_the_object_until_removed(core):
    body = configmap("held")
    body["metadata"]["finalizers"] = ["example.com/cleanup"]
    core.create_namespaced_config_map("default", body)
    pending = json.loads(core.delete_namespaced_config_map(
        "held", "default", _preload_content=False).data)
    assert pending["kind"] == "ConfigMap"
    assert pending["metadata"]["deletionTimestamp"]
    still = core.read_namespaced_config_map("held", "default")
    assert still.metadata.deletion_timestamp is not None
    # a second delete changes nothing
    core.delete_namespaced_config_map("held", "default")
    assert core.read_namespaced_config_map("held", "default").metadata.resource_version == \
        still.metadata.resource_version
    # removing the last finalizer removes the object in that same request
    core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as excinfo:
        core.read_namespaced_config_map("held", "default")
    assert excinfo.value.status == 404


def test_no_new_finalizers_while_deleting(core):
    body = configmap("held")
    body["metadata"]["finalizers"] = ["a/b"]
    core.create_namespaced_config_map("default", body)
    core.delete_namespaced_config_map("held", "default")
    with pytest.raises(ApiException) as excinfo:
        core.patch_namespaced_config_map("held", "default",
                                         {"metadata": {"finalizers": ["a/b", "c/d"]}})
    assert excinfo.value.status == 422


def test_background_deletion_collects_dependents(core, sandbox):
    owner = core.create_namespaced_config_map("default", configmap("owner"))
    core.create_namespaced_config_map("default", owned_by(owner, "child-1"))
    child = core.create_namespaced_config_map("default", owned_by(owner, "child-2"))
    core.create_namespaced_config_map("default", owned_by(child, "grandchild"))
    core.create_namespaced_config_map("default", configmap("unrelated"))
    sandbox.background.pause()
    core.delete_namespaced_config_map("owner", "default")
    # DELETE returned: the owner is gone, its dependents are still there for a moment
    assert names(core) == ["child-1", "child-2", "grandchild", "unrelated"]
    sandbox.background.pause(False)
    names_become(core, ["unrelated"])


def test_dependent_with_another_live_owner_survives(core):
    one = core.create_namespaced_config_map("default", configmap("one"))
    two = core.create_namespaced_config_map("default", configmap("two"))
    body = owned_by(one, "shared")
    body["metadata"]["ownerReferences"] += owned_by(two, "x")["metadata"]["ownerReferences"]
    core.create_namespaced_config_map("default", body)
    core.delete_namespaced_config_map("one", "default")
    shared = eventually(lambda: len(core.read_namespaced_config_map(
        "shared", "default").metadata.owner_references) == 1 and core.read_namespaced_config_map(
        "shared", "default"), what="the reference to the deleted owner to go")
    assert [r.name for r in shared.metadata.owner_references] == ["two"]


def test_foreground_deletion_waits_for_dependents(core):
    owner = core.create_namespaced_config_map("default", configmap("owner"))
    held = owned_by(owner, "held-child", block=True)
    held["metadata"]["finalizers"] = ["example.com/slow"]
    core.create_namespaced_config_map("default", held)
    core.create_namespaced_config_map("default", owned_by(owner, "plain-child", block=True))
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Foreground")
    waiting = core.read_namespaced_config_map("owner", "default")
    assert waiting.metadata.deletion_timestamp is not None
    assert "foregroundDeletion" in waiting.metadata.finalizers
    names_become(core, ["held-child", "owner"])
    assert core.read_namespaced_config_map("held-child", "default").metadata.deletion_timestamp
    core.patch_namespaced_config_map("held-child", "default",
                                     {"metadata": {"finalizers": None}})
    names_become(core, [])


def test_foreground_without_dependents_goes_once_the_collector_ran(core, sandbox):
    core.create_namespaced_config_map("default", configmap("alone"))
    sandbox.background.pause()
    pending = json.loads(core.delete_namespaced_config_map(
        "alone", "default", propagation_policy="Foreground", _preload_content=False).data)
    assert pending["metadata"]["finalizers"] == ["foregroundDeletion"]
    sandbox.background.pause(False)
    names_become(core, [])


def test_orphan_deletion_keeps_dependents_without_the_reference(core, sandbox):
    owner = core.create_namespaced_config_map("default", configmap("owner"))
    core.create_namespaced_config_map("default", owned_by(owner, "child"))
    sandbox.background.pause()
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Orphan")
    assert core.read_namespaced_config_map("owner", "default").metadata.finalizers == ["orphan"]
    sandbox.background.pause(False)
    names_become(core, ["child"])
    assert not core.read_namespaced_config_map("child", "default").metadata.owner_references


def test_cluster_scoped_owner_collects_namespaced_dependents(core, apps):
    owner = core.create_namespace({"metadata": {"name": "owner-ns"}})
    body = configmap("child")
    body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Namespace",
                                            "name": "owner-ns", "uid": owner.metadata.uid}]
    core.create_namespaced_config_map("default", body)
    core.delete_namespace("owner-ns")
    names_become(core, [])


def test_delete_preconditions(core):
    made = core.create_namespaced_config_map("default", configmap("a"))
    with pytest.raises(ApiException) as excinfo:
        core.delete_namespaced_config_map("a", "default", body={
            "preconditions": {"resourceVersion": "1"}})
    assert excinfo.value.status == 409
    core.delete_namespaced_config_map("a", "default", body={
        "preconditions": {"uid": made.metadata.uid}})
    assert names(core) == []  # no finalizer, no dependents: gone when DELETE returns


def test_namespace_deletion_removes_its_content(core):
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", configmap("a"))
    core.create_namespaced_secret("doomed", {"metadata": {"name": "s"}})
    core.delete_namespace("doomed")
    eventually(lambda: "doomed" not in [n.metadata.name for n in core.list_namespace().items],
               what="the namespace to go")
    assert core.list_config_map_for_all_namespaces(
        field_selector="metadata.namespace=doomed").items == []


def test_namespace_terminates_until_finalized_content_is_gone(core):
    core.create_namespace({"metadata": {"name": "slow"}})
    body = configmap("held")
    body["metadata"]["finalizers"] = ["example.com/x"]
    core.create_namespaced_config_map("slow", body)
    core.delete_namespace("slow")
    ns = core.read_namespace("slow")
    assert ns.status.phase == "Terminating" and ns.spec.finalizers == ["kubernetes"]
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("slow", configmap("new"))
    assert excinfo.value.status == 403
    status = json.loads(excinfo.value.body)
    assert status["reason"] == "Forbidden"
    assert status["message"] == ('configmaps "new" is forbidden: unable to create new content '
                                 "in namespace slow because it is being terminated")
    assert status["details"]["causes"] == [{"reason": "NamespaceTerminating",
                                            "message": "namespace slow is being terminated",
                                            "field": "metadata.namespace"}]
    eventually(lambda: core.read_namespaced_config_map(
        "held", "slow").metadata.deletion_timestamp, what="the namespace controller")
    assert core.read_namespace("slow").status.phase == "Terminating"  # held by the finalizer
    core.patch_namespaced_config_map("held", "slow", {"metadata": {"finalizers": None}})

    def gone() -> bool:
        try:
            core.read_namespace("slow")
        except ApiException as exc:
            return exc.status == 404
        return False

    eventually(gone, what="the namespace to go")


def test_delete_collection_with_selector(core):
    core.create_namespaced_config_map("default", configmap("a", labels={"x": "1"}))
    core.create_namespaced_config_map("default", configmap("b", labels={"x": "2"}))
    core.delete_collection_namespaced_config_map("default", label_selector="x=1")
    assert names(core) == ["b"]


def test_foreground_waits_only_for_blocking_dependents(core):
    owner = core.create_namespaced_config_map("default", configmap("owner"))
    held = owned_by(owner, "held-child", block=False)
    held["metadata"]["finalizers"] = ["example.com/slow"]
    core.create_namespaced_config_map("default", held)
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Foreground")
    names_become(core, ["held-child"])  # the owner did not wait for a non-blocking one
    assert core.read_namespaced_config_map("held-child", "default").metadata.deletion_timestamp


def test_new_namespaces_get_the_name_label_and_finalizer(core):
    made = core.create_namespace({"metadata": {"name": "team-a", "labels": {"x": "y"}}})
    assert made.metadata.labels == {"x": "y", "kubernetes.io/metadata.name": "team-a"}
    assert made.spec.finalizers == ["kubernetes"]
    assert core.read_namespace("default").metadata.labels == {
        "kubernetes.io/metadata.name": "default"}
    # the label cannot be removed or changed: the server sets it on every write
    again = core.replace_namespace("team-a", {"metadata": {"name": "team-a", "labels": {
        "kubernetes.io/metadata.name": "other"}}})
    assert again.metadata.labels == {"kubernetes.io/metadata.name": "team-a"}
    assert again.spec.finalizers == ["kubernetes"]
    selected = core.list_namespace(label_selector="kubernetes.io/metadata.name=team-a")
    assert [n.metadata.name for n in selected.items] == ["team-a"]


def test_dependents_of_a_missing_owner_are_collected(core):
    body = configmap("orphaned")
    body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                            "name": "never", "uid": "no-such-uid"}]
    core.create_namespaced_config_map("default", body)  # accepted, as upstream
    names_become(core, [])


def test_dangling_references_are_removed_when_another_owner_lives(core):
    live = core.create_namespaced_config_map("default", configmap("live"))
    body = owned_by(live, "child")
    body["metadata"]["ownerReferences"].append({"apiVersion": "v1", "kind": "ConfigMap",
                                                "name": "never", "uid": "no-such-uid"})
    core.create_namespaced_config_map("default", body)
    eventually(lambda: len(core.read_namespaced_config_map(
        "child", "default").metadata.owner_references) == 1, what="the dangling reference to go")


def test_owner_in_another_namespace_is_invalid(core):
    core.create_namespace({"metadata": {"name": "elsewhere"}})
    owner = core.create_namespaced_config_map("elsewhere", configmap("owner"))
    core.create_namespaced_config_map("default", owned_by(owner, "child"))
    names_become(core, [])
    events = eventually(lambda: core.list_namespaced_event(
        "default", field_selector="reason=OwnerRefInvalidNamespace").items,
        what="the OwnerRefInvalidNamespace event")
    assert events[0].type == "Warning" and events[0].involved_object.name == "child"
    assert events[0].source.component == "garbage-collector-controller"
    assert names(core, "elsewhere") == ["owner"]
