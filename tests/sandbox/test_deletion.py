"""Finalizers, deletionTimestamp, ownerReference garbage collection and namespaces."""

from __future__ import annotations

import json

import pytest
from kubernetes.client import ApiException

from .helpers import configmap


def owned_by(owner, name: str, block: bool = False) -> dict:
    body = configmap(name)
    body["metadata"]["ownerReferences"] = [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
        "uid": owner.metadata.uid, "blockOwnerDeletion": block}]
    return body


def names(core, namespace="default") -> list[str]:
    return [i.metadata.name for i in core.list_namespaced_config_map(namespace).items]


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


def test_background_deletion_collects_dependents(core):
    owner = core.create_namespaced_config_map("default", configmap("owner"))
    core.create_namespaced_config_map("default", owned_by(owner, "child-1"))
    child = core.create_namespaced_config_map("default", owned_by(owner, "child-2"))
    core.create_namespaced_config_map("default", owned_by(child, "grandchild"))
    core.create_namespaced_config_map("default", configmap("unrelated"))
    core.delete_namespaced_config_map("owner", "default")
    assert names(core) == ["unrelated"]


def test_dependent_with_another_live_owner_survives(core):
    one = core.create_namespaced_config_map("default", configmap("one"))
    two = core.create_namespaced_config_map("default", configmap("two"))
    body = owned_by(one, "shared")
    body["metadata"]["ownerReferences"] += owned_by(two, "x")["metadata"]["ownerReferences"]
    core.create_namespaced_config_map("default", body)
    core.delete_namespaced_config_map("one", "default")
    shared = core.read_namespaced_config_map("shared", "default")
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
    assert names(core) == ["held-child", "owner"]
    assert core.read_namespaced_config_map("held-child", "default").metadata.deletion_timestamp
    core.patch_namespaced_config_map("held-child", "default",
                                     {"metadata": {"finalizers": None}})
    assert names(core) == []


def test_foreground_without_dependents_deletes_at_once(core):
    core.create_namespaced_config_map("default", configmap("alone"))
    core.delete_namespaced_config_map("alone", "default", propagation_policy="Foreground")
    assert names(core) == []


def test_orphan_deletion_keeps_dependents_without_the_reference(core):
    owner = core.create_namespaced_config_map("default", configmap("owner"))
    core.create_namespaced_config_map("default", owned_by(owner, "child"))
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Orphan")
    assert names(core) == ["child"]
    assert not core.read_namespaced_config_map("child", "default").metadata.owner_references


def test_cluster_scoped_owner_collects_namespaced_dependents(core, apps):
    owner = core.create_namespace({"metadata": {"name": "owner-ns"}})
    body = configmap("child")
    body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Namespace",
                                            "name": "owner-ns", "uid": owner.metadata.uid}]
    core.create_namespaced_config_map("default", body)
    core.delete_namespace("owner-ns")
    assert names(core) == []


def test_delete_preconditions(core):
    made = core.create_namespaced_config_map("default", configmap("a"))
    with pytest.raises(ApiException) as excinfo:
        core.delete_namespaced_config_map("a", "default", body={
            "preconditions": {"resourceVersion": "1"}})
    assert excinfo.value.status == 409
    core.delete_namespaced_config_map("a", "default", body={
        "preconditions": {"uid": made.metadata.uid}})
    assert names(core) == []


def test_namespace_deletion_removes_its_content(core):
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", configmap("a"))
    core.create_namespaced_secret("doomed", {"metadata": {"name": "s"}})
    core.delete_namespace("doomed")
    assert "doomed" not in [n.metadata.name for n in core.list_namespace().items]
    assert core.list_config_map_for_all_namespaces(
        field_selector="metadata.namespace=doomed").items == []


def test_namespace_terminates_until_finalized_content_is_gone(core):
    core.create_namespace({"metadata": {"name": "slow"}})
    body = configmap("held")
    body["metadata"]["finalizers"] = ["example.com/x"]
    core.create_namespaced_config_map("slow", body)
    core.delete_namespace("slow")
    ns = core.read_namespace("slow")
    assert ns.status.phase == "Terminating"
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("slow", configmap("new"))
    assert excinfo.value.status == 403
    core.patch_namespaced_config_map("held", "slow", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as excinfo:
        core.read_namespace("slow")
    assert excinfo.value.status == 404


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
    assert names(core) == ["held-child"]  # the owner did not wait for a non-blocking one
    assert core.read_namespaced_config_map("held-child", "default").metadata.deletion_timestamp
