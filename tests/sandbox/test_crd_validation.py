"""The sandbox refuses the CRDs a real apiserver refuses (apiextensions-apiserver's validation),
with the same status, reason, message and field paths, and takes every CRD we ship.

Each mistake below is one a real kube-apiserver (v1.28) refuses; the expected field path and
wording are apiextensions' (k8s.io/apiextensions-apiserver pkg/apis/apiextensions/validation and
pkg/apiserver/schema). A test per rule: removing any one check makes its test fail.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from promop.sandbox.crd_validation import check_crd, crd_causes, default_crd
from promop.sandbox.errors import ApiError
from promop.schema import cel
from promop.schema.crds import _Loader

from .helpers import KUBECTL, crd_body, write

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "crds").glob("*.yaml"))
V = "spec.validation.openAPIV3Schema"
SPEC = f"{V}.properties[spec]"
BROKEN_HOST_ALIASES = {"type": "array", "x-kubernetes-list-type": "map",
                       "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def crd_with(spec_props: dict | None = None, root: dict | None = None, **kwargs) -> dict:
    """A Widget CRD whose schema is typed all the way down, with `spec_props` under spec."""
    body = crd_body(status=False, **kwargs)
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec_props or {"size": {"type": "integer"}}}}}
    schema.update(root or {})
    for version in body["spec"]["versions"]:
        version["schema"] = {"openAPIV3Schema": copy.deepcopy(schema)}
    return body


def causes(crd: dict) -> list[tuple[str, str]]:
    crd = copy.deepcopy(crd)
    default_crd(crd)
    return crd_causes(crd)


def spec_causes(spec_props: dict) -> list[tuple[str, str]]:
    return causes(crd_with(spec_props))


def test_a_valid_typed_crd_has_no_cause():
    assert causes(crd_with()) == []
    assert causes(crd_body()) == []  # preserve-unknown-fields at the root needs no type below


# -- the shipped CRDs and the broken Alertmanager one -------------------------------------------

def load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=_Loader)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_crd_is_valid(path):
    assert causes(load(path)) == []


def broken_alertmanager_crd() -> dict:
    crd = load(ROOT / "crds" / "monitoring.coreos.com_alertmanagers.yaml")
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["hostAliases"] = copy.deepcopy(BROKEN_HOST_ALIASES)  # as shipped before the fix
    return crd


BROKEN_MESSAGE = ('CustomResourceDefinition.apiextensions.k8s.io "alertmanagers.monitoring.coreos.com" is invalid: '
                  f"{SPEC}.properties[hostAliases].x-kubernetes-list-map-keys: Required value: must not be "
                  "empty if x-kubernetes-list-type is map")


def test_broken_alertmanager_crd_refused_as_the_apiserver_refuses_it():
    with pytest.raises(ApiError) as info:
        check_crd(broken_alertmanager_crd())
    err = info.value
    assert (err.code, err.reason, err.message) == (422, "Invalid", BROKEN_MESSAGE)
    assert err.details == {
        "name": "alertmanagers.monitoring.coreos.com", "group": "apiextensions.k8s.io",
        "kind": "CustomResourceDefinition",
        "causes": [{"reason": "FieldValueRequired",
                    "message": "Required value: must not be empty if x-kubernetes-list-type is map",
                    "field": f"{SPEC}.properties[hostAliases].x-kubernetes-list-map-keys"}]}


# -- structural schema ---------------------------------------------------------------------------

@pytest.mark.parametrize("props, expected", [
    ({"a": {"properties": {"b": {"type": "string"}}}},
     (f"{SPEC}.properties[a].type", "Required value: must not be empty for specified object fields")),
    ({"a": {"type": "array", "items": {"properties": {"b": {"type": "string"}}}}},
     (f"{SPEC}.properties[a].items.type", "Required value: must not be empty for specified array items")),
    ({"a": {"type": "array"}}, (f"{SPEC}.properties[a].items", "Required value: must be specified")),
    ({"a": {"type": "object", "properties": {"b": {"type": "string"}},
            "additionalProperties": {"type": "string"}}},
     (f"{SPEC}.properties[a].additionalProperties",
      "Forbidden: additionalProperties and properties are mutual exclusive")),
    ({"a": {"type": "null"}},
     (f"{SPEC}.properties[a].type", "Forbidden: type cannot be set to null, use nullable as an alternative")),
    ({"a": {"type": "text"}}, (f"{SPEC}.properties[a].type", 'Unsupported value: "text": supported values: '
                                '"array", "boolean", "integer", "number", "object", "string"')),
    ({"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": False}},
     (f"{SPEC}.properties[a].x-kubernetes-preserve-unknown-fields", "Invalid value: false: must be true or "
      "undefined")),
])
def test_structural_mistakes(props, expected):
    assert spec_causes(props) == [expected]


def test_untyped_fields_allowed_where_int_or_string_or_preserve_unknown_fields_stand_for_the_type():
    assert spec_causes({"a": {"x-kubernetes-int-or-string": True},
                        "b": {"x-kubernetes-preserve-unknown-fields": True}}) == []


def test_root_must_be_typed_object():
    crd = crd_with()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].pop("type")
    assert causes(crd) == [(f"{V}.type", "Required value: must not be empty at the root")]
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] = "string"
    assert (f"{V}.type", 'Invalid value: "string": must be object at the root') in causes(crd)


@pytest.mark.parametrize("field, value, detail", [
    ("$ref", "#/definitions/x", "$ref is not supported"),
    ("additionalItems", True, "additionalItems is not supported"),
    ("patternProperties", {"^a": {"type": "string"}}, "patternProperties is not supported"),
    ("definitions", {"x": {"type": "string"}}, "definitions is not supported"),
    ("dependencies", {"a": ["b"]}, "dependencies is not supported"),
    ("uniqueItems", True, "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
])
def test_forbidden_fields(field, value, detail):
    prop = {"type": "array", "items": {"type": "string"}, field: value}
    assert spec_causes({"a": prop}) == [(f"{SPEC}.properties[a].{field}", f"Forbidden: {detail}")]


def test_items_as_a_list_is_forbidden():
    got = spec_causes({"a": {"type": "array", "items": [{"type": "string"}]}})
    assert got == [(f"{SPEC}.properties[a].items", "Forbidden: items must be a schema object and not an array")]


def test_value_validations_may_not_carry_types_or_extensions():
    got = spec_causes({"a": {"type": "string", "anyOf": [{"type": "string", "maxLength": 3}, {"minLength": 5}]}})
    assert got == [(f"{SPEC}.properties[a].anyOf[0].type", "Forbidden: must be empty to be structural")]
    got = spec_causes({"a": {"type": "object", "properties": {"b": {"type": "string"}},
                             "oneOf": [{"required": ["b"]}, {"properties": {"c": {"maxLength": 1}}}]}})
    assert got == [(f"{SPEC}.properties[a].properties[c]",
                    f"Required value: because it is defined in {SPEC}.properties[a].oneOf[1].properties[c]")]
    got = spec_causes({"a": {"type": "string", "allOf": [{"items": {"maxLength": 1}}]}})
    assert got == [(f"{SPEC}.properties[a].items",
                    f"Required value: because it is defined in {SPEC}.properties[a].allOf[0].items")]
    assert spec_causes({"a": {"type": "object", "additionalProperties": {"type": "string"},
                              "anyOf": [{"properties": {"x": {"maxLength": 1}}}]}}) == []


# -- x-kubernetes-* consistency ------------------------------------------------------------------

def list_map(items: dict, **extra) -> dict:
    return {"a": {"type": "array", "x-kubernetes-list-type": "map", "items": items, **extra}}


KEYED_ITEMS = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"},
                                                                      "port": {"type": "integer"}}}


@pytest.mark.parametrize("props, expected", [
    (list_map(KEYED_ITEMS),
     (f"{SPEC}.properties[a].x-kubernetes-list-map-keys",
      "Required value: must not be empty if x-kubernetes-list-type is map")),
    (list_map(KEYED_ITEMS, **{"x-kubernetes-list-map-keys": ["missing"]}),
     (f"{SPEC}.properties[a].x-kubernetes-list-map-keys",
      'Invalid value: []string{"missing"}: entries must all be names of item properties')),
    (list_map({**KEYED_ITEMS, "required": []}, **{"x-kubernetes-list-map-keys": ["name"]}),
     (f"{SPEC}.properties[a].items.properties[name].default", "Required value: this property is in "
      "x-kubernetes-list-map-keys, so it must have a default or be a required property")),
    (list_map({"type": "object", "required": ["k"], "properties": {"k": {"type": "object"}}},
              **{"x-kubernetes-list-map-keys": ["k"]}),
     (f"{SPEC}.properties[a].items.properties[k].type",
      "Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map")),
    (list_map({"type": "string"}, **{"x-kubernetes-list-map-keys": ["name"]}),
     (f"{SPEC}.properties[a].items.type",
      "Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map")),
    ({"a": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["name"]}},
     (f"{SPEC}.properties[a].x-kubernetes-list-type",
      "Required value: must be map if x-kubernetes-list-map-keys is non-empty")),
    ({"a": {"type": "array", "items": KEYED_ITEMS, "x-kubernetes-list-type": "set",
            "x-kubernetes-list-map-keys": ["name"]}},
     (f"{SPEC}.properties[a].x-kubernetes-list-type",
      'Invalid value: "set": must be map if x-kubernetes-list-map-keys is non-empty')),
    ({"a": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}},
     (f"{SPEC}.properties[a].x-kubernetes-list-type",
      'Unsupported value: "bag": supported values: "atomic", "set", "map"')),
    ({"a": {"type": "string", "x-kubernetes-list-type": "atomic"}},
     (f"{SPEC}.properties[a].x-kubernetes-list-type", 'Invalid value: "atomic": must only be used on type=array')),
    ({"a": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}},
     (f"{SPEC}.properties[a].items.x-kubernetes-map-type",
      "Required value: must be atomic as item of a list with x-kubernetes-list-type=set")),
    ({"a": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "nullable": True}}},
     (f"{SPEC}.properties[a].items.nullable", "Forbidden: cannot be nullable when x-kubernetes-list-type is set")),
    ({"a": {"type": "string", "x-kubernetes-map-type": "atomic"}},
     (f"{SPEC}.properties[a].type", 'Invalid value: "string": must be object if x-kubernetes-map-type is specified')),
    ({"a": {"type": "object", "x-kubernetes-map-type": "whole"}},
     (f"{SPEC}.properties[a].x-kubernetes-map-type", 'Unsupported value: "whole": supported values: "atomic", '
      '"granular"')),
    ({"a": {"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True}},
     (f"{SPEC}.properties[a].x-kubernetes-preserve-unknown-fields",
      "Invalid value: true: must be false if x-kubernetes-int-or-string is true")),
    ({"a": {"type": "object", "x-kubernetes-int-or-string": True, "x-kubernetes-embedded-resource": True,
            "properties": {"kind": {"type": "string"}}}},
     (f"{SPEC}.properties[a].x-kubernetes-embedded-resource",
      "Invalid value: true: must be false if x-kubernetes-int-or-string is true")),
    ({"a": {"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}},
     (f"{SPEC}.properties[a].type", "Required value: must be object if x-kubernetes-embedded-resource is true")),
    ({"a": {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True,
            "additionalProperties": {"type": "string"}}},
     (f"{SPEC}.properties[a].additionalProperties",
      "Forbidden: must not be used if x-kubernetes-embedded-resource is set")),
    ({"a": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "boolean"}]}},
     (f"{SPEC}.properties[a].anyOf[0].type", "Forbidden: must be empty to be structural")),
    ({"a": {"type": "string", "x-kubernetes-embedded-resource": True}},
     (f"{SPEC}.properties[a].type",
      'Invalid value: "string": must be object if x-kubernetes-embedded-resource is true')),
    ({"a": {"type": "object", "x-kubernetes-embedded-resource": True}},
     (f"{SPEC}.properties[a].properties", "Required value: must not be empty if x-kubernetes-embedded-resource "
      "is true without x-kubernetes-preserve-unknown-fields")),
])
def test_extension_mistakes(props, expected):
    assert expected in spec_causes(props), spec_causes(props)


def test_extension_forms_the_apiserver_takes():
    assert spec_causes(list_map(KEYED_ITEMS, **{"x-kubernetes-list-map-keys": ["name"]})) == []
    defaulted = {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}
    assert spec_causes(list_map(defaulted, **{"x-kubernetes-list-map-keys": ["name"]})) == []
    assert spec_causes({"a": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"},
                                                                           {"type": "string"}]}}) == []
    assert spec_causes({"a": {"x-kubernetes-int-or-string": True, "allOf": [
        {"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^[0-9]+%?$"}]}}) == []
    assert spec_causes({"a": {"type": "array", "x-kubernetes-list-type": "set", "items": {
        "type": "object", "x-kubernetes-map-type": "atomic"}}}) == []


# -- metadata at the root ------------------------------------------------------------------------

def test_root_metadata_only_restricts_name_and_generate_name():
    allowed = {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                                             "generateName": {"type": "string"}}}}
    assert causes(crd_with(root={"properties": {"spec": {"type": "object"}, **allowed}})) == []
    for metadata in ({"type": "object", "properties": {"labels": {"type": "object"}}},
                     {"type": "object", "description": "the metadata"},
                     {"type": "object", "maxProperties": 3}):
        got = causes(crd_with(root={"properties": {"spec": {"type": "object"}, "metadata": metadata}}))
        assert got == [(f"{V}.properties[metadata]", "Forbidden: must not specify anything other than name and "
                        "generateName, but metadata is implicitly specified")], metadata


def test_no_default_in_top_level_metadata():
    metadata = {"type": "object", "default": {"name": "x"},
                "properties": {"name": {"type": "string", "default": "y"}}}
    got = causes(crd_with(root={"properties": {"spec": {"type": "object"}, "metadata": metadata}}))
    assert got == [(f"{V}.properties[metadata].default", "Forbidden: must not be set in top-level metadata"),
                   (f"{V}.properties[metadata].properties[name].default",
                    "Forbidden: must not be set in top-level metadata")]


def test_root_kind_and_api_version_are_strings():
    got = causes(crd_with(root={"properties": {"spec": {"type": "object"}, "kind": {"type": "integer"}}}))
    assert got == [(f"{V}.properties[kind].type", 'Invalid value: "integer": must be string')]


# -- defaults ------------------------------------------------------------------------------------

def test_default_must_validate_against_its_schema():
    got = spec_causes({"replicas": {"type": "integer", "default": "three"}})
    assert len(got) == 1 and got[0][0] == f"{SPEC}.properties[replicas].default", got
    assert "integer" in got[0][1]
    got = spec_causes({"mode": {"type": "string", "enum": ["A", "B"], "default": "C"}})
    assert len(got) == 1 and got[0][1].startswith('Unsupported value: "C"'), got


def test_default_must_survive_pruning():
    got = spec_causes({"tls": {"type": "object", "properties": {"ca": {"type": "string"}},
                               "default": {"ca": "x", "extra": 1}}})
    assert got == [(f"{SPEC}.properties[tls].default",
                    'Invalid value: {"ca":"x","extra":1}: must not have unknown fields')]


def test_null_default_only_on_nullable():
    assert spec_causes({"a": {"type": "string", "nullable": True, "default": None}}) == []
    assert spec_causes({"a": {"type": "string", "default": None}}) == [
        (f"{SPEC}.properties[a].default", "Invalid value: null: must not be null for non-nullable field")]


def test_valid_defaults_pass():
    assert spec_causes({"replicas": {"type": "integer", "default": 1},
                        "tls": {"type": "object", "properties": {"ca": {"type": "string"}},
                                "default": {"ca": "x"}}}) == []


# -- CEL -----------------------------------------------------------------------------------------

def test_cel_rules_that_do_not_compile_are_refused(monkeypatch):
    """The check asks promop.schema.cel.compile_error for every rule and messageExpression."""
    monkeypatch.setattr(cel, "compile_error", lambda text: "ERROR: <input>:1:6: Syntax error" if "==" in text
                        and text.rstrip().endswith("==") else None)
    got = spec_causes({"a": {"type": "integer", "x-kubernetes-validations": [
        {"rule": "self >= 0"}, {"rule": "self =="}, {"rule": "self < 9", "messageExpression": "'x' =="}]}})
    base = f"{SPEC}.properties[a].x-kubernetes-validations"
    assert got == [(f"{base}[1].rule", 'Invalid value: "self ==": compilation failed: ERROR: <input>:1:6: '
                    "Syntax error"),
                   (f"{base}[2].messageExpression", "Invalid value: \"'x' ==\": messageExpression compilation "
                    "failed: ERROR: <input>:1:6: Syntax error")]


def test_cel_rule_required_and_reason_known():
    got = spec_causes({"a": {"type": "integer", "x-kubernetes-validations": [
        {"rule": ""}, {"rule": "self > 0", "reason": "Nope"}]}})
    base = f"{SPEC}.properties[a].x-kubernetes-validations"
    assert got == [(f"{base}[0].rule", "Required value: rule is not specified"),
                   (f"{base}[1].reason", 'Unsupported value: "Nope": supported values: "FieldValueDuplicate", '
                    '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"')]


@pytest.mark.skipif(cel.compile_error("self.a ==") is None,
                    reason="promop.schema.cel cannot tell a wrong rule from an unsupported one yet")
def test_cel_syntax_error_with_the_real_compiler():
    got = spec_causes({"a": {"type": "object", "properties": {"b": {"type": "integer"}},
                             "x-kubernetes-validations": [{"rule": "self.b =="}]}})
    assert len(got) == 1 and got[0][0] == f"{SPEC}.properties[a].x-kubernetes-validations[0].rule", got


# -- names, versions, group, scope ---------------------------------------------------------------

DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
           "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
           "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def names_crd(**names) -> dict:
    crd = crd_body()
    crd["spec"]["names"].update(names)
    for key in [k for k, v in names.items() if v is None]:
        del crd["spec"]["names"][key]
    return crd


def test_singular_and_list_kind_are_defaulted():
    crd = names_crd(singular=None, listKind=None)
    default_crd(crd)
    assert crd["spec"]["names"]["singular"] == "widget" and crd["spec"]["names"]["listKind"] == "WidgetList"
    assert crd_causes(crd) == []


@pytest.mark.parametrize("names, expected", [
    ({"plural": "Widgets"}, [("metadata.name", 'Invalid value: "widgets.example.com": must be spec.names.plural+'
                              '"."+spec.group'), ("spec.names.plural", f'Invalid value: "Widgets": {DNS1035}')]),
    ({"singular": "Widget"}, [("spec.names.singular", f'Invalid value: "Widget": {DNS1035}')]),
    ({"kind": "Wid_get", "listKind": "WidgetList"},
     [("spec.names.kind", 'Invalid value: "Wid_get": may have mixed case, but should otherwise match: ' + DNS1035)]),
    ({"listKind": "Widget"}, [("spec.names.listKind", 'Invalid value: "Widget": kind and listKind may not be the '
                               "same")]),
    ({"kind": None, "listKind": "WidgetList", "singular": "widget"}, [("spec.names.kind", "Required value")]),
    ({"shortNames": ["w_"]}, [("spec.names.shortNames[0]", f'Invalid value: "w_": {DNS1035}')]),
])
def test_names(names, expected):
    assert causes(names_crd(**names)) == expected


def test_name_is_plural_dot_group_and_group_has_a_dot():
    crd = crd_body()
    crd["metadata"]["name"] = "gadgets.example.com"
    assert causes(crd) == [("metadata.name", 'Invalid value: "gadgets.example.com": must be spec.names.plural+'
                            '"."+spec.group')]
    crd = crd_body(group="example")
    assert causes(crd) == [("spec.group", 'Invalid value: "example": should be a domain with at least one dot')]
    crd = crd_body(group="Example.com")
    crd["metadata"]["name"] = "widgets.example.com"
    assert ("spec.group", 'Invalid value: "Example.com": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]"
            "([-a-z0-9]*[a-z0-9])?)*')") in causes(crd)


def test_scope():
    assert causes(crd_body(scope="Global")) == [
        ("spec.scope", 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"')]
    assert causes(crd_body(scope="")) == [("spec.scope", "Required value")]


def test_versions():
    two = crd_body(versions=("v1", "v2"))
    assert causes(two) == []
    both = copy.deepcopy(two)
    both["spec"]["versions"][1]["storage"] = True
    assert causes(both) == [("spec.versions", 'Invalid value: []string{"v1", "v2"}: must have exactly one version '
                             "marked as storage version")]
    none_served = copy.deepcopy(two)
    for version in none_served["spec"]["versions"]:
        version["served"] = False
    assert causes(none_served) == [("spec.versions", 'Invalid value: []string{"v1", "v2"}: must have at least one '
                                    "served version")]
    same = crd_body(versions=("v1", "v1"))
    assert causes(same) == [("spec.versions", 'Invalid value: []string{"v1", "v1"}: must contain unique version '
                             "names")]
    empty = crd_body()
    empty["spec"]["versions"] = []
    assert causes(empty) == [("spec.versions", "Required value: must have at least one version")]
    upper = crd_body(versions=("V1",))
    assert causes(upper) == [("spec.versions[0].name", f'Invalid value: "V1": {DNS1035}')]


def test_schema_required_and_paths_per_version_when_schemas_differ():
    crd = crd_with(versions=("v1", "v2"))
    del crd["spec"]["versions"][1]["schema"]
    assert causes(crd) == [("spec.versions[1].schema.openAPIV3Schema", "Required value: schemas are required")]
    crd = crd_with(versions=("v1", "v2"))
    crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["a"] = {}
    assert causes(crd) == [("spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[a].type",
                            "Required value: must not be empty for specified object fields")]


def test_scale_subresource_paths():
    crd = crd_body(scale=True)
    assert causes(crd) == []
    crd["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = ".status.replicas"
    crd["spec"]["versions"][0]["subresources"]["scale"]["labelSelectorPath"] = ".selector"
    del crd["spec"]["versions"][0]["subresources"]["scale"]["statusReplicasPath"]
    assert causes(crd) == [
        ("spec.subresources.scale.specReplicasPath", 'Invalid value: ".status.replicas": should be a json path '
         "under .spec"),
        ("spec.subresources.scale.statusReplicasPath", "Required value"),
        ("spec.subresources.scale.labelSelectorPath", 'Invalid value: ".selector": should be a json path under '
         "either .spec or .status")]


def test_printer_columns():
    crd = crd_body()
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Bad", "type": "int", "jsonPath": "spec.size", "format": "long"},
        {"type": "string"}]
    at = "spec.additionalPrinterColumns"
    assert causes(crd) == [
        (f"{at}[1].type", 'Invalid value: "int": must be one of boolean,date,integer,number,string'),
        (f"{at}[1].format", 'Invalid value: "long": must be one of byte,date,date-time,double,float,int32,int64,'
         "password"),
        (f"{at}[1].jsonPath", 'Invalid value: "spec.size": must be a simple json path starting with .'),
        (f"{at}[2].name", "Required value"),
        (f"{at}[2].jsonPath", "Required value")]


def test_conversion_strategy():
    crd = crd_body()
    crd["spec"]["conversion"] = {"strategy": "Magic"}
    assert causes(crd) == [("spec.conversion.strategy", 'Unsupported value: "Magic": supported values: "None", '
                            '"Webhook"')]


# -- through the API and the real kubectl --------------------------------------------------------

def test_api_create_and_update_refuse_with_the_status(ext):
    with pytest.raises(ApiException) as info:
        ext.create_custom_resource_definition(broken_alertmanager_crd())
    status = json.loads(info.value.body)
    assert (info.value.status, status["reason"], status["message"]) == (422, "Invalid", BROKEN_MESSAGE)
    assert status["details"]["causes"][0]["field"] == f"{SPEC}.properties[hostAliases].x-kubernetes-list-map-keys"
    good = load(ROOT / "crds" / "monitoring.coreos.com_alertmanagers.yaml")
    ext.create_custom_resource_definition(good)
    current = json.loads(ext.read_custom_resource_definition(good["metadata"]["name"], _preload_content=False).data)
    broken = broken_alertmanager_crd()
    broken["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as info:
        ext.replace_custom_resource_definition(good["metadata"]["name"], broken)
    assert json.loads(info.value.body)["message"] == BROKEN_MESSAGE


kubectl_only = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@kubectl_only
def test_kubectl_server_side_apply_of_every_shipped_crd(kubectl):
    proc = kubectl("apply", "--server-side", "-f", str(ROOT / "crds"))
    applied = [line for line in proc.stdout.splitlines() if "serverside-applied" in line]
    assert len(applied) == len(SHIPPED), proc.stdout
    names = kubectl("get", "crds", "-o", "name").stdout.split()
    assert len(names) == len(SHIPPED)


@kubectl_only
def test_kubectl_server_side_apply_of_the_broken_alertmanager_crd_is_refused(kubectl, tmp_path):
    path = write(tmp_path / "am.yaml", broken_alertmanager_crd())
    proc = kubectl("apply", "--server-side", "-f", path, check=False)
    assert proc.returncode != 0
    assert ('The CustomResourceDefinition "alertmanagers.monitoring.coreos.com" is invalid: '
            f"{SPEC}.properties[hostAliases].x-kubernetes-list-map-keys: Required value: must not be empty if "
            "x-kubernetes-list-type is map") in proc.stderr, proc.stderr
    assert kubectl("get", "crds", "-o", "name").stdout.strip() == ""


@kubectl_only
def test_kubectl_client_side_apply_refused_with_every_cause(kubectl, tmp_path):
    crd = crd_with({"a": {"type": "array"}, "b": {"type": "string", "x-kubernetes-map-type": "atomic"}})
    proc = kubectl("apply", "-f", write(tmp_path / "crd.yaml", crd), check=False)
    assert proc.returncode != 0
    assert f"{SPEC}.properties[a].items: Required value: must be specified" in proc.stderr, proc.stderr
    assert (f'{SPEC}.properties[b].type: Invalid value: "string": must be object if x-kubernetes-map-type is '
            "specified") in proc.stderr, proc.stderr


# -- one test per remaining rule (each fails if its check is removed) -----------------------------

@pytest.mark.parametrize("field, value", [("$schema", "http://json-schema.org/draft-04/schema#"), ("id", "x")])
def test_more_unsupported_fields(field, value):
    got = spec_causes({"a": {"type": "string", field: value}})
    assert got == [(f"{SPEC}.properties[a].{field}", f"Forbidden: {field} is not supported")]


def test_additional_properties_false_is_forbidden():
    got = spec_causes({"a": {"type": "object", "additionalProperties": False}})
    assert got == [(f"{SPEC}.properties[a].additionalProperties",
                    "Forbidden: additionalProperties cannot be set to false")]


NESTED = [("default", "x", "must be undefined to be structural"), ("nullable", True, "must be false to be structural"),
          ("title", "t", "must be empty to be structural"), ("description", "d", "must be empty to be structural"),
          ("x-kubernetes-preserve-unknown-fields", True, "must be false to be structural"),
          ("x-kubernetes-embedded-resource", True, "must be false to be structural"),
          ("x-kubernetes-int-or-string", True, "must be false to be structural"),
          ("x-kubernetes-list-type", "set", "must be undefined to be structural"),
          ("additionalProperties", True, "must be undefined to be structural"),
          ("x-kubernetes-list-map-keys", ["k"], "must be empty to be structural"),
          ("x-kubernetes-map-type", "atomic", "must be undefined to be structural"),
          ("x-kubernetes-validations", [{"rule": "true"}], "must be empty to be structural")]


@pytest.mark.parametrize("field, value, detail", NESTED, ids=[n[0] for n in NESTED])
def test_value_validations_may_not_say(field, value, detail):
    for name, holder in (("allOf", [{"maxLength": 9, field: value}]), ("not", {field: value, "maxLength": 1})):
        got = spec_causes({"a": {"type": "string", name: holder}})
        at = f"{SPEC}.properties[a].{name}" + ("[0]" if name == "allOf" else "")
        assert got == [(f"{at}.{field}", f"Forbidden: {detail}")], (name, got)


def test_value_validations_are_checked_below_items_and_nested_value_validations():
    got = spec_causes({"a": {"type": "array", "items": {"type": "string"},
                             "anyOf": [{"items": {"type": "string"}}, {"not": {"anyOf": [{"nullable": True}]}}]}})
    assert got == [(f"{SPEC}.properties[a].anyOf[0].items.type", "Forbidden: must be empty to be structural"),
                   (f"{SPEC}.properties[a].anyOf[1].not.anyOf[0].nullable",
                    "Forbidden: must be false to be structural")]


@pytest.mark.parametrize("props, expected", [
    (list_map(KEYED_ITEMS, **{"x-kubernetes-list-map-keys": ["name", "name"]}),
     (f"{SPEC}.properties[a].x-kubernetes-list-map-keys",
      'Invalid value: []string{"name", "name"}: must not contain duplicate entries')),
    (list_map({"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "nullable": True}}},
              **{"x-kubernetes-list-map-keys": ["name"]}),
     (f"{SPEC}.properties[a].items.properties[name].nullable",
      "Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable")),
    ({"a": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}},
     (f"{SPEC}.properties[a].items", "Required value: must have a schema if x-kubernetes-list-type is map")),
    ({"a": {"type": "array", "x-kubernetes-list-type": "set", "items": {
        "type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}}},
     (f"{SPEC}.properties[a].items.x-kubernetes-list-type",
      'Invalid value: "set": must be atomic as item of a list with x-kubernetes-list-type=set')),
    ({"a": {"x-kubernetes-preserve-unknown-fields": True, "x-kubernetes-map-type": "atomic"}},
     (f"{SPEC}.properties[a].type", "Required value: must be object if x-kubernetes-map-type is specified")),
])
def test_more_extension_mistakes(props, expected):
    assert expected in spec_causes(props), spec_causes(props)


def test_embedded_resource_the_apiserver_takes():
    assert spec_causes({"a": {"type": "object", "x-kubernetes-embedded-resource": True,
                              "x-kubernetes-preserve-unknown-fields": True}}) == []


@pytest.mark.parametrize("field", ["kind", "apiVersion"])
def test_root_kind_and_api_version_must_be_strings(field):
    got = causes(crd_with(root={"properties": {"spec": {"type": "object"}, field: {"type": "object"}}}))
    assert got == [(f"{V}.properties[{field}].type", 'Invalid value: "object": must be string')]


def test_root_metadata_must_be_an_object():
    got = causes(crd_with(root={"properties": {"spec": {"type": "object"}, "metadata": {"type": "string"}}}))
    assert got == [(f"{V}.properties[metadata].type", 'Invalid value: "string": must be object')]


def test_crd_name_must_be_a_subdomain_and_group_is_required():
    crd = crd_body()
    crd["metadata"]["name"] = "Widgets.example.com"
    got = causes(crd)
    assert got[0][0] == "metadata.name" and "a lowercase RFC 1123 subdomain" in got[0][1], got
    crd = crd_body()
    crd["spec"]["group"] = ""
    assert ("spec.group", "Required value") in causes(crd)


def test_categories_are_dns_labels():
    assert causes(names_crd(categories=["all", "My_Cat"])) == [
        ("spec.names.categories[1]", f'Invalid value: "My_Cat": {DNS1035}')]


def test_list_kind_and_singular_required_without_a_kind_to_default_from():
    got = causes(names_crd(kind=None, listKind=None, singular=None))
    assert got == [("spec.names.singular", "Required value"), ("spec.names.kind", "Required value"),
                   ("spec.names.listKind", "Required value")]


def test_version_name_required():
    crd = crd_body()
    del crd["spec"]["versions"][0]["name"]
    assert ("spec.versions[0].name", f'Invalid value: "": {DNS1035}') in causes(crd)


def test_conversion_defaulted_and_webhook_rules():
    crd = crd_body()
    default_crd(crd)
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    crd["spec"]["conversion"] = {"strategy": "Webhook"}
    assert causes(crd) == [("spec.conversion.webhook", "Required value: required when strategy is set to Webhook")]
    crd["spec"]["conversion"] = {"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}}
    assert causes(crd) == [("spec.conversion.webhook", "Forbidden: should be null when strategy is set to None")]


def test_scale_spec_replicas_path_required_and_printer_column_type_required():
    crd = crd_body(scale=True)
    del crd["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"]
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [{"name": "Size", "jsonPath": ".spec.size"}]
    assert causes(crd) == [("spec.subresources.scale.specReplicasPath", "Required value"),
                           ("spec.additionalPrinterColumns[0].type",
                            "Required value: must be one of boolean,date,integer,number,string")]


def test_subresources_reported_per_version_when_versions_differ():
    crd = crd_body(scale=True, versions=("v1", "v2"))
    crd["spec"]["versions"][1]["subresources"] = {"status": {}, "scale": {
        "specReplicasPath": "spec.replicas", "statusReplicasPath": ".status.replicas"}}
    assert causes(crd) == [("spec.versions[1].subresources.scale.specReplicasPath",
                            'Invalid value: "spec.replicas": must be a simple json path starting with .')]


def test_check_crd_defaults_the_object_it_admits():
    crd = names_crd(singular=None, listKind=None)
    check_crd(crd)
    assert crd["spec"]["names"]["singular"] == "widget" and crd["spec"]["names"]["listKind"] == "WidgetList"


def test_several_causes_aggregate_as_the_apiserver_does():
    crd = crd_body(scope="Global", group="example")
    crd["metadata"]["name"] = "widgets.example"
    with pytest.raises(ApiError) as info:
        check_crd(crd)
    assert info.value.message == (
        'CustomResourceDefinition.apiextensions.k8s.io "widgets.example" is invalid: ['
        'spec.group: Invalid value: "example": should be a domain with at least one dot, '
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"]')
    assert [c["field"] for c in info.value.details["causes"]] == ["spec.group", "spec.scope"]
    assert [c["reason"] for c in info.value.details["causes"]] == ["FieldValueInvalid", "FieldValueNotSupported"]


def test_additional_properties_schemas_are_checked_too():
    got = spec_causes({"a": {"type": "object", "additionalProperties": {"properties": {"b": {"type": "string"}}}}})
    assert got == [(f"{SPEC}.properties[a].additionalProperties.type",
                    "Required value: must not be empty for specified object fields")]


def test_conversion_without_strategy_defaults_to_none():
    crd = crd_body()
    crd["spec"]["conversion"] = {}
    default_crd(crd)
    assert crd["spec"]["conversion"] == {"strategy": "None"} and crd_causes(crd) == []


def test_embedded_resources_have_string_kind_and_api_version_and_object_metadata():
    got = spec_causes({"a": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {
        "kind": {"type": "integer"}, "metadata": {"type": "string"}}}})
    assert got == [(f"{SPEC}.properties[a].properties[kind].type", 'Invalid value: "integer": must be string'),
                   (f"{SPEC}.properties[a].properties[metadata].type", 'Invalid value: "string": must be object')]


def old_crd(established: bool) -> dict:
    crd = crd_body()
    default_crd(crd)
    status = "True" if established else "False"
    crd["status"] = {"conditions": [{"type": "Established", "status": status}]}
    return crd


def test_update_may_not_change_group_or_plural_and_once_established_scope_or_kind():
    new = crd_body(scope="Cluster", kind="Gadget")
    assert check_crd(copy.deepcopy(new), old_crd(established=False)) is None
    with pytest.raises(ApiError) as info:
        check_crd(copy.deepcopy(new), old_crd(established=True))
    assert [(c["field"], c["message"]) for c in info.value.details["causes"]] == [
        ("spec.scope", 'Invalid value: "Cluster": field is immutable'),
        ("spec.names.kind", 'Invalid value: "Gadget": field is immutable')]
    renamed = crd_body(group="example.org")
    renamed["metadata"]["name"] = "widgets.example.com"
    with pytest.raises(ApiError) as info:
        check_crd(renamed, old_crd(established=False))
    assert ("spec.group", 'Invalid value: "example.org": field is immutable') in [
        (c["field"], c["message"]) for c in info.value.details["causes"]]


def test_update_through_the_api_may_not_change_the_scope(make_crd, ext):
    crd = make_crd()
    crd["spec"]["scope"] = "Cluster"
    with pytest.raises(ApiException) as info:
        ext.replace_custom_resource_definition(crd["metadata"]["name"], crd)
    assert json.loads(info.value.body)["message"] == (
        'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: spec.scope: Invalid value: '
        '"Cluster": field is immutable')


@kubectl_only
def test_readme_install_command_applies_and_establishes_every_shipped_crd(kubectl):
    """README: `kubectl apply -f crds/ && kubectl wait --for=condition=Established --timeout=60s -f crds/`."""
    proc = kubectl("apply", "-f", str(ROOT / "crds"))
    assert proc.stdout.count(" created") == len(SHIPPED), proc.stdout
    proc = kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(ROOT / "crds"))
    assert proc.stdout.count("condition met") == len(SHIPPED), proc.stdout


def test_the_memhpa_crd_the_autoscaler_demo_creates_is_valid():
    from promop.autoscaler.crd import crd

    assert causes(crd()) == []


def test_additional_properties_at_the_root_and_metadata_in_value_validations_are_forbidden():
    got = causes(crd_with(root={"additionalProperties": {"type": "string"}, "properties": {}}))
    assert got == [(f"{V}.additionalProperties", "Forbidden: must not be used at the root")]
    got = causes(crd_with(root={"properties": {"spec": {"type": "object"}, "metadata": {"type": "object"}},
                                "anyOf": [{"properties": {"metadata": {"maxProperties": 3}}}]}))
    assert got == [(f"{V}.anyOf[0].properties[metadata]", "Forbidden: must not be specified in a nested context")]


def test_structural_causes_sorted_after_openapi_ones_and_defaults_only_when_nothing_else():
    got = spec_causes({"z": {"properties": {}}, "b": {"type": "string", "uniqueItems": True},
                       "a": {"properties": {}}, "d": {"type": "integer", "default": "x"}})
    assert got == [(f"{SPEC}.properties[b].uniqueItems", "Forbidden: uniqueItems cannot be set to true since the "
                    "runtime complexity becomes quadratic"),
                   (f"{SPEC}.properties[a].type", "Required value: must not be empty for specified object fields"),
                   (f"{SPEC}.properties[z].type", "Required value: must not be empty for specified object fields")]


def test_additional_properties_true_beside_properties_is_allowed():
    assert spec_causes({"a": {"type": "object", "properties": {"b": {"type": "string"}},
                              "additionalProperties": True}}) == []


def test_pattern_must_compile_as_a_go_regexp():
    """apiextensions compiles every `pattern` with Go's regexp: RE2 syntax, not Python's."""
    assert spec_causes({"a": {"type": "string", "pattern": "^[a-z]+$"}}) == []
    assert spec_causes({"a": {"type": "string", "pattern": "^\\s*[[:alpha:]]$"}}) == []
    got = spec_causes({"a": {"type": "string", "pattern": "a(?=b)"}})  # lookahead: Python yes, Go no
    assert len(got) == 1 and got[0][0] == f"{SPEC}.properties[a].pattern"
    assert got[0][1].startswith('Invalid value: "a(?=b)": must be a valid regular expression, but isn\'t: '
                                "error parsing regexp: invalid or unsupported Perl syntax")
