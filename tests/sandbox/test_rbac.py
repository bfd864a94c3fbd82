"""Optional authentication and RBAC (issue 18 §4): bearer tokens (401), Roles/ClusterRoles and
their bindings (403 worded as upstream), `serviceaccounts/<name>/token`."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from promop.sandbox import Sandbox

from .helpers import configmap


@pytest.fixture
def rbac():
    with Sandbox(authorization="rbac") as sb:
        yield sb


def core_as(sb: Sandbox, token: str | None):
    return client.CoreV1Api(sb.api_client(token))


def refused(call, *args, **kwargs) -> tuple[int, dict]:
    with pytest.raises(ApiException) as excinfo:
        call(*args, **kwargs)
    return excinfo.value.status, json.loads(excinfo.value.body)


def test_unknown_or_missing_tokens_are_401(rbac):
    code, status = refused(core_as(rbac, "nope").list_namespace)
    assert code == 401 and status["reason"] == "Unauthorized" and status["message"] == "Unauthorized"
    api = rbac.api_client()
    api.configuration.api_key = {}
    code, _ = refused(client.CoreV1Api(api).list_namespace)
    assert code == 401
    assert core_as(rbac, None).list_namespace().items  # the sandbox's own token: admin


def test_service_account_rights_come_from_bindings(rbac):
    admin = core_as(rbac, None)
    admin.create_namespaced_service_account("default", {"metadata": {"name": "app"}})
    request = admin.create_namespaced_service_account_token("app", "default", {
        "spec": {"expirationSeconds": 600}})
    assert request.status.token and request.spec.expiration_seconds == 600
    app = core_as(rbac, request.status.token)
    code, status = refused(app.list_namespaced_config_map, "default")
    assert code == 403 and status["reason"] == "Forbidden"
    assert status["message"] == ('configmaps is forbidden: User "system:serviceaccount:default:app" '
                                 'cannot list resource "configmaps" in API group "" in the '
                                 'namespace "default"')
    rbac_api = client.RbacAuthorizationV1Api(rbac.api_client())
    rbac_api.create_namespaced_role("default", {
        "metadata": {"name": "cm-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
                  {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                   "resourceNames": ["allowed"]}]})
    rbac_api.create_namespaced_role_binding("default", {
        "metadata": {"name": "app-reads"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "app", "namespace": "default"}]})
    admin.create_namespaced_config_map("default", configmap("a"))
    assert [c.metadata.name for c in app.list_namespaced_config_map("default").items] == ["a"]
    code, status = refused(app.create_namespaced_config_map, "default", configmap("b"))
    assert code == 403 and 'cannot create resource "configmaps"' in status["message"]
    code, status = refused(app.list_namespaced_config_map, "kube-system")
    assert code == 403 and 'in the namespace "kube-system"' in status["message"]
    code, status = refused(app.list_namespace)
    assert code == 403 and status["message"].endswith("at the cluster scope")
    code, status = refused(app.read_namespaced_secret, "other", "default")
    assert code == 403 and status["message"].startswith('secrets "other" is forbidden')
    admin.create_namespaced_secret("default", {"metadata": {"name": "allowed"}})
    assert app.read_namespaced_secret("allowed", "default").metadata.name == "allowed"
    # cluster-wide through a ClusterRoleBinding; subresources by name
    rbac_api.create_cluster_role({"metadata": {"name": "ns-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["namespaces", "namespaces/status"],
         "verbs": ["list", "get"]}]})
    rbac_api.create_cluster_role_binding({
        "metadata": {"name": "app-ns"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "ns-reader"},
        "subjects": [{"kind": "Group", "name": "system:serviceaccounts:default"}]})
    assert app.list_namespace().items
    assert app.read_namespace_status("default").metadata.name == "default"
    # the token dies with its ServiceAccount
    admin.delete_namespaced_service_account("app", "default")
    code, _ = refused(app.list_namespace)
    assert code == 401


def test_token_requests_are_authorized_and_need_the_account(rbac):
    admin = core_as(rbac, None)
    code, _ = refused(admin.create_namespaced_service_account_token, "ghost", "default", {})
    assert code == 404
    admin.create_namespaced_service_account("default", {"metadata": {"name": "a"}})
    admin.create_namespaced_service_account("default", {"metadata": {"name": "b"}})
    token = rbac.service_account_token("default", "a")
    code, status = refused(core_as(rbac, token).create_namespaced_service_account_token,
                           "b", "default", {})
    assert code == 403
    assert 'cannot create resource "serviceaccounts/token"' in status["message"]


def test_aggregated_paths_need_a_token_too(rbac):
    import requests

    response = requests.get(f"{rbac.url}/apis/metrics.k8s.io/v1beta1")
    assert response.status_code == 401
