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


def test_aggregated_discovery_when_asked_first(api_client, sandbox, make_crd):
    """kubectl 1.26+ asks /api and /apis for apidiscovery.k8s.io v2, then v2beta1, then plain JSON: the
    apiserver answers the first it serves, with that Content-Type (which client-go decides by)."""
    make_crd()
    for version in ("v2", "v2beta1"):
        media = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
        response = api_client.rest_client.pool_manager.request(
            "GET", f"{sandbox.url}/apis", headers={"Accept": f"{media},application/json"})
        assert response.status == 200 and response.headers["Content-Type"] == media
        doc = json.loads(response.data)
        assert (doc["kind"], doc["apiVersion"]) == ("APIGroupDiscoveryList", f"apidiscovery.k8s.io/{version}")
        groups = {g["metadata"]["name"]: g for g in doc["items"]}
        assert "" not in groups   # the core group is /api's
        apps = groups["apps"]["versions"][0]
        assert (apps["version"], apps["freshness"]) == ("v1", "Current")
        sts = next(r for r in apps["resources"] if r["resource"] == "statefulsets")
        assert (sts["scope"], sts["responseKind"]["kind"], sts["singularResource"]) == (
            "Namespaced", "StatefulSet", "statefulset")
        assert {s["subresource"] for s in sts["subresources"]} == {"status", "scale"}
        # CRDs are in it as in the legacy list
        legacy = {g["name"] for g in get(api_client, sandbox, "/apis")[1]["groups"]}
        assert set(groups) == legacy
    code, doc = get(api_client, sandbox, "/api", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    core = doc["items"][0]["versions"][0]
    pods = next(r for r in core["resources"] if r["resource"] == "pods")
    assert pods["shortNames"] == ["po"] and "status" in {s["subresource"] for s in pods["subresources"]}
    sa = next(r for r in core["resources"] if r["resource"] == "serviceaccounts")
    token = next(s for s in sa["subresources"] if s["subresource"] == "token")
    assert token["responseKind"] == {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}


def test_plain_accept_gets_the_legacy_documents_and_unservable_ones_406(api_client, sandbox):
    for accept in ("application/json", "*/*", "application/json;as=Table;g=meta.k8s.io;v=v1,application/json"):
        code, doc = get(api_client, sandbox, "/apis", accept)
        assert code == 200 and doc["kind"] == "APIGroupList", accept
    code, doc = get(api_client, sandbox, "/apis",
                    "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList")
    assert code == 406 and doc["reason"] == "NotAcceptable"


def test_openapi_v3_lists_group_versions_with_field_validation(api_client, sandbox):
    code, root = get(api_client, sandbox, "/openapi/v3")
    assert code == 200 and "api/v1" in root["paths"] and "apis/apps/v1" in root["paths"]
    url = root["paths"]["api/v1"]["serverRelativeURL"]
    code, doc = get(api_client, sandbox, url)
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1",
                                                        "kind": "ConfigMap"}


# -- promop.kube.discovery: the shared negotiation and conversion --------------------------------------

def test_negotiation_in_the_clients_order():
    from promop.kube.discovery import negotiate

    v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    v2b = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    assert negotiate(f"{v2},{v2b},application/json") == "v2"
    assert negotiate(f"{v2b},{v2}") == "v2beta1"
    assert negotiate(f"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,{v2b}"
                     ) == "v2beta1"
    assert negotiate(f"application/json,{v2}") == "legacy"
    assert negotiate(None) == negotiate("") == "legacy"
    assert negotiate(v2, aggregated=False) == "not-acceptable"
    assert negotiate(f"{v2},application/json", aggregated=False) == "legacy"
    assert negotiate("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupList") == "not-acceptable"
    assert negotiate("application/json;g=other.io;v=v2;as=APIGroupDiscoveryList") == "not-acceptable"
    assert negotiate("text/plain") == "not-acceptable"


def test_legacy_to_aggregated_conversion():
    """As ConvertGroupVersionIntoToDiscovery: subresources under their parent (made up with an empty kind
    when missing), cross-group kinds kept, and a scope mismatch refused."""
    import pytest

    from promop.kube.discovery import ScopeMismatch, to_discovery_resources

    out = to_discovery_resources([
        {"name": "deployments/scale", "namespaced": True, "kind": "Scale", "group": "autoscaling", "version": "v1",
         "verbs": ["get"]},
        {"name": "deployments", "singularName": "deployment", "namespaced": True, "kind": "Deployment",
         "verbs": ["get", "list"], "shortNames": ["deploy"], "categories": ["all"]},
        {"name": "nodes/cpu", "namespaced": False, "kind": "MetricValueList", "verbs": ["get"]},
    ])
    assert out == [
        {"resource": "deployments", "responseKind": {"group": "", "version": "", "kind": "Deployment"},
         "scope": "Namespaced", "singularResource": "deployment", "verbs": ["get", "list"], "shortNames": ["deploy"],
         "categories": ["all"], "subresources": [{"subresource": "scale", "verbs": ["get"], "responseKind": {
             "group": "autoscaling", "version": "v1", "kind": "Scale"}}]},
        {"resource": "nodes", "responseKind": {"group": "", "version": "", "kind": ""}, "scope": "Cluster",
         "singularResource": "", "verbs": [], "subresources": [
             {"subresource": "cpu", "verbs": ["get"], "responseKind": {"group": "", "version": "",
                                                                      "kind": "MetricValueList"}}]}]
    mixed = [{"name": "services/a", "namespaced": True, "kind": "MetricValueList", "verbs": ["get"]},
             {"name": "services/b", "namespaced": False, "kind": "MetricValueList", "verbs": ["get"]}]
    with pytest.raises(ScopeMismatch, match="services"):
        to_discovery_resources(mixed)
    lenient = to_discovery_resources(mixed, strict=False)
    assert lenient[0]["scope"] == "Namespaced" and len(lenient[0]["subresources"]) == 2


def test_legacy_documents_refuse_an_aggregated_only_accept(api_client, sandbox):
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    for path in ("/api/v1", "/apis/apps", "/apis/apps/v1"):
        code, doc = get(api_client, sandbox, path, aggregated)
        assert code == 406 and doc["reason"] == "NotAcceptable", path
        code, doc = get(api_client, sandbox, path, f"{aggregated},application/json")
        assert code == 200 and doc["kind"] in ("APIResourceList", "APIGroup"), path


def test_group_versions_in_kubernetes_version_priority(api_client, sandbox, make_crd):
    """As kube-apiserver v1.28 answered for this very CRD (storage v1beta1; served v2alpha1, v1): the
    group's versions v1, v1beta1, v2alpha1 and v1 preferred, whatever version is stored; and a group
    shared by several CRDs (monitoring.coreos.com: v1, v1beta1, v1alpha1) prefers v1
    (tests/real_api/test_discovery_api.py checks that on the real one)."""
    make_crd(versions=("v1beta1", "v2alpha1", "v1"))
    code, doc = get(api_client, sandbox, "/apis/example.com")
    assert code == 200
    assert [v["version"] for v in doc["versions"]] == ["v1", "v1beta1", "v2alpha1"]
    assert doc["preferredVersion"] == {"groupVersion": "example.com/v1", "version": "v1"}
    make_crd(plural="gadgets", kind="Gadget", versions=("v1alpha1",))
    code, doc = get(api_client, sandbox, "/apis/example.com")
    assert doc["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in doc["versions"]] == ["v1", "v1beta1", "v2alpha1", "v1alpha1"]
