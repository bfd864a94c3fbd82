"""promop.kube.KubeClient against the sandbox and the real kube-apiserver: the same answers.

What the operator's code relies on: the status code and reason of each failure (AlreadyExists,
NotFound, Conflict on a stale resourceVersion, server-side apply's FieldManagerConflict), a write
that changes nothing keeping the resourceVersion, the status subresource splitting spec and
status writes, managedFields naming the field manager, and patches of the three kinds.
"""

from __future__ import annotations

import pytest

from promop.kube.errors import AlreadyExists, Conflict, Invalid, NotFound
from promop.kube.resources import CONFIGMAPS, PROMETHEUSES, SECRETS


def cm(name: str, ns: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


def test_create_get_and_the_errors_a_reconciler_catches(api):
    kube, ns = api.admin, api.ns
    made = kube.create(CONFIGMAPS, cm("a", ns, k="v"))
    assert kube.get(CONFIGMAPS, "a", ns)["data"] == {"k": "v"}
    with pytest.raises(AlreadyExists) as exists:
        kube.create(CONFIGMAPS, cm("a", ns, k="v"))
    assert exists.value.status == 409 and exists.value.message == 'configmaps "a" already exists'
    with pytest.raises(NotFound) as missing:
        kube.get(CONFIGMAPS, "nope", ns)
    assert missing.value.status == 404 and missing.value.message == 'configmaps "nope" not found'
    # an update that changes nothing keeps the resourceVersion (the operator's "no write" relies on it)
    same = kube.update(CONFIGMAPS, made)
    assert same["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    changed = kube.update(CONFIGMAPS, {**made, "data": {"k": "w"}})
    assert changed["metadata"]["resourceVersion"] != made["metadata"]["resourceVersion"]
    with pytest.raises(Conflict) as stale:
        kube.update(CONFIGMAPS, {**made, "data": {"k": "x"}})
    assert stale.value.status == 409 and stale.value.reason == "Conflict"
    assert stale.value.message == ('Operation cannot be fulfilled on configmaps "a": the object has been modified; '
                                   "please apply your changes to the latest version and try again")


def test_secret_defaults_and_string_data(api):
    kube, ns = api.admin, api.ns
    made = kube.create(SECRETS, {"metadata": {"name": "s", "namespace": ns}, "stringData": {"k": "v"}})
    assert made["type"] == "Opaque"
    assert made["data"] == {"k": "dg=="} and "stringData" not in made


def test_invalid_object_is_422_with_causes(api):
    kube, ns = api.admin, api.ns
    with pytest.raises(Invalid) as bad:
        kube.create(CONFIGMAPS, cm("Not_A_Name", ns))
    assert bad.value.status == 422
    causes = (bad.value.body or {}).get("details", {}).get("causes") or []
    assert [(c.get("reason"), c.get("field")) for c in causes] == [("FieldValueInvalid", "metadata.name")]


def test_patches_merge_json_strategic(api):
    kube, ns = api.admin, api.ns
    kube.create(CONFIGMAPS, cm("p", ns, a="1", b="2"))
    merged = kube.patch(CONFIGMAPS, "p", {"data": {"a": None, "c": "3"}}, ns)
    assert merged["data"] == {"b": "2", "c": "3"}
    jsoned = kube.patch(CONFIGMAPS, "p", [{"op": "replace", "path": "/data/b", "value": "9"}], ns, patch_type="json")
    assert jsoned["data"] == {"b": "9", "c": "3"}
    strategic = kube.patch(CONFIGMAPS, "p", {"metadata": {"labels": {"x": "y"}}}, ns, patch_type="strategic")
    assert strategic["metadata"]["labels"] == {"x": "y"}
    with pytest.raises(Invalid) as bad:  # a JSON patch test that fails is 422 on both
        kube.patch(CONFIGMAPS, "p", [{"op": "test", "path": "/data/b", "value": "0"}], ns, patch_type="json")
    assert bad.value.status == 422


def test_server_side_apply_managers_conflicts_and_force(api):
    kube, ns = api.admin, api.ns
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": ns}, "data": {"k": "a"}}
    made = kube.patch(CONFIGMAPS, "ssa", body, ns, patch_type="apply", field_manager="alice")
    managers = [(m["manager"], m["operation"]) for m in made["metadata"]["managedFields"]]
    assert managers == [("alice", "Apply")]
    with pytest.raises(Conflict) as conflict:
        kube.patch(CONFIGMAPS, "ssa", {**body, "data": {"k": "b"}}, ns, patch_type="apply", field_manager="bob")
    assert conflict.value.message == 'Apply failed with 1 conflict: conflict with "alice": .data.k'
    causes = conflict.value.body["details"]["causes"]
    assert [(c["reason"], c["field"]) for c in causes] == [("FieldManagerConflict", ".data.k")]
    forced = kube.patch(CONFIGMAPS, "ssa", {**body, "data": {"k": "b"}}, ns, patch_type="apply",
                        field_manager="bob", force=True)
    assert forced["data"] == {"k": "b"}
    # alice lost the field; an apply that drops a field its manager alone owned removes it
    assert [m["manager"] for m in forced["metadata"]["managedFields"]] == ["bob"]
    dropped = kube.patch(CONFIGMAPS, "ssa", {**body, "data": {"other": "1"}}, ns, patch_type="apply", field_manager="bob")
    assert dropped["data"] == {"other": "1"}


def test_update_records_the_field_manager_from_the_user_agent(api):
    kube, ns = api.admin, api.ns
    client = api.client()
    client.api_client.user_agent = "promop-test-manager/1.0 (x)"
    made = client.create(CONFIGMAPS, cm("m", ns, k="v"))
    assert [(m["manager"], m["operation"]) for m in made["metadata"]["managedFields"]] == [
        ("promop-test-manager", "Update")]
    assert kube.get(CONFIGMAPS, "m", ns)["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:data": {".": {}, "f:k": {}}}


def test_status_subresource_splits_spec_and_status_writes(api):
    kube, ns = api.admin, api.ns
    api.need_crds()
    prom = kube.create(PROMETHEUSES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                                      "metadata": {"name": "p", "namespace": ns}, "spec": {"replicas": 1}})
    assert prom["metadata"]["generation"] == 1
    # the main resource ignores status ...
    main = kube.update(PROMETHEUSES, {**prom, "status": {"replicas": 5}})
    assert "status" not in main or main["status"].get("replicas") != 5
    assert main["metadata"]["resourceVersion"] == prom["metadata"]["resourceVersion"]
    # ... /status ignores spec, and moves no generation
    status = kube.update(PROMETHEUSES, {**main, "spec": {"replicas": 3}, "status": {"replicas": 5}},
                         subresource="status")
    assert status["status"]["replicas"] == 5 and status["spec"]["replicas"] == 1
    assert status["metadata"]["generation"] == 1
    spec = kube.patch(PROMETHEUSES, "p", {"spec": {"replicas": 2}}, ns)
    assert spec["metadata"]["generation"] == 2 and spec["status"]["replicas"] == 5
    with pytest.raises(NotFound):
        kube.get(CONFIGMAPS, "x", ns, subresource="status")
