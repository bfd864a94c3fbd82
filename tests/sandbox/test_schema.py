"""Custom resources against their CRD's structural schema (issue 18 §2): validation on create,
update, patch and /status; pruning of unknown fields with a Warning header, or 400 under
fieldValidation=Strict; schema defaults."""

from __future__ import annotations

import json

import pytest
import requests

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object", "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 0},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "mode": {"type": "string", "default": "fast"},
                "when": {"type": "string", "format": "date-time"},
                "name": {"type": "string", "pattern": "^[a-z]+$"},
                "limits": {"type": "object", "default": {},
                           "properties": {"cpu": {"type": "string", "default": "1"}}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"},
                                                   "port": {"type": "integer"}}}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string",
                                                              "enum": ["Ready", "Failed"]}}},
    },
}
URL = "/apis/example.com/v1/namespaces/default/widgets"


@pytest.fixture
def widgets(make_crd, ext, sandbox):
    make_crd()
    ext.patch_custom_resource_definition("widgets.example.com", [
        {"op": "replace", "path": "/spec/versions/0/schema/openAPIV3Schema", "value": SCHEMA}])
    session = requests.Session()

    def call(method, path="", body=None, content_type="application/json", **params):
        response = session.request(method, sandbox.url + URL + path, params=params,
                                   data=json.dumps(body) if body is not None else None,
                                   headers={"Content-Type": content_type})
        return response

    yield call
    session.close()


def widget(name="w", **spec) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": spec}


def causes(response) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"])
            for c in response.json()["details"]["causes"]]


def test_create_is_validated_against_the_schema(widgets):
    response = widgets("POST", body=widget(size=-1, color="green", when="yesterday"))
    assert response.status_code == 422
    status = response.json()
    assert status["reason"] == "Invalid"
    assert status["details"] == status["details"] | {"kind": "Widget", "group": "example.com",
                                                     "name": "w"}
    assert status["message"].startswith('Widget.example.com "w" is invalid: [')
    assert causes(response) == [
        ("FieldValueNotSupported", "spec.color",
         'Unsupported value: "green": supported values: "red", "blue"'),
        ("FieldValueInvalid", "spec.size", "Invalid value: -1: should be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.when", 'Invalid value: "yesterday": must be of format date-time'),
    ]
    missing = widgets("POST", body=widget())
    assert causes(missing) == [("FieldValueRequired", "spec.size", "Required value")]
    dup = widgets("POST", body=widget(size=1, ports=[{"name": "a"}, {"name": "a"}]))
    assert dup.status_code == 422 and causes(dup)[0][1] == "spec.ports[1]"


def test_defaults_are_applied(widgets):
    made = widgets("POST", body=widget(size=1))
    assert made.status_code == 201
    assert made.json()["spec"] == {"size": 1, "mode": "fast", "limits": {"cpu": "1"}}
    got = widgets("GET", "/w").json()
    assert got["spec"]["mode"] == "fast"


def test_unknown_fields_are_pruned_with_a_warning(widgets):
    made = widgets("POST", body=widget(size=1, colour="red", extra={"anything": {"goes": 1}}))
    assert made.status_code == 201
    assert "colour" not in made.json()["spec"]
    assert made.json()["spec"]["extra"] == {"anything": {"goes": 1}}
    assert made.headers["Warning"] == '299 - "unknown field \\"spec.colour\\""'
    quiet = widgets("POST", body=widget("q", size=1, colour="red"), fieldValidation="Ignore")
    assert quiet.status_code == 201 and "Warning" not in quiet.headers
    strict = widgets("POST", body=widget("s", size=1, colour="red"), fieldValidation="Strict")
    assert strict.status_code == 400 and strict.json()["reason"] == "BadRequest"
    assert strict.json()["message"] == ('Widget in version "v1" cannot be handled as a Widget: '
                                        'strict decoding error: unknown field "spec.colour"')
    assert widgets("GET", "/s").status_code == 404
    bad = widgets("POST", body=widget("b", size=1), fieldValidation="Loose")
    assert bad.status_code == 400


def test_update_patch_and_status_are_validated(widgets):
    made = widgets("POST", body=widget(size=1)).json()
    patched = widgets("PATCH", "/w", {"spec": {"size": "big"}},
                      "application/merge-patch+json")
    assert patched.status_code == 422
    assert causes(patched) == [("FieldValueInvalid", "spec.size",
                                'Invalid value: "big": must be of type integer')]
    made["spec"]["name"] = "Not-Lower"
    replaced = widgets("PUT", "/w", made)
    assert replaced.status_code == 422 and causes(replaced)[0][1] == "spec.name"
    status = widgets("PATCH", "/w/status", {"status": {"phase": "Sleeping"}},
                     "application/merge-patch+json")
    assert status.status_code == 422 and causes(status)[0][1] == "status.phase"
    good = widgets("PATCH", "/w/status", {"status": {"phase": "Ready", "junk": 1}},
                   "application/merge-patch+json")
    assert good.status_code == 200 and good.json()["status"] == {"phase": "Ready"}
    assert "status.junk" in good.headers["Warning"]


def test_kubectl_apply_of_an_invalid_custom_resource_fails(widgets, kubectl, tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(json.dumps(widget("k", size="x")))
    proc = kubectl("apply", "-f", str(path), check=False)
    assert proc.returncode != 0
    assert 'Widget "k" is invalid: spec.size: Invalid value: "x"' in proc.stderr
