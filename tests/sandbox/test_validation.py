"""Validation of built-in kinds as a real kube-apiserver does it: status codes, reasons, causes
and messages as upstream words them (issue 18 §2), and the defaults it adds."""

from __future__ import annotations

import base64
import json

import pytest
from kubernetes.client import ApiException

from .helpers import configmap, raw


def refused(call, *args, **kwargs) -> tuple[int, dict]:
    with pytest.raises(ApiException) as excinfo:
        call(*args, **kwargs)
    return excinfo.value.status, json.loads(excinfo.value.body)


def causes(status: dict) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# -- ConfigMap / Secret ---------------------------------------------------------------------------

def test_config_map_keys_must_be_config_keys(core):
    code, status = refused(core.create_namespaced_config_map, "default",
                           {"metadata": {"name": "bad"}, "data": {"a key": "x", "..b": "y"}})
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["kind"] == "ConfigMap" and status["details"]["name"] == "bad"
    got = causes(status)
    assert got[0][:2] == ("FieldValueInvalid", "data[a key]")
    assert got[0][2].startswith('Invalid value: "a key": a valid config key must consist of '
                                "alphanumeric characters, '-', '_' or '.'")
    assert ("FieldValueInvalid", "data[..b]", "Invalid value: \"..b\": must not start with '..'") \
        in got
    assert status["message"].startswith('ConfigMap "bad" is invalid: [data[a key]: ')


def test_config_map_over_one_mebibyte_is_too_long(core):
    code, status = refused(core.create_namespaced_config_map, "default",
                           configmap("big", a="x" * (1024 * 1024)))
    assert code == 422
    assert causes(status) == [("FieldValueTooLong", "",
                               "Too long: must have at most 1048576 bytes")]
    core.create_namespaced_config_map("default", configmap("fits", a="x" * (1024 * 1000)))


def test_immutable_config_maps_and_secrets(core):
    core.create_namespaced_config_map("default", dict(configmap("frozen", a="1"), immutable=True))
    code, status = refused(core.patch_namespaced_config_map, "frozen", "default",
                           {"data": {"a": "2"}})
    assert code == 422
    assert causes(status) == [("FieldValueForbidden", "data",
                               "Forbidden: field is immutable when `immutable` is set")]
    code, status = refused(core.patch_namespaced_config_map, "frozen", "default",
                           {"immutable": False})
    assert ("FieldValueForbidden", "immutable",
            "Forbidden: field is immutable when `immutable` is set") in causes(status)
    # labels may still change
    core.patch_namespaced_config_map("frozen", "default", {"metadata": {"labels": {"a": "b"}}})
    core.create_namespaced_secret("default", {"metadata": {"name": "s"}, "immutable": True,
                                              "data": {"k": b64("v")}})
    code, status = refused(core.patch_namespaced_secret, "s", "default",
                           {"data": {"k": b64("w")}})
    assert code == 422 and causes(status)[0][1] == "data"


def test_secret_data_must_be_base64(core):
    code, status = refused(core.create_namespaced_secret, "default",
                           {"metadata": {"name": "s"}, "data": {"password": "hunter2!"}})
    assert code == 400 and status["reason"] == "BadRequest"
    assert status["message"] == ('Secret in version "v1" cannot be handled as a Secret: '
                                 "illegal base64 data at input byte 7")


def test_secret_type_rules(core):
    code, status = refused(core.create_namespaced_secret, "default", {
        "metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": b64("cert")}})
    assert code == 422
    assert causes(status) == [("FieldValueRequired", "data[tls.key]", "Required value")]
    core.create_namespaced_secret("default", {
        "metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": "cert", "tls.key": "key"}})
    code, status = refused(core.patch_namespaced_secret, "tls", "default", {"type": "Opaque"})
    assert code == 422
    assert causes(status) == [("FieldValueInvalid", "type",
                               'Invalid value: "Opaque": field is immutable')]
    code, status = refused(core.create_namespaced_secret, "default", {
        "metadata": {"name": "sa"}, "type": "kubernetes.io/service-account-token"})
    assert causes(status) == [("FieldValueRequired",
                               "metadata.annotations[kubernetes.io/service-account.name]",
                               "Required value")]
    # defaulted type
    made = core.create_namespaced_secret("default", {"metadata": {"name": "plain"}})
    assert made.type == "Opaque"


