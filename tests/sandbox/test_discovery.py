"""Discovery documents through the client's own discovery calls."""

from __future__ import annotations

import json

from kubernetes import client


def get(api_client, sandbox, path: str, accept: str = "application/json"):
    response = api_client.rest_client.pool_manager.request(
        "GET", f"{sandbox.url}{path}", headers={"Accept": accept})
    return response.status, json.loads(response.data)


def test_version(api_client):
    info = client.VersionApi(api_client).get_code()
    assert info.major == "1" and info.git_version.startswith("v1.")


def test_core_group_and_resources(api_client):
    assert client.CoreApi(api_client).get_api_versions().versions == ["v1"]
    resources = {r.name: r for r in client.CoreV1Api(api_client).get_api_resources().resources}
    for name in ("namespaces", "configmaps", "secrets", "services", "endpoints", "pods",
                 "events"):
        assert name in resources, name
    assert resources["namespaces"].namespaced is False
    assert resources["configmaps"].namespaced is True
    assert resources["configmaps"].short_names == ["cm"]
    assert set(resources["configmaps"].verbs) >= {"get", "list", "watch", "create", "update",
                                                  "patch", "delete"}
    assert "pods/status" in resources


def test_api_groups(api_client):
    groups = {g.name: g for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {"apps", "coordination.k8s.io", "apiextensions.k8s.io"} <= set(groups)
    assert groups["apps"].preferred_version.group_version == "apps/v1"
    apps = {r.name: r for r in client.AppsV1Api(api_client).get_api_resources().resources}
    assert apps["statefulsets"].kind == "StatefulSet"
    assert {"statefulsets/status", "statefulsets/scale"} <= set(apps)


def test_group_document_and_unknown_paths(api_client, sandbox):
    code, group = get(api_client, sandbox, "/apis/apps")
    assert code == 200 and group["kind"] == "APIGroup" and group["name"] == "apps"
    code, status = get(api_client, sandbox, "/apis/nothing.example.com/v1")
    assert code == 404 and status["kind"] == "Status" and status["reason"] == "NotFound"
    code, status = get(api_client, sandbox, "/api/v1/namespaces/default/nothings")
    assert code == 404


def test_aggregated_discovery_request_falls_back_to_the_plain_format(api_client, sandbox):
    accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json")
    code, doc = get(api_client, sandbox, "/apis", accept)
    assert code == 200 and doc["kind"] == "APIGroupList"


def test_openapi_v3_lists_group_versions_with_field_validation(api_client, sandbox):
    code, root = get(api_client, sandbox, "/openapi/v3")
    assert code == 200 and "api/v1" in root["paths"] and "apis/apps/v1" in root["paths"]
    url = root["paths"]["api/v1"]["serverRelativeURL"]
    code, doc = get(api_client, sandbox, url)
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1",
                                                        "kind": "ConfigMap"}
