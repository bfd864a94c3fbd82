"""Name rules per kind, as kube-apiserver's validators (issue 21 §4): RBAC kinds and core/v1
Events need only a valid path segment (so `:` and capitals pass), Namespaces are DNS-1123
labels, Services DNS-1035 labels, APIServices exactly `version.group`, and everything else
(custom resources included) DNS-1123 subdomains."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException


def refusal(call, *args) -> str:
    with pytest.raises(ApiException) as excinfo:
        call(*args)
    assert excinfo.value.status == 422, excinfo.value.body
    status = json.loads(excinfo.value.body)
    assert [c["field"] for c in status["details"]["causes"]] == ["metadata.name"], status
    return status["details"]["causes"][0]["message"]


def meta(name: str, **extra) -> dict:
    return {"metadata": {"name": name}, **extra}


@pytest.fixture
def rbac(api_client):
    return client.RbacAuthorizationV1Api(api_client)


ROLE_REF = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"}


def test_rbac_names_are_path_segments(rbac):
    rbac.create_cluster_role_binding(meta("promop-adapter:system:auth-delegator", roleRef=ROLE_REF))
    rbac.create_cluster_role(meta("System:Aggregate-To-View"))
    rbac.create_namespaced_role("default", meta("team:reader.v1"))
    rbac.create_namespaced_role_binding("default", meta("team:reader", roleRef=ROLE_REF))
    assert refusal(rbac.create_cluster_role, meta("a/b")) == 'Invalid value: "a/b": may not contain \'/\''
    assert refusal(rbac.create_cluster_role, meta("50%")) == 'Invalid value: "50%": may not contain \'%\''
    assert refusal(rbac.create_namespaced_role, "default", meta("..")) == 'Invalid value: "..": may not be \'..\''


def test_most_kinds_need_subdomains(core, custom, make_crd):
    for name in ("a:b", "Web", "a_b"):
        message = refusal(core.create_namespaced_config_map, "default", meta(name))
        assert message.startswith(f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of')
    assert "must be no more than 253 characters" in refusal(
        core.create_namespaced_service_account, "default", meta("a" * 254))
    core.create_namespaced_config_map("default", meta("a.b-1"))
    make_crd()
    widgets = ("example.com", "v1", "default", "widgets")
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w:1"}}
    assert "RFC 1123 subdomain" in refusal(custom.create_namespaced_custom_object, *widgets, body)


def test_namespaces_are_labels_and_services_dns_1035_labels(core):
    core.create_namespace(meta("9lives"))
    assert "a lowercase RFC 1123 label must consist of" in refusal(core.create_namespace, meta("a.b"))
    assert "must be no more than 63 characters" in refusal(core.create_namespace, meta("a" * 64))
    service = {"spec": {"ports": [{"port": 80}]}}
    message = refusal(core.create_namespaced_service, "default", meta("9lives", **service))
    assert message.startswith('Invalid value: "9lives": a DNS-1035 label must consist of')
    assert "DNS-1035" in refusal(core.create_namespaced_service, "default", meta("a.b", **service))
    core.create_namespaced_service("default", meta("web-1", **service))


def test_core_events_are_path_segments_but_events_k8s_io_subdomains(core, api_client):
    involved = {"kind": "Pod", "namespace": "default", "name": "p"}
    core.create_namespaced_event("default", meta("p.17a:b", involvedObject=involved, reason="R"))
    event = meta("p.17a:b", eventTime="2026-11-27T10:00:00.000000Z", reportingController="x.io/c",
                 reportingInstance="i", action="A", reason="R", type="Normal", regarding=involved)
    message = refusal(client.EventsV1Api(api_client).create_namespaced_event, "default", event)
    assert "RFC 1123 subdomain" in message


def test_apiservice_names_are_version_dot_group(api_client):
    api = client.ApiregistrationV1Api(api_client)
    spec = {"group": "custom.metrics.k8s.io", "version": "v1beta2", "groupPriorityMinimum": 100,
            "versionPriority": 200, "insecureSkipTLSVerify": True,
            "service": {"namespace": "promop", "name": "promop-adapter"}}
    message = refusal(api.create_api_service, meta("v1beta1.custom.metrics.k8s.io", spec=spec))
    assert message == ('Invalid value: "v1beta1.custom.metrics.k8s.io": must be '
                       '`spec.version+"."+spec.group`: "v1beta2.custom.metrics.k8s.io"')
    api.create_api_service(meta("v1beta2.custom.metrics.k8s.io", spec=spec))
