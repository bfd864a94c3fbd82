"""RFC 6902 appendix A, through the sandbox's PATCH with application/json-patch+json, and the
apiserver's answers when a patch fails (as k8s.io/apiserver's jsonPatcher gives them).

Each case's document is a Widget's `spec` (the CRD preserves unknown fields), so every path gets a
`/spec` prefix; the expected documents are the RFC's."""

from __future__ import annotations

import json
import time

import pytest
import requests

from promop.sandbox import Sandbox
from promop.sandbox.errors import ApiError
from promop.sandbox.patch import json_patch

from deadlines import scaled
from .helpers import crd_body

URL = "/apis/example.com/v1/namespaces/default/widgets"
REJECTED = "the server rejected our request due to an error in our request"

# (name, document, patch, expected document or None for an error), from RFC 6902 appendix A
RFC_CASES = [
    ("A.1 add an object member", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}],
     {"baz": "qux", "foo": "bar"}),
    ("A.2 add an array element", {"foo": ["bar", "baz"]},
     [{"op": "add", "path": "/foo/1", "value": "qux"}], {"foo": ["bar", "qux", "baz"]}),
    ("A.3 remove an object member", {"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}],
     {"foo": "bar"}),
    ("A.4 remove an array element", {"foo": ["bar", "qux", "baz"]},
     [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    ("A.5 replace a value", {"baz": "qux", "foo": "bar"},
     [{"op": "replace", "path": "/baz", "value": "boo"}], {"baz": "boo", "foo": "bar"}),
    ("A.6 move a value", {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
     [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
    ("A.7 move an array element", {"foo": ["all", "grass", "cows", "eat"]},
     [{"op": "move", "from": "/foo/1", "path": "/foo/3"}], {"foo": ["all", "cows", "eat", "grass"]}),
    ("A.8 test a value: success", {"baz": "qux", "foo": ["a", 2, "c"]},
     [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
     {"baz": "qux", "foo": ["a", 2, "c"]}),
    ("A.9 test a value: error", {"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], None),
    ("A.10 add a nested member object", {"foo": "bar"},
     [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
     {"foo": "bar", "child": {"grandchild": {}}}),
    ("A.11 ignore unrecognized elements", {"foo": "bar"},
     [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}], {"foo": "bar", "baz": "qux"}),
    ("A.12 add to a nonexistent target", {"foo": "bar"},
     [{"op": "add", "path": "/baz/bat", "value": "qux"}], None),
    ("A.14 ~ escape ordering", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}],
     {"/": 9, "~1": 10}),
    ("A.15 comparing strings and numbers", {"/": 9, "~1": 10},
     [{"op": "test", "path": "/~01", "value": "10"}], None),
    ("A.16 add an array value", {"foo": ["bar"]},
     [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}], {"foo": ["bar", ["abc", "def"]]}),
    # the error cases the issue measured, and their neighbours
    ("test 1 is not true", {"foo": 1}, [{"op": "test", "path": "/foo", "value": True}], None),
    ("test true is not 1", {"foo": True}, [{"op": "test", "path": "/foo", "value": 1}], None),
    ("test 1 is 1.0", {"foo": 1}, [{"op": "test", "path": "/foo", "value": 1.0}], {"foo": 1}),
    # where the apiserver's evanphx/json-patch v4 departs from the RFC, the apiserver is followed:
    # indices go through Go's strconv.Atoi, negative indices count from the end, a missing value
    # is null
    ("index 01 is 1, as Go's Atoi reads it", {"foo": ["a", "b"]},
     [{"op": "add", "path": "/foo/01", "value": "x"}], {"foo": ["a", "x", "b"]}),
    ("index +1 is 1", {"foo": ["a", "b"]}, [{"op": "replace", "path": "/foo/+1", "value": "x"}],
     {"foo": ["a", "x"]}),
    ("remove index -1 is the last", {"foo": ["a", "b", "c"]}, [{"op": "remove", "path": "/foo/-1"}],
     {"foo": ["a", "b"]}),
    ("add at index -1 appends", {"foo": ["a", "b"]}, [{"op": "add", "path": "/foo/-1", "value": "z"}],
     {"foo": ["a", "b", "z"]}),
    ("move from -2", {"foo": ["a", "b", "c"]}, [{"op": "move", "from": "/foo/-2", "path": "/bar"}],
     {"foo": ["a", "c"], "bar": "b"}),
    ("index -4 of 3 is out of range", {"foo": ["a", "b", "c"]}, [{"op": "remove", "path": "/foo/-4"}],
     None),
    ("index 1x is not an index", {"foo": ["a", "b"]}, [{"op": "remove", "path": "/foo/1x"}], None),
    ("add without value adds null", {"foo": "bar"}, [{"op": "add", "path": "/baz"}],
     {"foo": "bar", "baz": None}),
    ("index past the end", {"foo": ["a"]}, [{"op": "add", "path": "/foo/2", "value": "x"}], None),
    ("remove a missing member", {"foo": "bar"}, [{"op": "remove", "path": "/baz"}], None),
    ("unknown op", {"foo": "bar"}, [{"op": "frobnicate", "path": "/foo"}], None),
    ("move into its own child", {"foo": {"a": 1}}, [{"op": "move", "from": "/foo", "path": "/foo/a/b"}],
     None),
]


@pytest.fixture(scope="module")
def widgets():
    """One sandbox and one CRD for the module: the cases only create and patch their own widget."""
    with Sandbox(port=0) as sandbox, requests.Session() as session:
        base = sandbox.url
        crd = session.post(base + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                           json=crd_body())
        assert crd.status_code == 201, crd.text
        deadline = time.monotonic() + scaled(5)
        while session.get(base + URL).status_code != 200:
            assert time.monotonic() < deadline, "the Widget CRD was never served"
            time.sleep(0.01)

        def call(method, path="", body=None, raw=None, content_type="application/json"):
            data = raw if raw is not None else json.dumps(body)
            return session.request(method, base + URL + path, data=data,
                                   headers={"Content-Type": content_type})

        yield call


def _spec_paths(patch: list[dict]) -> list[dict]:
    out = []
    for op in patch:
        op = dict(op)
        for key in ("path", "from"):
            if key in op:
                op[key] = "/spec" + op[key]
        out.append(op)
    return out


@pytest.mark.parametrize("name,doc,patch,expected", RFC_CASES, ids=[c[0] for c in RFC_CASES])
def test_rfc6902_through_patch(widgets, name, doc, patch, expected):
    obj_name = "w-" + "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")[:50]
    created = widgets("POST", body={"apiVersion": "example.com/v1", "kind": "Widget",
                                    "metadata": {"name": obj_name}, "spec": doc})
    assert created.status_code == 201, created.text
    answer = widgets("PATCH", "/" + obj_name, _spec_paths(patch),
                     content_type="application/json-patch+json")
    if expected is None:
        assert answer.status_code == 422, answer.text
        status = answer.json()
        assert (status["reason"], status["message"]) == ("Invalid", REJECTED)
        assert widgets("GET", "/" + obj_name).json()["spec"] == doc  # nothing stored
    else:
        assert answer.status_code == 200, answer.text
        assert answer.json()["spec"] == expected
        assert widgets("GET", "/" + obj_name).json()["spec"] == expected


def test_rfc6902_a13_duplicate_op_member_takes_the_last(widgets):
    """A.13: `op` twice. Go's decoder (and Python's) keep the last one, `remove`, and /baz
    does not exist: the patch fails rather than adding."""
    created = widgets("POST", body={"apiVersion": "example.com/v1", "kind": "Widget",
                                    "metadata": {"name": "a13"}, "spec": {"foo": "bar"}})
    assert created.status_code == 201, created.text
    answer = widgets("PATCH", "/a13", raw='[{"op": "add", "path": "/spec/baz", "value": "qux", '
                                          '"op": "remove"}]',
                     content_type="application/json-patch+json")
    assert answer.status_code == 422, answer.text
    assert widgets("GET", "/a13").json()["spec"] == {"foo": "bar"}


def test_a_body_that_is_not_a_list_is_a_bad_request(widgets):
    widgets("POST", body={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "nl"}})
    answer = widgets("PATCH", "/nl", {"op": "add", "path": "/spec", "value": 1},
                     content_type="application/json-patch+json")
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"] == \
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"


def test_too_many_operations():
    ops = [{"op": "test", "path": "/a", "value": 1}] * 10001
    with pytest.raises(ApiError) as excinfo:
        json_patch({"a": 1}, ops)
    assert excinfo.value.code == 413
    assert json_patch({"a": 1}, ops[:10000]) == {"a": 1}


def test_replacing_the_whole_object_with_a_scalar_is_invalid(widgets):
    widgets("POST", body={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "sc"}})
    answer = widgets("PATCH", "/sc", [{"op": "replace", "path": "", "value": 3}],
                     content_type="application/json-patch+json")
    assert answer.status_code == 422, answer.text
    assert "patch: Invalid value" in answer.json()["message"]


def test_the_document_is_not_changed():
    doc = {"a": {"b": [1]}}
    assert json_patch(doc, [{"op": "add", "path": "/a/b/-", "value": 2}]) == {"a": {"b": [1, 2]}}
    assert doc == {"a": {"b": [1]}}


def test_nested_test_values_compare_as_json():
    assert json_patch({"a": [1, {"b": False}]}, [{"op": "test", "path": "/a", "value": [1.0, {"b": False}]}])
    with pytest.raises(ApiError):
        json_patch({"a": [1, {"b": False}]}, [{"op": "test", "path": "/a", "value": [1, {"b": 0}]}])
