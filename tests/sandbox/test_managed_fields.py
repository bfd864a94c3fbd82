"""metadata.managedFields: every write records its field manager, operation and FieldsV1 set,
visible wherever the object is (GET, LIST, WATCH, write responses, PartialObjectMetadata)."""

from __future__ import annotations

import json
import re
import time

import pytest
import requests
import yaml
from kubernetes.client import ApiException

from .helpers import KUBECTL, configmap, raw, write

PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
APPLY = {"Content-Type": "application/apply-patch+yaml"}
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
CREATED_FIELDS = {"f:data": {".": {}, "f:k": {}},
                  "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}


def managed(obj: dict) -> list[dict]:
    return obj["metadata"].get("managedFields") or []


def read_cm(core, name: str) -> dict:
    return raw(core.read_namespaced_config_map(name, "default", _preload_content=False))


@pytest.fixture
def created(core) -> dict:
    """A ConfigMap created through the python client (User-Agent OpenAPI-Generator/...)."""
    return raw(core.create_namespaced_config_map(
        "default", configmap("cm", labels={"app": "x"}, k="v"), _preload_content=False))


def test_create_records_one_update_entry_named_after_the_user_agent(core, created):
    assert managed(created) == managed(read_cm(core, "cm"))
    [entry] = managed(created)
    assert RFC3339.match(entry.pop("time"))
    assert entry == {"manager": "OpenAPI-Generator", "operation": "Update", "apiVersion": "v1",
                     "fieldsType": "FieldsV1", "fieldsV1": CREATED_FIELDS}


def test_updates_by_the_same_manager_merge_into_one_entry(core, created):
    body = read_cm(core, "cm")
    body["data"]["more"] = "1"
    updated = raw(core.replace_namespaced_config_map("cm", "default", body,
                                                     _preload_content=False))
    [entry] = managed(updated)
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:k": {}, "f:more": {}},
                                 "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
    # a write that changes nothing keeps the object, timestamps included
    again = raw(core.replace_namespaced_config_map("cm", "default", updated,
                                                   _preload_content=False))
    assert again["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]
    assert managed(again) == managed(updated)


def test_a_patch_by_another_manager_adds_an_entry_and_takes_the_fields_it_changed(core,
                                                                                  created):
    patched = raw(core.patch_namespaced_config_map(
        "cm", "default", {"data": {"k": "changed", "new": "1"}}, field_manager="other",
        _preload_content=False))
    entries = {e["manager"]: e for e in managed(patched)}
    assert set(entries) == {"OpenAPI-Generator", "other"}
    assert entries["other"]["operation"] == "Update"
    assert entries["other"]["fieldsV1"] == {"f:data": {"f:k": {}, "f:new": {}}}
    # the creator keeps the data map itself and the label, not the value "other" changed
    assert entries["OpenAPI-Generator"]["fieldsV1"] == {
        "f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}


def test_removed_fields_leave_every_set_and_an_empty_manager_goes(core, created):
    core.patch_namespaced_config_map("cm", "default", {"metadata": {"labels": {"extra": "1"}}},
                                     field_manager="labeller")
    removed = raw(core.patch_namespaced_config_map(
        "cm", "default", {"metadata": {"labels": {"app": None, "extra": None}}},
        field_manager="cleaner", _preload_content=False))
    entries = {e["manager"]: e for e in managed(removed)}
    assert set(entries) == {"OpenAPI-Generator"}  # labeller owned nothing else; cleaner set nothing
    assert entries["OpenAPI-Generator"]["fieldsV1"] == {
        "f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {}}}


def test_json_patch_and_strategic_merge_are_updates_too(core, created):
    core.patch_namespaced_config_map("cm", "default", [
        {"op": "add", "path": "/data/j", "value": "1"}], field_manager="jp")
    core.patch_namespaced_config_map("cm", "default", {"metadata": {"annotations": {"a": "b"}}},
                                     field_manager="smp")
    entries = {e["manager"]: e for e in managed(read_cm(core, "cm"))}
    assert entries["jp"]["fieldsV1"] == {"f:data": {"f:j": {}}}
    assert entries["smp"]["fieldsV1"] == {"f:metadata": {"f:annotations": {".": {},
                                                                           "f:a": {}}}}
    assert {e["operation"] for e in entries.values()} == {"Update"}


def test_server_side_apply_records_an_apply_entry_and_reapply_is_a_no_op(api_client, sandbox,
                                                                        created):
    pool = api_client.rest_client.pool_manager
    url = f"{sandbox.url}/api/v1/namespaces/default/configmaps/cm?fieldManager=applier"
    body = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "cm", "labels": {"team": "a"}},
                           "data": {"applied": "yes"}}).encode()
    first = json.loads(pool.request("PATCH", url, body=body, headers=APPLY).data)
    entries = managed(first)
    # Apply entries sort before Update entries, as the apiserver orders them
    assert [(e["manager"], e["operation"]) for e in entries] == [
        ("applier", "Apply"), ("OpenAPI-Generator", "Update")]
    assert entries[0]["fieldsV1"] == {"f:data": {"f:applied": {}},
                                      "f:metadata": {"f:labels": {"f:team": {}}}}
    second = json.loads(pool.request("PATCH", url, body=body, headers=APPLY).data)
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert managed(second) == entries


def test_apply_creates_with_only_an_apply_entry(api_client, sandbox):
    pool = api_client.rest_client.pool_manager
    url = f"{sandbox.url}/api/v1/namespaces/default/configmaps/fresh?fieldManager=applier"
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\ndata:\n  k: v\n"
    created = json.loads(pool.request("PATCH", url, body=body, headers=APPLY).data)
    assert [(e["manager"], e["operation"], e["fieldsV1"]) for e in managed(created)] == [
        ("applier", "Apply", {"f:data": {"f:k": {}}})]


def test_apply_without_field_manager_is_invalid(api_client, sandbox):
    pool = api_client.rest_client.pool_manager
    url = f"{sandbox.url}/api/v1/namespaces/default/configmaps/x"
    response = pool.request("PATCH", url, body=b"metadata:\n  name: x\n", headers=APPLY)
    assert response.status == 422
    status = json.loads(response.data)
    assert "fieldManager: Required value: is required for apply patch" in status["message"]


def test_status_subresource_writes_name_their_subresource(custom, make_crd):
    make_crd()
    custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 1}}, field_manager="maker")
    got = custom.patch_namespaced_custom_object_status(
        "example.com", "v1", "default", "widgets", "w", {"status": {"ready": True}},
        field_manager="reporter", _preload_content=False)
    entries = {e["manager"]: e for e in managed(raw(got))}
    assert entries["reporter"]["subresource"] == "status"
    assert entries["reporter"]["apiVersion"] == "example.com/v1"
    assert entries["reporter"]["fieldsV1"] == {"f:status": {".": {}, "f:ready": {}}}
    assert "subresource" not in entries["maker"]
    assert entries["maker"]["fieldsV1"] == {"f:spec": {".": {}, "f:size": {}}}


