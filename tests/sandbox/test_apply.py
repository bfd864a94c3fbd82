"""Server-side apply (issue 18 §4): 201 on create, 400 without apiVersion/kind, field ownership
with 409 FieldManagerConflict and force, removal of fields a manager stops applying, list-map
merging by the CRD schema's keys."""

from __future__ import annotations

import pytest
import requests

APPLY = "application/apply-patch+yaml"
CM_URL = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def http(sandbox):
    session = requests.Session()

    def call(method, path, body=None, content_type="application/json", **params):
        import json

        return session.request(method, sandbox.url + path, params=params,
                               data=json.dumps(body) if body is not None else None,
                               headers={"Content-Type": content_type})

    yield call
    session.close()


def cm(name="a", **data) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_apply_creates_with_201_then_updates_with_200(http):
    made = http("PATCH", f"{CM_URL}/a", cm(k="1"), APPLY, fieldManager="alice")
    assert made.status_code == 201
    again = http("PATCH", f"{CM_URL}/a", cm(k="2"), APPLY, fieldManager="alice")
    assert again.status_code == 200 and again.json()["data"] == {"k": "2"}


def test_apply_without_api_version_or_kind_is_bad_request(http):
    body = cm()
    del body["kind"]
    response = http("PATCH", f"{CM_URL}/a", body, APPLY, fieldManager="alice")
    assert response.status_code == 400 and response.json()["reason"] == "BadRequest"
    body = cm()
    del body["apiVersion"]
    assert http("PATCH", f"{CM_URL}/a", body, APPLY, fieldManager="alice").status_code == 400


def test_conflicting_apply_is_409_until_forced(http):
    http("PATCH", f"{CM_URL}/a", cm(k="1", mine="x"), APPLY, fieldManager="alice")
    response = http("PATCH", f"{CM_URL}/a", cm(k="2"), APPLY, fieldManager="bob")
    assert response.status_code == 409
    status = response.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.k'
    assert status["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                            "message": 'conflict with "alice"',
                                            "field": ".data.k"}]
    # the same value is no conflict: both own it
    shared = http("PATCH", f"{CM_URL}/a", cm(k="1"), APPLY, fieldManager="carol")
    assert shared.status_code == 200
    forced = http("PATCH", f"{CM_URL}/a", cm(k="2"), APPLY, fieldManager="bob", force="true")
    assert forced.status_code == 200 and forced.json()["data"] == {"k": "2", "mine": "x"}
    owners = {e["manager"]: e["fieldsV1"] for e in forced.json()["metadata"]["managedFields"]}
    assert "f:k" in owners["bob"]["f:data"]
    assert "f:k" not in owners["alice"]["f:data"]  # taken by force
    assert "carol" not in owners  # carol owned only data.k
    # an Update's fields conflict too
    http("PUT", f"{CM_URL}/a", dict(forced.json(), data={"k": "2", "mine": "x", "u": "1"}),
         fieldManager="updater")
    response = http("PATCH", f"{CM_URL}/a", cm(u="2"), APPLY, fieldManager="alice")
    assert response.status_code == 409
    assert response.json()["message"] == \
        'Apply failed with 1 conflict: conflict with "updater" using v1: .data.u'
    bad = http("PATCH", f"{CM_URL}/a", {"data": {"x": "1"}}, "application/merge-patch+json",
               force="true")
    assert bad.status_code == 422


def test_fields_a_manager_stops_applying_are_removed(http):
    http("PATCH", f"{CM_URL}/a", cm(keep="1", drop="2"), APPLY, fieldManager="alice")
    response = http("PATCH", f"{CM_URL}/a", cm(keep="1"), APPLY, fieldManager="alice")
    assert response.json()["data"] == {"keep": "1"}
    # ... unless another manager owns them too
    http("PATCH", f"{CM_URL}/b", cm("b", a="1", b="2"), APPLY, fieldManager="alice")
    http("PATCH", f"{CM_URL}/b", cm("b", b="2"), APPLY, fieldManager="bob")
    response = http("PATCH", f"{CM_URL}/b", cm("b", a="1"), APPLY, fieldManager="alice")
    assert response.json()["data"] == {"a": "1", "b": "2"}
    # labels too
    body = cm("c")
    body["metadata"]["labels"] = {"x": "1", "y": "2"}
    http("PATCH", f"{CM_URL}/c", body, APPLY, fieldManager="alice")
    body["metadata"]["labels"] = {"x": "1"}
    response = http("PATCH", f"{CM_URL}/c", body, APPLY, fieldManager="alice")
    assert response.json()["metadata"]["labels"] == {"x": "1"}


def test_list_maps_merge_by_their_keys(http, make_crd, ext):
    make_crd()
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "integer"}, "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string"}, "port": {"type": "integer"}}}}}}}}
    ext.patch_custom_resource_definition("widgets.example.com", [
        {"op": "replace", "path": "/spec/versions/0/schema/openAPIV3Schema", "value": schema}])
    url = "/apis/example.com/v1/namespaces/default/widgets/w"

    def widget(*ports) -> dict:
        spec = {"ports": [{"name": n, "port": p} for n, p in ports]} if ports else {"a": 1}
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                "spec": spec}

    assert http("PATCH", url, widget(("web", 80)), APPLY, fieldManager="alice").status_code == 201
    merged = http("PATCH", url, widget(("metrics", 9090)), APPLY, fieldManager="bob")
    assert merged.json()["spec"]["ports"] == [{"name": "web", "port": 80},
                                              {"name": "metrics", "port": 9090}]
    # alice stops applying "web": it goes, bob's item stays
    dropped = http("PATCH", url, widget(), APPLY, fieldManager="alice")
    assert dropped.status_code == 200, dropped.text
    assert dropped.json()["spec"]["ports"] == [{"name": "metrics", "port": 9090}]


def test_kubectl_server_side_apply_conflicts(kubectl, tmp_path):
    import yaml

    path = tmp_path / "cm.yaml"
    path.write_text(yaml.safe_dump(cm("k", a="1")))
    kubectl("apply", "--server-side", "--field-manager", "alice", "-f", str(path))
    path.write_text(yaml.safe_dump(cm("k", a="2")))
    proc = kubectl("apply", "--server-side", "--field-manager", "bob", "-f", str(path),
                   check=False)
    assert proc.returncode != 0
    assert 'conflict with "alice"' in proc.stderr and ".data.a" in proc.stderr
    kubectl("apply", "--server-side", "--field-manager", "bob", "--force-conflicts", "-f",
            str(path))
    assert "a: \"2\"" in kubectl("get", "cm", "k", "-o", "yaml").stdout
