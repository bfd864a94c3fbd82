"""The real kubectl against the sandbox: apply a CRD and a custom object from files, read them
back as YAML, update, describe and delete."""

from __future__ import annotations

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
    assert ns.metadata.labels == {"team": "obs"} and ns.metadata.generate_name is None
    assert core.read_namespaced_config_map("cfg", "monitoring").data == {"a": "b"}
    secret = core.read_namespaced_secret("creds", "monitoring")
    assert secret.data == {"password": "aHVudGVyMg=="} and secret.type == "Opaque"
    assert core.read_namespaced_service_account("bot", "monitoring").metadata.name == "bot"
    proc = kubectl("create", "deployment", "web", "--image=nginx", check=False)
    assert proc.returncode != 0 and "protobuf" in proc.stderr