def test_keyed_and_set_lists_use_the_fieldsv1_key_forms(core):
    pod = {"metadata": {"name": "p", "finalizers": ["example.com/hold"]},
           "spec": {"containers": [{"name": "app", "image": "i:1", "args": ["a", "b"],
                                    "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}
    created = raw(core.create_namespaced_pod("default", pod, field_manager="m",
                                             _preload_content=False))
    [entry] = managed(created)
    port = 'k:{"containerPort":80,"protocol":"TCP"}'
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/hold"': {}}},
        "f:spec": {".": {}, "f:containers": {".": {}, 'k:{"name":"app"}': {
            ".": {}, "f:args": {}, "f:image": {}, "f:name": {},
            "f:ports": {".": {}, port: {".": {}, "f:containerPort": {}, "f:protocol": {}}}}}}}
    assert "f:status" not in entry["fieldsV1"]  # the server set status.phase, not "m"


def test_client_sent_managed_fields_are_ignored(core, created):
    body = read_cm(core, "cm")
    expected = managed(body)
    body["metadata"]["managedFields"] = []
    kept = raw(core.replace_namespaced_config_map("cm", "default", body,
                                                  _preload_content=False))
    assert managed(kept) == expected
    body["metadata"]["managedFields"] = [{"manager": "forged", "operation": "Update",
                                          "fieldsType": "FieldsV1", "fieldsV1": {}}]
    body["data"]["k"] = "w"
    changed = raw(core.replace_namespaced_config_map("cm", "default", body,
                                                     _preload_content=False))
    assert [e["manager"] for e in managed(changed)] == ["OpenAPI-Generator"]


def test_managed_fields_in_list_partial_metadata_and_watch(core, sandbox, created):
    listed = raw(core.list_namespaced_config_map("default", _preload_content=False))
    assert managed(listed["items"][0]) == managed(created)
    partial = raw(core.read_namespaced_config_map("cm", "default", _preload_content=False,
                                                  _headers={"Accept": PARTIAL}))
    assert partial["kind"] == "PartialObjectMetadata"
    assert managed(partial) == managed(created)
    partial_list = raw(core.list_namespaced_config_map("default", _preload_content=False,
                                                       _headers={"Accept": PARTIAL_LIST}))
    assert managed(partial_list["items"][0]) == managed(created)

    since = created["metadata"]["resourceVersion"]
    core.patch_namespaced_config_map("cm", "default", {"data": {"w": "1"}},
                                     field_manager="watched")
    deadline = time.monotonic() + 10
    with requests.get(f"{sandbox.url}/api/v1/namespaces/default/configmaps",
                      params={"watch": "true", "resourceVersion": since,
                              "timeoutSeconds": "10"}, stream=True, timeout=10) as response:
        for line in response.iter_lines():
            assert time.monotonic() < deadline, "no MODIFIED event arrived"
            if line:
                event = json.loads(line)
                break
    assert event["type"] == "MODIFIED"
    assert [e["manager"] for e in managed(event["object"])] == ["OpenAPI-Generator",
                                                                "watched"]


@pytest.mark.kubectl
@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_apply_client_and_server_side(kubectl, core, tmp_path):
    path = write(tmp_path / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "k", "namespace": "default"},
                                        "data": {"a": "1"}})
    kubectl("apply", "-f", path)
    [entry] = managed(read_cm(core, "k"))
    assert (entry["manager"], entry["operation"]) == ("kubectl-client-side-apply", "Update")
    assert "f:kubectl.kubernetes.io/last-applied-configuration" in \
        entry["fieldsV1"]["f:metadata"]["f:annotations"]

    write(tmp_path / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "k", "namespace": "default"},
                                 "data": {"a": "1", "b": "2"}})
    kubectl("apply", "--server-side", "--force-conflicts", "-f", path)
    entries = {e["manager"]: e for e in managed(read_cm(core, "k"))}
    assert entries["kubectl"]["operation"] == "Apply"
    assert entries["kubectl"]["fieldsV1"] == {"f:data": {"f:a": {}, "f:b": {}}}
    shown = yaml.safe_load(kubectl("get", "cm", "k", "-o", "yaml",
                                   "--show-managed-fields").stdout)
    # (kubectl also rewrites the last-applied annotation as "kubectl-last-applied"; its JSON
    # patch of managedFields, migrating client-side ownership, is ignored here)
    assert ("kubectl", "Apply") in {(e["manager"], e["operation"])
                                    for e in shown["metadata"]["managedFields"]}


def test_field_manager_longer_than_128_characters_is_invalid(core):
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("default", configmap("long"), field_manager="m" * 129)
    assert excinfo.value.status == 422


def test_scale_subresource_writes_name_their_subresource(apps):
    apps.create_namespaced_stateful_set("default", {
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "serviceName": "web", "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    apps.patch_namespaced_stateful_set_scale("web", "default", {"spec": {"replicas": 3}},
                                             field_manager="scaler")
    got = raw(apps.read_namespaced_stateful_set("web", "default", _preload_content=False))
    entries = {e["manager"]: e for e in managed(got)}
    assert entries["scaler"]["subresource"] == "scale"
    assert entries["scaler"]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
