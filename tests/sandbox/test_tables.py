"""Table output for kubectl get: printer columns and the JSONPath subset they use."""

from __future__ import annotations

import json

from promop.sandbox.tables import json_path

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_json_path_subset():
    obj = {"spec": {"replicas": 2, "items": [{"a": 1}]},
           "status": {"conditions": [{"type": "Ready", "status": "True"},
                                     {"type": "Available", "status": "False"}]}}
    assert json_path(obj, ".spec.replicas") == 2
    assert json_path(obj, ".spec.items[0].a") == 1
    assert json_path(obj, '.status.conditions[?(@.type=="Available")].status') == "False"
    assert json_path(obj, ".status.conditions[?(@.type == 'Ready')].status") == "True"
    assert json_path(obj, ".spec.missing") is None


def test_custom_resource_table_uses_printer_columns(make_crd, ext, custom, api_client, sandbox):
    make_crd()
    ext.patch_custom_resource_definition("widgets.example.com", [
        {"op": "add", "path": "/spec/versions/0/additionalPrinterColumns", "value": [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Ready", "type": "string",
             "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}]}])
    custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 3}})
    response = api_client.rest_client.pool_manager.request(
        "GET", f"{sandbox.url}/apis/example.com/v1/namespaces/default/widgets",
        headers={"Accept": TABLE})
    table = json.loads(response.data)
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Ready"]
    assert table["rows"][0]["cells"] == ["w", 3, None]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_built_in_table_has_name_and_age(core, api_client, sandbox):
    response = api_client.rest_client.pool_manager.request(
        "GET", f"{sandbox.url}/api/v1/namespaces/default", headers={"Accept": TABLE})
    table = json.loads(response.data)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"][0] == "default"
    assert table["rows"][0]["cells"][1].endswith("s")
