"""Which user a binding's subject names (Kubernetes RBAC authorizer, `appliesToUser`).

A ServiceAccount subject is the user `system:serviceaccount:<namespace>:<name>`: the subject's
namespace counts, and only when it is empty does a RoleBinding's own namespace stand in (a
ClusterRoleBinding has none, so there it matches nobody). Same-named accounts of other
namespaces, and users or groups of the same name, are other subjects.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from promop.sandbox import Sandbox

ROLE_REF = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"}
CLUSTER_ROLE_REF = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ns-reader"}


@pytest.fixture
def cluster():
    """An RBAC sandbox with namespaces a and b, an account `app` in each, and the roles to bind."""
    with Sandbox(authorization="rbac") as sb:
        admin = client.CoreV1Api(sb.api_client())
        rbac = client.RbacAuthorizationV1Api(sb.api_client())
        for ns in ("a", "b"):
            admin.create_namespace({"metadata": {"name": ns}})
            admin.create_namespaced_service_account(ns, {"metadata": {"name": "app"}})
        rbac.create_namespaced_role("a", {"metadata": {"name": "cm-reader"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]})
        rbac.create_cluster_role({"metadata": {"name": "ns-reader"}, "rules": [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]})
        yield sb, rbac


def as_account(sb: Sandbox, namespace: str) -> client.CoreV1Api:
    return client.CoreV1Api(sb.api_client(sb.service_account_token(namespace, "app")))


def can(call, *args) -> bool:
    try:
        call(*args)
        return True
    except ApiException as exc:
        assert exc.status == 403, exc.body
        return False


def test_role_binding_subject_namespace_is_the_accounts(cluster):
    sb, rbac = cluster
    rbac.create_namespaced_role_binding("a", {"metadata": {"name": "b-app-reads-a"}, "roleRef": ROLE_REF,
                                              "subjects": [{"kind": "ServiceAccount", "name": "app",
                                                            "namespace": "b"}]})
    assert can(as_account(sb, "b").list_namespaced_config_map, "a")
    assert not can(as_account(sb, "a").list_namespaced_config_map, "a")


def test_role_binding_subject_without_namespace_means_the_bindings(cluster):
    sb, rbac = cluster
    rbac.create_namespaced_role_binding("a", {"metadata": {"name": "local-app-reads"}, "roleRef": ROLE_REF,
                                              "subjects": [{"kind": "ServiceAccount", "name": "app"}]})
    assert can(as_account(sb, "a").list_namespaced_config_map, "a")
    assert not can(as_account(sb, "b").list_namespaced_config_map, "a")


def test_cluster_role_binding_subject_namespace_is_the_accounts(cluster):
    sb, rbac = cluster
    rbac.create_cluster_role_binding({"metadata": {"name": "b-app-lists-ns"}, "roleRef": CLUSTER_ROLE_REF,
                                      "subjects": [{"kind": "ServiceAccount", "name": "app", "namespace": "b"}]})
    assert can(as_account(sb, "b").list_namespace)
    assert not can(as_account(sb, "a").list_namespace)


def test_cluster_role_binding_needs_the_service_account_namespace(cluster):
    _, rbac = cluster
    with pytest.raises(ApiException) as excinfo:
        rbac.create_cluster_role_binding({"metadata": {"name": "nobody"}, "roleRef": CLUSTER_ROLE_REF,
                                          "subjects": [{"kind": "ServiceAccount", "name": "app"}]})
    assert excinfo.value.status == 422
    causes = json.loads(excinfo.value.body)["details"]["causes"]
    assert any(c["field"] == "subjects[0].namespace" and c["reason"] == "FieldValueRequired" for c in causes)


def test_a_user_or_group_named_like_the_account_is_another_subject(cluster):
    sb, rbac = cluster
    rbac.create_namespaced_role_binding("a", {"metadata": {"name": "not-the-account"}, "roleRef": ROLE_REF,
                                              "subjects": [{"kind": "User", "name": "app"},
                                                           {"kind": "Group", "name": "app"},
                                                           {"kind": "Group", "name": "system:serviceaccount:a:app"},
                                                           {"kind": "User", "name": "system:serviceaccount:b:app"}]})
    assert not can(as_account(sb, "a").list_namespaced_config_map, "a")
    assert can(as_account(sb, "b").list_namespaced_config_map, "a")


def test_service_account_groups_are_per_namespace(cluster):
    sb, rbac = cluster
    rbac.create_namespaced_role_binding("a", {"metadata": {"name": "b-accounts"}, "roleRef": ROLE_REF,
                                              "subjects": [{"kind": "Group", "name": "system:serviceaccounts:b"}]})
    assert can(as_account(sb, "b").list_namespaced_config_map, "a")
    assert not can(as_account(sb, "a").list_namespaced_config_map, "a")
