"""The real kubectl against the sandbox: apply a CRD and a custom object from files, read them
back as YAML, update, describe and delete."""

from __future__ import annotations

import time

import pytest
import yaml

from .helpers import KUBECTL, crd_body, write

pytestmark = [pytest.mark.kubectl,
              pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")]


def test_apply_crd_and_custom_object_get_yaml_and_delete(kubectl, tmp_path):
    crd_file = write(tmp_path / "crd.yaml", crd_body())
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w1", "labels": {"app": "demo"}}, "spec": {"size": 3}}
    widget_file = write(tmp_path / "widget.yaml", widget)
    assert "created" in kubectl("apply", "-f", crd_file).stdout
    assert "created" in kubectl("apply", "-f", widget_file).stdout
    got = yaml.safe_load(kubectl("get", "widgets", "w1", "-o", "yaml").stdout)
    assert got["spec"] == {"size": 3} and got["metadata"]["labels"] == {"app": "demo"}
    assert got["metadata"]["namespace"] == "default"

    widget["spec"]["size"] = 4
    write(tmp_path / "widget.yaml", widget)
    assert "configured" in kubectl("apply", "-f", widget_file).stdout
    got = yaml.safe_load(kubectl("get", "wi", "w1", "-o", "yaml").stdout)
    assert got["spec"] == {"size": 4} and got["metadata"]["generation"] == 2

    table = kubectl("get", "widgets").stdout
    assert table.split()[:3] == ["NAME", "AGE", "w1"]
    assert "w1" in kubectl("describe", "widget", "w1").stdout

    kubectl("delete", "-f", widget_file)
    assert "No resources found" in kubectl("get", "widgets").stderr
    kubectl("delete", "-f", crd_file)
    proc = kubectl("get", "widgets", check=False)
    assert proc.returncode != 0


def test_apply_built_in_objects_with_strategic_merge(kubectl, tmp_path, apps):
    statefulset = {"apiVersion": "apps/v1", "kind": "StatefulSet",
                   "metadata": {"name": "web"},
                   "spec": {"replicas": 1, "serviceName": "web",
                            "selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                                "containers": [{"name": "a", "image": "a:1"},
                                               {"name": "b", "image": "b:1"}]}}}}
    path = write(tmp_path / "sts.yaml", statefulset)
    kubectl("apply", "-f", path)
    containers = statefulset["spec"]["template"]["spec"]["containers"]
    containers[1]["image"] = "b:2"
    del containers[0]
    write(tmp_path / "sts.yaml", statefulset)
    assert "configured" in kubectl("apply", "-f", path).stdout
    got = apps.read_namespaced_stateful_set("web", "default")
    assert [(c.name, c.image) for c in got.spec.template.spec.containers] == [("b", "b:2")]
    assert "web" in kubectl("describe", "statefulset", "web").stdout
    kubectl("delete", "statefulset", "web")
    assert apps.list_namespaced_stateful_set("default").items == []


def test_get_namespaces_and_config_maps(kubectl, core):
    core.create_namespaced_config_map("kube-system", {"metadata": {"name": "cfg"},
                                                      "data": {"k": "v"}})
    names = kubectl("get", "ns", "-o", "name").stdout.split()
    assert {"namespace/default", "namespace/kube-system"} <= set(names)
    listed = yaml.safe_load(kubectl("get", "cm", "-A", "-o", "yaml").stdout)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["cfg"]
    assert "k" in kubectl("describe", "cm", "cfg", "-n", "kube-system").stdout


def test_imperative_create_generators_send_protobuf(kubectl, core):
    kubectl("create", "namespace", "monitoring")
    kubectl("label", "namespace", "monitoring", "team=obs")
    kubectl("create", "configmap", "cfg", "-n", "monitoring", "--from-literal=a=b")
    kubectl("create", "secret", "generic", "creds", "-n", "monitoring",
            "--from-literal=password=hunter2")
    kubectl("create", "serviceaccount", "bot", "-n", "monitoring")
    ns = core.read_namespace("monitoring")
    assert ns.metadata.labels == {"team": "obs", "kubernetes.io/metadata.name": "monitoring"} and ns.metadata.generate_name is None
    assert core.read_namespaced_config_map("cfg", "monitoring").data == {"a": "b"}
    secret = core.read_namespaced_secret("creds", "monitoring")
    assert secret.data == {"password": "aHVudGVyMg=="} and secret.type == "Opaque"
    assert core.read_namespaced_service_account("bot", "monitoring").metadata.name == "bot"
    proc = kubectl("create", "deployment", "web", "--image=nginx", check=False)
    assert proc.returncode != 0 and "protobuf" in proc.stderr


def test_get_events_shows_the_apiservers_columns(kubectl, core, api_client):
    """`kubectl get events` prints LAST SEEN, TYPE, REASON, OBJECT, MESSAGE, as against a
    real apiserver (issue 12), for core/v1 and events.k8s.io/v1 Events."""
    from kubernetes import client

    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 180))
    core.create_namespaced_event("default", {
        "metadata": {"name": "web.1"}, "type": "Warning", "reason": "BackOff",
        "message": "Back-off restarting failed container", "count": 4,
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": stamp, "lastTimestamp": stamp})
    client.EventsV1Api(api_client).create_namespaced_event("default", {
        "metadata": {"name": "sm.2"}, "type": "Normal", "reason": "Synced",
        "note": "config written", "action": "Sync", "reportingController": "promop",
        "reportingInstance": "promop-0",
        "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
        "regarding": {"kind": "ServiceMonitor", "name": "web", "namespace": "default"}})
    lines = kubectl("get", "events", "-n", "default").stdout.splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert lines[1].split()[:4] == ["3m", "Warning", "BackOff", "pod/web"]
    assert lines[1].endswith("Back-off restarting failed container")
    wide = kubectl("get", "events.v1.events.k8s.io", "-n", "default", "-o", "wide").stdout
    header, row = wide.splitlines()[:2]
    assert header.split()[:6] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT"]
    assert "servicemonitor/web" in row and "config written" in row and "promop" in row


def test_kubectl_create_token(kubectl, core):
    core.create_namespaced_service_account("default", {"metadata": {"name": "robot"}})
    token = kubectl("create", "token", "robot").stdout.strip()
    assert token.startswith("sandbox-sa-")
