"""The structural walk (promop.schema.walk): which fields are unknown, pruning them, defaults;
and that the sandbox and offline validation use this one walk."""

from __future__ import annotations

import copy

from promop.sandbox import structural
from promop.schema import unknown_fields, walk
from promop.schema.walk import apply_defaults, prune

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "items": {"type": "array", "items": {
                    "type": "object", "properties": {"n": {"type": "string"},
                                                     "mode": {"type": "string", "default": "fast"}}}},
                "byName": {"type": "object", "additionalProperties": {
                    "type": "object", "properties": {"port": {"type": "integer", "default": 80}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"known": {"type": "object", "properties": {"k": {"type": "string"}}}}},
                "anything": {"type": "object", "additionalProperties": True},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                "limit": {"type": "integer", "default": 5},
                "maybe": {"type": "integer", "nullable": True, "default": 7},
            },
        },
    },
}


def sample() -> dict:
    return {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "odd": 1},
        "spec": {
            "a": "x", "foo": 1,
            "items": [{"n": "1", "bad": True}, {"n": "2"}],
            "byName": {"web": {"port": 8080, "bad": 1}, "db": {}},
            "free": {"whatever": {"deep": 1}, "known": {"k": "v", "bad": 2}},
            "anything": {"z": {"y": 1}},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"x": "1", "bad": 3}},
        },
    }


EXPECTED_UNKNOWN = [
    "spec.foo", "spec.items[0].bad", "spec.byName[web].bad", "spec.free.known.bad", "spec.template.spec.bad",
]


def test_unknown_fields_leaves_the_object_alone():
    obj = sample()
    assert sorted(unknown_fields(obj, SCHEMA)) == sorted(EXPECTED_UNKNOWN)
    assert obj == sample()


def test_prune_removes_exactly_the_unknown_fields():
    obj = sample()
    assert sorted(prune(obj, SCHEMA)) == sorted(EXPECTED_UNKNOWN)
    expected = sample()
    del expected["spec"]["foo"], expected["spec"]["items"][0]["bad"], expected["spec"]["byName"]["web"]["bad"]
    del expected["spec"]["free"]["known"]["bad"], expected["spec"]["template"]["spec"]["bad"]
    assert obj == expected
    assert obj["metadata"] == {"name": "w", "odd": 1}  # ObjectMeta is not the CRD's to prune


def test_defaults_in_items_and_map_values_and_for_nulls():
    obj = {"spec": {"items": [{"n": "1"}, {"n": "2", "mode": "slow"}], "byName": {"db": {}, "web": {"port": 1}},
                    "limit": None, "maybe": None}}
    apply_defaults(obj, SCHEMA)
    assert obj["spec"]["items"] == [{"n": "1", "mode": "fast"}, {"n": "2", "mode": "slow"}]
    assert obj["spec"]["byName"] == {"db": {"port": 80}, "web": {"port": 1}}
    assert obj["spec"]["limit"] == 5  # a null where not nullable is absent, then defaulted
    assert obj["spec"]["maybe"] is None  # nullable: the null stays


def test_defaults_are_copies():
    schema = {"type": "object", "properties": {"l": {"type": "array", "default": [1]}}}
    a, b = {}, {}
    apply_defaults(a, schema)
    apply_defaults(b, schema)
    a["l"].append(2)
    assert b == {"l": [1]} and schema["properties"]["l"]["default"] == [1]


def test_the_sandbox_uses_the_shared_walk():
    assert structural.prune is walk.prune and structural.apply_defaults is walk.apply_defaults


def test_sandbox_admit_warns_with_the_walks_paths_and_refuses_under_strict():
    warnings: list[str] = []
    obj = copy.deepcopy(sample())
    structural.admit("Widget", "example.com", obj, SCHEMA, "Warn", warnings)
    assert sorted(warnings) == sorted(f'unknown field "{p}"' for p in EXPECTED_UNKNOWN)
    assert obj["spec"]["limit"] == 5 and obj["spec"]["byName"]["db"] == {"port": 80}
    try:
        structural.admit("Widget", "example.com", copy.deepcopy(sample()), SCHEMA, "Strict", [])
    except Exception as e:  # noqa: BLE001 - ApiError
        assert getattr(e, "code", None) == 400
        assert 'strict decoding error: unknown field "spec.foo"' in str(e)
    else:
        raise AssertionError("Strict accepted unknown fields")
