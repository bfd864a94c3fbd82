"""FieldsV1 set arithmetic behind managedFields, on plain dicts (no server needed)."""

from __future__ import annotations

from promop.sandbox import fields


def test_update_set_marks_new_maps_as_members_and_changed_values_as_leaves():
    old = {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v", "m": {"n": 1}}}
    new = {"metadata": {"name": "a", "labels": {"x": "1"}, "annotations": {"a": "b"}},
           "data": {"k": "v2", "m": 5, "fresh": {"deep": {"er": 1}}}}
    assert fields.update_set(old, new) == {
        "f:data": {"f:k": {}, "f:m": {},
                   "f:fresh": {".": {}, "f:deep": {".": {}, "f:er": {}}}},
        "f:metadata": {"f:annotations": {".": {}, "f:a": {}}}}
    assert fields.update_set(old, old) == {}


def test_apply_set_owns_leaves_and_list_items_not_maps():
    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {}},
              "spec": {"containers": [{"name": "c", "args": ["x"]}], "empty": {}}}
    assert fields.apply_set(config) == {
        "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:name": {}, "f:args": {}}}}}


def test_removed_set_names_whole_subtrees_and_list_items():
    old = {"metadata": {"finalizers": ["a", "b"]},
           "spec": {"containers": [{"name": "c"}, {"name": "d", "image": "i"}], "x": {"y": 1}}}
    new = {"metadata": {"finalizers": ["a"]}, "spec": {"containers": [{"name": "c"}]}}
    assert fields.removed_set(old, new) == {
        "f:spec": {"f:containers": {'k:{"name":"d"}': {}}, "f:x": {}},
        "f:metadata": {"f:finalizers": {'v:"b"': {}}}}


def test_union_and_difference_keep_membership():
    a = {"f:data": {".": {}, "f:k": {}}}
    b = {"f:data": {"f:j": {}}, "f:spec": {}}
    both = fields.union(a, b)
    assert both == {"f:data": {".": {}, "f:k": {}, "f:j": {}}, "f:spec": {}}
    assert fields.difference(both, {"f:data": {"f:k": {}}, "f:spec": {}}) == {
        "f:data": {".": {}, "f:j": {}}}
    assert fields.difference({"f:data": {"f:k": {}}}, {"f:data": {}}) is None


def test_canonical_order_and_entries_sorted_apply_first():
    tree = {'v:"z"': {}, "f:b": {}, 'k:{"name":"a"}': {}, ".": {}, "f:a": {}}
    assert list(fields.canonical(tree)) == [".", "f:a", "f:b", 'k:{"name":"a"}', 'v:"z"']
    entries = fields.record(None, "m", fields.UPDATE, "v1", {"f:data": {}})
    entries = fields.record(entries, "z", fields.APPLY, "v1", {"f:spec": {}})
    assert [(e["manager"], e["operation"]) for e in entries] == [("z", "Apply"),
                                                                ("m", "Update")]
    # an Update that sets nothing changes nothing
    assert fields.record(entries, "m", fields.UPDATE, "v1", {}) == entries


def test_default_manager_is_the_user_agent_product():
    assert fields.manager_from_user_agent("OpenAPI-Generator/37.0.2/python") == \
        "OpenAPI-Generator"
    assert fields.manager_from_user_agent("kubectl/v1.31.0 (linux/amd64)") == "kubectl"
    assert fields.manager_from_user_agent("x" * 200) == "x" * 128