# -- Services -----------------------------------------------------------------------------------

def service(name="web", **spec) -> dict:
    spec.setdefault("ports", [{"port": 80}])
    return {"metadata": {"name": name}, "spec": {"selector": {"app": name}, **spec}}


def test_service_names_are_dns_1035_labels(core):
    code, status = refused(core.create_namespaced_service, "default", service("9lives"))
    assert code == 422
    assert causes(status)[0][:2] == ("FieldValueInvalid", "metadata.name")
    assert "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start " \
        "with an alphabetic character" in causes(status)[0][2]


def test_services_need_ports_unless_headless(core):
    code, status = refused(core.create_namespaced_service, "default", service(ports=[]))
    assert code == 422
    assert causes(status) == [("FieldValueRequired", "spec.ports", "Required value")]
    headless = core.create_namespaced_service("default", service("headless", ports=[],
                                                                 clusterIP="None"))
    assert headless.spec.cluster_ips == ["None"]
    code, status = refused(core.create_namespaced_service, "default", service(
        "two", ports=[{"port": 80}, {"port": 81, "name": "b"}]))
    assert ("FieldValueRequired", "spec.ports[0].name", "Required value") in causes(status)


def test_service_defaults_and_immutable_cluster_ip(core, api_client):
    made = raw(core.create_namespaced_service("default", service(), _preload_content=False))
    spec = made["spec"]
    assert spec["type"] == "ClusterIP" and spec["sessionAffinity"] == "None"
    assert spec["clusterIP"].startswith("10.") and spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert made["status"] == {"loadBalancer": {}}
    # a PUT that leaves clusterIP out keeps it (the apiserver copies it): no change, no write
    again = core.replace_namespaced_service("web", "default", service())
    assert again.spec.cluster_ip == spec["clusterIP"]
    assert again.metadata.resource_version == made["metadata"]["resourceVersion"]
    code, status = refused(core.patch_namespaced_service, "web", "default",
                           {"spec": {"clusterIP": "10.96.99.99", "clusterIPs": ["10.96.99.99"]}})
    assert code == 422
    assert causes(status) == [("FieldValueInvalid", "spec.clusterIPs[0]",
                               'Invalid value: []string{"10.96.99.99"}: may not change once set')]
    other = core.create_namespaced_service("default", service("other"))
    assert other.spec.cluster_ip != spec["clusterIP"]


# -- workloads ----------------------------------------------------------------------------------

def statefulset(name="db", labels=None, replicas=1) -> dict:
    return {"metadata": {"name": name}, "spec": {
        "replicas": replicas, "serviceName": name,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": labels if labels is not None else {"app": name}},
                     "spec": {"containers": [{"name": "db", "image": "db:1"}]}}}}


def test_statefulset_selector_must_match_template(apps):
    code, status = refused(apps.create_namespaced_stateful_set, "default",
                           statefulset(labels={"app": "other"}))
    assert code == 422
    assert causes(status) == [(
        "FieldValueInvalid", "spec.template.metadata.labels",
        'Invalid value: map[string]string{"app":"other"}: `selector` does not match template '
        "`labels`")]


def test_negative_replicas_are_invalid(apps):
    code, status = refused(apps.create_namespaced_stateful_set, "default",
                           statefulset(replicas=-1))
    assert code == 422
    assert causes(status) == [("FieldValueInvalid", "spec.replicas",
                               "Invalid value: -1: must be greater than or equal to 0")]


