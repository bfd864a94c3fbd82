"""CRDs: serving starts and stops with the CRD; custom objects; status, scale, generation."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from .helpers import raw


def widget(name: str, **spec) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": spec}


def test_creating_a_crd_serves_it_in_discovery(make_crd, api_client, sandbox):
    make_crd()
    groups = client.ApisApi(api_client).get_api_versions()
    assert "example.com" in [g.name for g in groups.groups]
    pool = api_client.rest_client.pool_manager
    resources = json.loads(pool.request("GET", f"{sandbox.url}/apis/example.com/v1").data)
    by_name = {r["name"]: r for r in resources["resources"]}
    assert by_name["widgets"]["kind"] == "Widget" and by_name["widgets"]["namespaced"] is True
    assert by_name["widgets"]["shortNames"] == ["wi"]
    assert "watch" in by_name["widgets"]["verbs"]
    assert "widgets/status" in by_name


def test_custom_object_crud(make_crd, custom):
    make_crd()
    made = custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets",
                                                  widget("w", size=1))
    assert made["metadata"]["uid"] and made["metadata"]["generation"] == 1
    got = custom.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w")
    assert got["spec"] == {"size": 1}
    patched = custom.patch_namespaced_custom_object("example.com", "v1", "default", "widgets",
                                                    "w", {"spec": {"size": 2}})
    assert patched["spec"]["size"] == 2
    listed = custom.list_namespaced_custom_object("example.com", "v1", "default", "widgets")
    assert listed["kind"] == "WidgetList" and len(listed["items"]) == 1
    custom.delete_namespaced_custom_object("example.com", "v1", "default", "widgets", "w")
    with pytest.raises(ApiException) as excinfo:
        custom.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w")
    assert excinfo.value.status == 404


def test_cluster_scoped_crd(make_crd, custom):
    make_crd(plural="gadgets", kind="Gadget", scope="Cluster")
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    custom.create_cluster_custom_object("example.com", "v1", "gadgets", body)
    listed = custom.list_cluster_custom_object("example.com", "v1", "gadgets")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["g"]
    assert "namespace" not in listed["items"][0]["metadata"]


def test_deleting_the_crd_stops_serving_it(make_crd, custom, ext):
    make_crd()
    custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets",
                                           widget("w"))
    ext.delete_custom_resource_definition("widgets.example.com")
    with pytest.raises(ApiException) as excinfo:
        custom.list_namespaced_custom_object("example.com", "v1", "default", "widgets")
    assert excinfo.value.status == 404
    make_crd()  # recreated: empty again
    listed = custom.list_namespaced_custom_object("example.com", "v1", "default", "widgets")
    assert listed["items"] == []


def test_invalid_crd_is_rejected(ext):
    body = {"metadata": {"name": "wrong.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True}]}}
    with pytest.raises(ApiException) as excinfo:
        ext.create_custom_resource_definition(body)
    assert excinfo.value.status == 422


def test_generation_bumps_only_on_spec_changes(make_crd, custom):
    make_crd()
    args = ("example.com", "v1", "default", "widgets")
    custom.create_namespaced_custom_object(*args, widget("w", size=1))
    labelled = custom.patch_namespaced_custom_object(*args, "w",
                                                     {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 1
    resized = custom.patch_namespaced_custom_object(*args, "w", {"spec": {"size": 2}})
    assert resized["metadata"]["generation"] == 2
    with_status = custom.patch_namespaced_custom_object_status(
        *args, "w", {"status": {"ready": True}})
    assert with_status["metadata"]["generation"] == 2
    assert with_status["status"] == {"ready": True}


def test_status_subresource_splits_writes(make_crd, custom):
    make_crd()
    args = ("example.com", "v1", "default", "widgets")
    made = custom.create_namespaced_custom_object(
        *args, dict(widget("w", size=1), status={"ignored": True}))
    assert "status" not in made  # create ignores status
    status_write = dict(made, spec={"size": 99}, status={"phase": "Ready"})
    after = custom.replace_namespaced_custom_object_status(*args, "w", status_write)
    assert after["status"] == {"phase": "Ready"} and after["spec"] == {"size": 1}
    main_write = dict(after, spec={"size": 3}, status={"phase": "Hacked"})
    after = custom.replace_namespaced_custom_object(*args, "w", main_write)
    assert after["status"] == {"phase": "Ready"} and after["spec"] == {"size": 3}


def test_without_status_subresource_status_is_ordinary(make_crd, custom):
    make_crd(plural="plain", kind="Plain", status=False)
    args = ("example.com", "v1", "default", "plain")
    body = {"apiVersion": "example.com/v1", "kind": "Plain", "metadata": {"name": "p"},
            "status": {"x": 1}}
    assert custom.create_namespaced_custom_object(*args, body)["status"] == {"x": 1}
    with pytest.raises(ApiException) as excinfo:
        custom.get_namespaced_custom_object_status(*args, "p")
    assert excinfo.value.status == 404


def test_scale_subresource(make_crd, custom):
    make_crd(scale=True)
    args = ("example.com", "v1", "default", "widgets")
    custom.create_namespaced_custom_object(*args, widget("w", replicas=2))
    scale = custom.get_namespaced_custom_object_scale(*args, "w")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2
    custom.patch_namespaced_custom_object_scale(*args, "w", {"spec": {"replicas": 5}})
    assert custom.get_namespaced_custom_object(*args, "w")["spec"]["replicas"] == 5


def test_strategic_merge_patch_is_unsupported_for_custom_objects(make_crd, custom, api_client,
                                                                  sandbox):
    make_crd()
    custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets",
                                           widget("w"))
    response = api_client.rest_client.pool_manager.request(
        "PATCH", f"{sandbox.url}/apis/example.com/v1/namespaces/default/widgets/w",
        body=b'{"spec":{"a":1}}',
        headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert response.status == 415


def test_crd_watch_ends_when_crd_deleted(make_crd, custom, ext, sandbox):
    make_crd()
    response = custom.list_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", watch=True, timeout_seconds=10,
        _preload_content=False)
    ext.delete_custom_resource_definition("widgets.example.com")
    assert response.read() == b""  # the stream ends cleanly, with no events


def test_crd_object_read_back_with_established_condition(make_crd, ext):
    crd = make_crd()
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    model = raw(ext.read_custom_resource_definition("widgets.example.com",
                                                    _preload_content=False))
    assert model["spec"]["names"]["plural"] == "widgets"


def test_multi_version_crd_serves_the_same_objects_under_each_version(make_crd, custom):
    make_crd(versions=("v1", "v2"))
    custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets",
                                           widget("w", size=1))
    got = custom.get_namespaced_custom_object("example.com", "v2", "default", "widgets", "w")
    assert got["apiVersion"] == "example.com/v2" and got["spec"] == {"size": 1}
    listed = custom.list_namespaced_custom_object("example.com", "v2", "default", "widgets")
    assert [i["apiVersion"] for i in listed["items"]] == ["example.com/v2"]


def test_custom_object_update_needs_a_resource_version(make_crd, custom):
    make_crd()
    args = ("example.com", "v1", "default", "widgets")
    made = custom.create_namespaced_custom_object(*args, widget("w", size=1))
    with pytest.raises(ApiException) as excinfo:
        custom.replace_namespaced_custom_object(*args, "w", widget("w", size=2))
    assert excinfo.value.status == 422
    assert "resourceVersion" in json.loads(excinfo.value.body)["message"]
    body = widget("w", size=2)
    body["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
    assert custom.replace_namespaced_custom_object(*args, "w", body)["spec"] == {"size": 2}


def test_reapplying_an_unchanged_crd_is_a_no_op(make_crd, ext, sandbox):
    from .helpers import crd_body

    crd = make_crd()
    body = crd_body()
    body["metadata"]["resourceVersion"] = crd["metadata"]["resourceVersion"]
    again = raw(ext.replace_custom_resource_definition("widgets.example.com", body,
                                                       _preload_content=False))
    assert again["metadata"]["resourceVersion"] == crd["metadata"]["resourceVersion"]
    assert again["metadata"]["generation"] == 1
