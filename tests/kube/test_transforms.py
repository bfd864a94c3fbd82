"""The per-page pass of the informer: keys, the default transform, and a failing hook."""

from __future__ import annotations

import copy
import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from promop.kube.store import object_key
from promop.kube.transforms import keyed_page, strip_managed_fields

text = st.text(min_size=0, max_size=8)
scalar = st.one_of(st.none(), st.integers(), text)
metadata = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(text, st.integers(), st.none()),
        "namespace": st.one_of(text, st.integers(), st.none()),
        "labels": st.dictionaries(text, text, max_size=3),
        "managedFields": st.lists(st.dictionaries(text, text, max_size=2), max_size=2),
        "resourceVersion": text,
    },
)
objects = st.fixed_dictionaries({}, optional={"metadata": st.one_of(metadata, scalar), "kind": scalar})


@settings(max_examples=200, deadline=None)
@given(st.lists(objects, max_size=6))
def test_keeps_exactly_the_keyable_objects_in_order_without_managed_fields(items):
    expected = []
    for obj in copy.deepcopy(items):
        try:
            expected += [object_key(obj), obj]
        except ValueError:
            continue
        obj["metadata"].pop("managedFields", None)
    assert keyed_page(copy.deepcopy(items), strip_managed_fields, "test") == expected


def test_keys_objects_in_order_and_strips_managed_fields():
    items = [
        {"metadata": {"name": "a", "namespace": "ns", "managedFields": [{"manager": "x"}]}},
        {"metadata": {"name": "node-1"}},  # cluster-scoped
    ]
    out = keyed_page(items, strip_managed_fields, "test")
    assert out[0::2] == ["ns/a", "node-1"] == [object_key(o) for o in out[1::2]]
    assert "managedFields" not in out[1]["metadata"]


def test_objects_without_a_name_are_dropped_and_logged(caplog):
    caplog.set_level(logging.ERROR, logger="promop.kube.reflector")
    out = keyed_page([{"metadata": {"namespace": "ns"}}, {"metadata": {"name": "ok"}}], strip_managed_fields, "cms")
    assert out[0::2] == ["ok"]
    record = next(r for r in caplog.records if "skipped" in r.getMessage())
    assert record.kv["informer"] == "cms" and "no metadata.name" in record.kv["err"]


def test_a_custom_transform_runs_and_a_failing_one_keeps_the_object(caplog):
    caplog.set_level(logging.ERROR, logger="promop.kube.reflector")
    out = keyed_page([{"metadata": {"name": "a", "managedFields": []}}], strip_managed_fields, "t")
    assert out == ["a", {"metadata": {"name": "a"}}]

    def broken(obj):
        raise RuntimeError("boom")

    out = keyed_page([{"metadata": {"name": "b"}}], broken, "t")
    assert out == ["b", {"metadata": {"name": "b"}}]
    assert any("transform failed" in r.getMessage() for r in caplog.records)