def test_statefulset_server_defaults(apps):
    made = raw(apps.create_namespaced_stateful_set("default", statefulset(),
                                                   _preload_content=False))
    spec = made["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["revisionHistoryLimit"] == 10
    assert spec["updateStrategy"] == {"type": "RollingUpdate",
                                      "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain",
                                                            "whenScaled": "Retain"}
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Always" and pod["dnsPolicy"] == "ClusterFirst"
    assert pod["terminationGracePeriodSeconds"] == 30
    assert pod["schedulerName"] == "default-scheduler" and pod["securityContext"] == {}
    container = pod["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    # the same object PUT again (as a controller without defaults would) is a no-op
    again = apps.replace_namespaced_stateful_set("db", "default", statefulset())
    assert again.metadata.resource_version == made["metadata"]["resourceVersion"]


# -- stale writes -------------------------------------------------------------------------------

def test_put_with_another_uid_is_a_precondition_conflict(core):
    made = core.create_namespaced_config_map("default", configmap("a"))
    body = configmap("a", k="v")
    body["metadata"]["uid"] = "0b9e1fa8-0000-0000-0000-000000000000"
    code, status = refused(core.replace_namespaced_config_map, "a", "default", body)
    assert code == 409 and status["reason"] == "Conflict"
    assert status["message"] == ("Precondition failed: UID in precondition: "
                                 "0b9e1fa8-0000-0000-0000-000000000000, UID in object meta: "
                                 f"{made.metadata.uid}")
    body["metadata"]["uid"] = made.metadata.uid
    core.replace_namespaced_config_map("a", "default", body)


def test_create_with_a_resource_version_is_refused(core):
    body = configmap("a")
    body["metadata"]["resourceVersion"] = "12"
    code, status = refused(core.create_namespaced_config_map, "default", body)
    assert code == 500 and "reason" not in status
    assert status["message"] == "resourceVersion should not be set on objects to be created"


# -- field selectors ----------------------------------------------------------------------------

def test_field_selectors_only_on_supported_fields(core, custom, make_crd):
    code, status = refused(core.list_namespaced_config_map, "default",
                           field_selector="data.a=1")
    assert code == 400 and status["reason"] == "BadRequest"
    assert status["message"] == "field label not supported: data.a"
    code, _ = refused(core.list_namespaced_config_map, "default", field_selector="data.a=1",
                      watch=True, _preload_content=False)
    assert code == 400
    core.list_namespaced_secret("default", field_selector="type=Opaque")
    core.list_namespaced_event("default", field_selector="involvedObject.name=x,reason=y")
    core.list_namespaced_pod("default", field_selector="status.phase=Running")
    make_crd()
    code, status = refused(custom.list_namespaced_custom_object, "example.com", "v1", "default",
                           "widgets", field_selector="spec.size=1")
    assert code == 400
    assert status["message"] == ('"spec.size" is not a known field selector: only '
                                 '"metadata.name", "metadata.namespace"')


# -- unknown fields of built-in kinds ---------------------------------------------------------

def test_unknown_fields_of_built_in_kinds_are_dropped_with_a_warning(sandbox, kubectl, tmp_path):
    import requests

    url = f"{sandbox.url}/apis/apps/v1/namespaces/default/statefulsets"
    body = statefulset()
    body["spec"]["replica"] = 3  # a typo: dropped, as the apiserver's decoder does
    body["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    made = requests.post(url, json=body)
    assert made.status_code == 201
    warning = made.headers["Warning"]
    assert '299 - "unknown field \\"spec.replica\\""' in warning
    assert '299 - "unknown field \\"spec.template.spec.containers[0].imagePullPolicyy\\""' \
        in warning
    assert "replica" not in made.json()["spec"]
    strict = requests.post(url, json=dict(body, metadata={"name": "strict"}),
                           params={"fieldValidation": "Strict"})
    assert strict.status_code == 400
    assert strict.json()["message"].startswith(
        'StatefulSet in version "v1" cannot be handled as a StatefulSet: strict decoding error: '
        'unknown field "spec.')
    assert 'unknown field "spec.replica"' in strict.json()["message"]
    # kubectl validates strictly by default
    path = tmp_path / "cm.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "typo"}, "dta": {"a": "1"}}))
    proc = kubectl("apply", "-f", str(path), check=False)
    assert proc.returncode != 0 and 'unknown field "dta"' in proc.stderr
