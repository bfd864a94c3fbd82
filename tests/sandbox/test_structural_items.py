"""Pruning, defaulting and nulls inside array items and map values, as the apiserver does them.

Kubernetes docs (CustomResourceDefinition, "Field pruning" and "Defaulting"): unknown fields are
pruned at every level of a structural schema, array items and `additionalProperties` values
included; defaults apply "in items"; "null values for fields that either don't specify the
nullable flag, or give it a false value, will be pruned before defaulting happens. If a default is
present, it will be applied", while `nullable: true` keeps the null (the docs' foo/bar/baz example).
"""

from __future__ import annotations

import json

import pytest
import requests

ITEM = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"},
    "port": {"type": "integer", "default": 80},
    "tls": {"type": "object", "properties": {"mode": {"type": "string", "default": "strict"}}},
}}
SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "ports": {"type": "array", "items": ITEM},
                "matrix": {"type": "array", "items": {"type": "array", "items": ITEM}},
                "byName": {"type": "object", "additionalProperties": ITEM},
                "foo": {"type": "string", "default": "default"},
                "bar": {"type": "string", "nullable": True, "default": "default"},
                "baz": {"type": "string"},
                "keep": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}
URL = "/apis/example.com/v1/namespaces/default/widgets"


@pytest.fixture
def widgets(make_crd, ext, sandbox):
    make_crd()
    ext.patch_custom_resource_definition("widgets.example.com", [
        {"op": "replace", "path": "/spec/versions/0/schema/openAPIV3Schema", "value": SCHEMA}])
    session = requests.Session()

    def post(spec: dict, name: str = "w", **params) -> requests.Response:
        body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}
        return session.post(sandbox.url + URL, params=params, data=json.dumps(body),
                            headers={"Content-Type": "application/json"})

    def get(name: str = "w") -> dict:
        return session.get(sandbox.url + URL + "/" + name).json()

    def patch(body: dict, name: str = "w") -> requests.Response:
        return session.patch(sandbox.url + URL + "/" + name, data=json.dumps(body),
                             headers={"Content-Type": "application/merge-patch+json"})

    post.get = get
    post.patch = patch
    yield post
    session.close()


def test_unknown_fields_inside_array_items_are_pruned_with_a_warning(widgets):
    made = widgets({"ports": [{"name": "a", "port": 1, "bogus": True}, {"name": "b", "port": 2}]})
    assert made.status_code == 201, made.text
    assert made.json()["spec"]["ports"] == [{"name": "a", "port": 1}, {"name": "b", "port": 2}]
    assert '\\"spec.ports[0].bogus\\"' in made.headers["Warning"]
    assert widgets.get()["spec"]["ports"][0] == {"name": "a", "port": 1}


def test_unknown_fields_inside_nested_items_and_map_values_are_pruned(widgets):
    made = widgets({"matrix": [[{"name": "a", "port": 1, "x": 1}]],
                    "byName": {"one": {"name": "a", "port": 1, "y": 2}},
                    "keep": {"anything": [{"z": 1}]}})
    assert made.status_code == 201, made.text
    spec = made.json()["spec"]
    assert spec["matrix"] == [[{"name": "a", "port": 1}]]
    assert spec["byName"] == {"one": {"name": "a", "port": 1}}
    assert spec["keep"] == {"anything": [{"z": 1}]}


def test_strict_refuses_an_unknown_field_inside_an_item(widgets):
    refused = widgets({"ports": [{"name": "a", "bogus": 1}]}, fieldValidation="Strict")
    assert refused.status_code == 400
    assert 'unknown field "spec.ports[0].bogus"' in refused.json()["message"]


def test_defaults_apply_inside_array_items(widgets):
    made = widgets({"ports": [{"name": "a"}, {"name": "b", "port": 8443, "tls": {}}]})
    assert made.status_code == 201, made.text
    assert made.json()["spec"]["ports"] == [{"name": "a", "port": 80},
                                            {"name": "b", "port": 8443, "tls": {"mode": "strict"}}]
    assert widgets.get()["spec"]["ports"][0]["port"] == 80


def test_defaults_apply_inside_nested_items_and_map_values(widgets):
    made = widgets({"matrix": [[{"name": "a"}]], "byName": {"one": {"name": "a"}}})
    assert made.status_code == 201, made.text
    spec = made.json()["spec"]
    assert spec["matrix"] == [[{"name": "a", "port": 80}]]
    assert spec["byName"] == {"one": {"name": "a", "port": 80}}


def test_null_is_absent_unless_nullable(widgets):
    # the Kubernetes docs' example: foo pruned then defaulted, bar keeps its null, baz pruned
    made = widgets({"foo": None, "bar": None, "baz": None})
    assert made.status_code == 201, made.text
    assert made.json()["spec"] == {"foo": "default", "bar": None}
    assert widgets.get()["spec"] == {"foo": "default", "bar": None}


def test_null_inside_an_item_is_absent_too(widgets):
    made = widgets({"ports": [{"name": "a", "port": None}]})
    assert made.status_code == 201, made.text
    assert made.json()["spec"]["ports"] == [{"name": "a", "port": 80}]


def test_a_patch_is_pruned_and_defaulted_inside_items_too(widgets):
    assert widgets({"ports": [{"name": "a", "port": 1}]}).status_code == 201
    patched = widgets.patch({"spec": {"ports": [{"name": "b", "bogus": 1}, {"name": "c", "port": None}]}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["spec"]["ports"] == [{"name": "b", "port": 80}, {"name": "c", "port": 80}]
    assert widgets.get()["spec"]["ports"] == [{"name": "b", "port": 80}, {"name": "c", "port": 80}]
