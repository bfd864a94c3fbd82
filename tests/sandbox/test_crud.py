"""Object semantics and error Statuses through the real kubernetes client."""

from __future__ import annotations

import base64
import json

import pytest
from kubernetes.client import ApiException

from .helpers import configmap, raw


def status_of(excinfo) -> dict:
    return json.loads(excinfo.value.body)


def test_default_namespaces_exist(core):
    names = {ns.metadata.name for ns in core.list_namespace().items}
    assert {"default", "kube-system"} <= names


def test_create_sets_uid_timestamp_and_increasing_resource_version(core):
    a = core.create_namespaced_config_map("default", configmap("a", k="v"))
    b = core.create_namespaced_secret("default", {"metadata": {"name": "b"}})
    assert a.metadata.uid and a.metadata.creation_timestamp
    assert int(b.metadata.resource_version) > int(a.metadata.resource_version)
    assert a.metadata.uid != b.metadata.uid
    got = core.read_namespaced_config_map("a", "default")
    assert got.data == {"k": "v"}
    assert got.metadata.resource_version == a.metadata.resource_version


def test_update_with_stale_resource_version_is_conflict(core):
    first = core.create_namespaced_config_map("default", configmap("a", k="1"))
    body = configmap("a", k="2")
    body["metadata"]["resourceVersion"] = first.metadata.resource_version
    second = core.replace_namespaced_config_map("a", "default", body)
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    with pytest.raises(ApiException) as excinfo:
        core.replace_namespaced_config_map("a", "default", body)  # still the old RV
    assert excinfo.value.status == 409
    status = status_of(excinfo)
    assert status["kind"] == "Status" and status["reason"] == "Conflict"
    assert status["status"] == "Failure" and status["code"] == 409 and status["message"]


def test_create_existing_is_already_exists(core):
    core.create_namespaced_config_map("default", configmap("a"))
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("default", configmap("a"))
    assert excinfo.value.status == 409
    assert status_of(excinfo)["reason"] == "AlreadyExists"


def test_missing_object_is_not_found(core):
    with pytest.raises(ApiException) as excinfo:
        core.read_namespaced_config_map("nope", "default")
    assert excinfo.value.status == 404
    assert status_of(excinfo)["reason"] == "NotFound"
    with pytest.raises(ApiException) as excinfo:
        core.delete_namespaced_secret("nope", "default")
    assert excinfo.value.status == 404


def test_create_in_missing_namespace_is_not_found(core):
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("no-such-ns", configmap("a"))
    assert excinfo.value.status == 404


def test_malformed_body_is_bad_request(api_client, sandbox):
    url = f"{sandbox.url}/api/v1/namespaces/default/configmaps"
    pool = api_client.rest_client.pool_manager
    response = pool.request("POST", url, body=b"{not json",
                            headers={"Content-Type": "application/json"})
    assert response.status == 400
    assert json.loads(response.data)["reason"] == "BadRequest"
    response = pool.request("POST", url, body=b'["a list"]',
                            headers={"Content-Type": "application/json"})
    assert response.status == 400


@pytest.mark.parametrize("name", ["Upper", "under_score", "-dash", "x" * 254])
def test_invalid_name_is_invalid(core, name):
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("default", configmap(name))
    assert excinfo.value.status == 422
    status = status_of(excinfo)
    assert status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "metadata.name"


def test_invalid_label_value_is_invalid(core):
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("default", configmap("a", labels={"k": "bad value"}))
    assert excinfo.value.status == 422


def test_missing_name_is_invalid_and_generate_name_works(core):
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("default", {"metadata": {}})
    assert excinfo.value.status == 422
    made = core.create_namespaced_config_map("default", {"metadata": {"generateName": "cm-"}})
    assert made.metadata.name.startswith("cm-") and len(made.metadata.name) == 8


def test_namespace_mismatch_is_bad_request(core):
    body = configmap("a")
    body["metadata"]["namespace"] = "kube-system"
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("default", body)
    assert excinfo.value.status == 400


def test_noop_update_keeps_resource_version(core, sandbox):
    made = core.create_namespaced_config_map("default", configmap("a", k="v"))
    again = core.replace_namespaced_config_map("a", "default", configmap("a", k="v"))
    assert again.metadata.resource_version == made.metadata.resource_version
    assert sandbox.store.rv == int(made.metadata.resource_version)


