"""PATCH: JSON merge, JSON patch and strategic merge, through the client and as functions."""

from __future__ import annotations

import json

import pytest
from kubernetes.client import ApiException

from promop.sandbox.errors import ApiError
from promop.sandbox.patch import json_patch, merge_patch, strategic_merge

from .helpers import configmap


def pod(*containers, volumes=()) -> dict:
    return {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": n, "image": f"{n}:1"} for n in containers],
        "volumes": [{"name": v, "emptyDir": {}} for v in volumes]}}


def test_merge_patch_rfc7386():
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    assert merge_patch(target, {"a": "z", "c": {"f": None}, "l": [3]}) == \
        {"a": "z", "c": {"d": "e"}, "l": [3]}
    assert target == {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}  # not mutated


def test_json_patch_operations():
    doc = {"a": {"b": [1, 2, 3]}, "c": "x"}
    result = json_patch(doc, [
        {"op": "add", "path": "/a/b/1", "value": 9},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "replace", "path": "/c", "value": "y"},
        {"op": "add", "path": "/a/b/-", "value": 7},
        {"op": "copy", "from": "/c", "path": "/d"},
        {"op": "move", "from": "/d", "path": "/e~1f"},
        {"op": "test", "path": "/c", "value": "y"},
    ])
    assert result == {"a": {"b": [9, 2, 3, 7]}, "c": "y", "e/f": "y"}
    with pytest.raises(ApiError) as excinfo:
        json_patch(doc, [{"op": "test", "path": "/c", "value": "nope"}])
    assert excinfo.value.code == 422
    with pytest.raises(ApiError):
        json_patch(doc, [{"op": "remove", "path": "/missing"}])


def test_strategic_merge_containers_by_name():
    target = pod("a", "b", volumes=("v1",))["spec"]
    patch = {"containers": [{"name": "b", "image": "b:2"}, {"name": "c", "image": "c:1"}],
             "volumes": [{"name": "v2", "emptyDir": {}}]}
    result = strategic_merge(target, patch)
    assert [(c["name"], c["image"]) for c in result["containers"]] == \
        [("a", "a:1"), ("b", "b:2"), ("c", "c:1")]
    assert [v["name"] for v in result["volumes"]] == ["v1", "v2"]


def test_strategic_merge_directives():
    target = {"containers": [{"name": "a", "image": "a:1", "args": ["x"]},
                             {"name": "b", "image": "b:1"}],
              "finalizers": ["f1", "f2"], "labels": {"x": "1"}}
    patch = {"containers": [{"name": "a", "$patch": "delete"}],
             "$setElementOrder/containers": [{"name": "b"}],
             "$deleteFromPrimitiveList/finalizers": ["f1"],
             "labels": {"$patch": "replace", "y": "2"}}
    assert strategic_merge(target, patch) == {
        "containers": [{"name": "b", "image": "b:1"}], "finalizers": ["f2"],
        "labels": {"y": "2"}}


def test_strategic_merge_element_order_and_retain_keys():
    target = {"containers": [{"name": "a"}, {"name": "b"}],
              "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}
    patch = {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
             "strategy": {"$retainKeys": ["type"], "type": "Recreate"}}
    result = strategic_merge(target, patch)
    assert [c["name"] for c in result["containers"]] == ["b", "a"]
    assert result["strategy"] == {"type": "Recreate"}


def test_client_patches_pods_strategically(core):
    core.create_namespaced_pod("default", pod("a", "b"))
    patched = core.patch_namespaced_pod("p", "default", {"spec": {"containers": [
        {"name": "b", "image": "b:2"}]}})
    assert [(c.name, c.image) for c in patched.spec.containers] == [("a", "a:1"), ("b", "b:2")]


def test_client_json_patch(core):
    core.create_namespaced_config_map("default", configmap("a", k="v"))
    patched = core.patch_namespaced_config_map("a", "default", [
        {"op": "add", "path": "/data/k2", "value": "v2"},
        {"op": "remove", "path": "/data/k"}])
    assert patched.data == {"k2": "v2"}


def test_client_merge_patch(core):
    core.create_namespaced_config_map("default", configmap("a", labels={"x": "1"}, k="v"))
    patched = core.patch_namespaced_config_map(
        "a", "default", {"metadata": {"labels": {"x": None, "y": "2"}}},
        _content_type="application/merge-patch+json")
    assert patched.metadata.labels == {"y": "2"}


def test_patch_with_stale_resource_version_conflicts(core):
    made = core.create_namespaced_config_map("default", configmap("a"))
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "1"}})
    with pytest.raises(ApiException) as excinfo:
        core.patch_namespaced_config_map("a", "default", {
            "metadata": {"resourceVersion": made.metadata.resource_version},
            "data": {"k": "2"}})
    assert excinfo.value.status == 409


def test_failed_json_patch_test_is_invalid(core):
    core.create_namespaced_config_map("default", configmap("a", k="v"))
    with pytest.raises(ApiException) as excinfo:
        core.patch_namespaced_config_map("a", "default", [
            {"op": "test", "path": "/data/k", "value": "other"}])
    assert excinfo.value.status == 422


def test_patch_of_missing_object_is_not_found(core):
    with pytest.raises(ApiException) as excinfo:
        core.patch_namespaced_config_map("missing", "default", {"data": {}})
    assert excinfo.value.status == 404


def test_server_side_apply_creates_then_merges(api_client, sandbox, core):
    pool = api_client.rest_client.pool_manager
    url = f"{sandbox.url}/api/v1/namespaces/default/configmaps/ssa?fieldManager=test"
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: v\n"
    for _ in range(2):
        response = pool.request("PATCH", url, body=body,
                                headers={"Content-Type": "application/apply-patch+yaml"})
        assert response.status in (200, 201), response.data
        assert json.loads(response.data)["data"] == {"k": "v"}
    assert core.read_namespaced_config_map("ssa", "default").data == {"k": "v"}