def test_server_owned_metadata_survives_update(core):
    made = core.create_namespaced_config_map("default", configmap("a"))
    body = configmap("a", k="v")
    body["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    updated = core.replace_namespaced_config_map("a", "default", body)
    assert updated.metadata.uid == made.metadata.uid
    assert updated.metadata.creation_timestamp == made.metadata.creation_timestamp


def test_secret_string_data_becomes_data(core):
    core.create_namespaced_secret("default", {"metadata": {"name": "s"},
                                              "stringData": {"password": "hunter2"}})
    secret = raw(core.read_namespaced_secret("s", "default", _preload_content=False))
    assert "stringData" not in secret
    assert base64.b64decode(secret["data"]["password"]) == b"hunter2"
    assert secret["type"] == "Opaque"


def test_delete_returns_status_and_object_is_gone(core):
    core.create_namespaced_config_map("default", configmap("a"))
    status = raw(core.delete_namespaced_config_map("a", "default", _preload_content=False))
    assert status["kind"] == "Status" and status["status"] == "Success"
    assert status["details"]["name"] == "a"
    assert core.list_namespaced_config_map("default").items == []


def test_all_built_in_resources_serve_crud(core, apps, api_client):
    from kubernetes import client

    leases = client.CoordinationV1Api(api_client)
    core.create_namespaced_service("default", {"metadata": {"name": "svc"},
                                               "spec": {"ports": [{"port": 80}]}})
    core.create_namespaced_endpoints("default", {"metadata": {"name": "svc"}})
    core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}]}})
    core.create_namespaced_event("default", {
        "metadata": {"name": "e1"}, "reason": "Started", "message": "hello", "type": "Normal",
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}})
    leases.create_namespaced_lease("default", {"metadata": {"name": "leader"},
                                               "spec": {"holderIdentity": "me"}})
    assert [e.reason for e in core.list_namespaced_event("default").items] == ["Started"]
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=p")
    assert len(events.items) == 1
    assert core.read_namespaced_service("svc", "default").spec.ports[0].port == 80
    assert core.read_namespaced_endpoints("svc", "default").metadata.name == "svc"
    assert core.read_namespaced_pod("p", "default").status.phase == "Pending"
    assert leases.read_namespaced_lease("leader", "default").spec.holder_identity == "me"
    deleted = core.delete_namespaced_pod("p", "default")
    assert deleted.metadata.name == "p"  # pods answer DELETE with the object


def test_protobuf_body_is_unsupported_media_type(api_client, sandbox):
    response = api_client.rest_client.pool_manager.request(
        "POST", f"{sandbox.url}/apis/apps/v1/namespaces/default/deployments",
        body=b"k8s\x00\x0a\x15\x0a\x07apps/v1\x12\x0aDeployment",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"})
    assert response.status == 415
    assert json.loads(response.data)["reason"] == "UnsupportedMediaType"

    response = api_client.rest_client.pool_manager.request(
        "POST", f"{sandbox.url}/api/v1/namespaces/default/configmaps", body=b"k8s\x00\x0a",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"})
    assert response.status == 400


def test_dry_run_checks_but_stores_nothing(core, sandbox):
    rv = sandbox.store.rv
    made = core.create_namespaced_config_map("default", configmap("a", k="v"), dry_run="All")
    assert made.metadata.name == "a" and made.metadata.uid
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("a", "default")
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("default", configmap("Bad"), dry_run="All")
    assert excinfo.value.status == 422
    core.create_namespaced_config_map("default", configmap("a", k="v"))
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "dry"}}, dry_run="All")
    core.delete_namespaced_config_map("a", "default", dry_run="All")
    assert core.read_namespaced_config_map("a", "default").data == {"k": "v"}
    assert sandbox.store.rv == rv + 1


def test_events_k8s_io_v1(api_client):
    from kubernetes import client

    events = client.EventsV1Api(api_client)
    events.create_namespaced_event("default", {
        "metadata": {"name": "e"}, "eventTime": "2026-11-22T00:00:00.000000Z",
        "reason": "Reconciled", "note": "ok", "type": "Normal", "action": "Sync",
        "reportingController": "promop", "reportingInstance": "promop-0",
        "regarding": {"kind": "Prometheus", "name": "k8s", "namespace": "default"}})
    listed = events.list_namespaced_event("default", field_selector="regarding.name=k8s")
    assert [e.reason for e in listed.items] == ["Reconciled"]


def test_annotations_over_256k_are_invalid(core):
    body = configmap("big")
    body["metadata"]["annotations"] = {"example.com/blob": "x" * 262144}
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("default", body)
    assert excinfo.value.status == 422
    assert "Too long" in json.loads(excinfo.value.body)["message"]


def test_chunked_request_body(sandbox, core):
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", sandbox.port, timeout=10)
    body = json.dumps(configmap("chunked", k="v")).encode()
    connection.request("POST", "/api/v1/namespaces/default/configmaps",
                       body=iter([body[:10], body[10:]]),
                       headers={"Content-Type": "application/json"}, encode_chunked=True)
    assert connection.getresponse().status == 201
    assert core.read_namespaced_config_map("chunked", "default").data == {"k": "v"}


def test_extension_points_serve_subresources_and_paths(sandbox, core):
    """Other modules add subresources and whole paths without touching the dispatch."""
    import requests

    core.create_namespaced_config_map("default", configmap("a"))

    def echo(api, verb, route, params, body, content_type, manager):
        obj = api.get(route.rt, route.namespace, route.name)
        return 200, {"kind": "Echo", "apiVersion": "v1", "verb": verb,
                     "name": obj["metadata"]["name"]}

    sandbox.subresources[("", "configmaps", "echo")] = echo

    def hello(handler, method, parts, params, raw, record):
        if parts[:3] != ["apis", "hello.example.com", "v1"]:
            return False
        record.code = 200
        handler._send_json(200, {"kind": "Hello", "path": "/".join(parts)})
        return True

    sandbox.request_hooks.append(hello)
    got = requests.get(f"{sandbox.url}/api/v1/namespaces/default/configmaps/a/echo").json()
    assert got == {"kind": "Echo", "apiVersion": "v1", "verb": "get", "name": "a"}
    assert requests.get(f"{sandbox.url}/apis/hello.example.com/v1/x").json()["kind"] == "Hello"
    assert requests.get(
        f"{sandbox.url}/api/v1/namespaces/default/configmaps/a/other").status_code == 404
