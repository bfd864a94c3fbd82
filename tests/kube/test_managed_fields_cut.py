"""Cutting managedFields out of LIST bytes: the result is exactly the whole decode with each
item's metadata.managedFields dropped, or the page is decoded whole; never anything else."""

from __future__ import annotations

import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from promop.kube import managed_fields_cut
from promop.kube.client import KubeClient, _decode_without_managed_fields
from promop.kube.resources import CONFIGMAPS
from promop.kube.transforms import drops_managed_fields, strip_managed_fields


def _expected(page: dict) -> dict:
    for item in page.get("items") or []:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
    return page


def _entry(fields: dict) -> dict:
    return {"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2026-11-22T05:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": fields}


def _page(*items: dict) -> bytes:
    return orjson.dumps({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
                         "items": list(items)})


def _item(name: str, managed: list | None = None, **extra) -> dict:
    meta: dict = {"name": name, "namespace": "default"}
    if managed is not None:
        meta["managedFields"] = managed
    return {"metadata": meta, **extra}


def test_plain_managed_fields_are_cut_and_the_rest_is_identical():
    data = _page(_item("a", [_entry({"f:data": {".": {}, "f:x": {}}})], data={"x": "1"}),
                 _item("b", [_entry({"f:metadata": {"f:labels": {}}}), _entry({})], data={"y": "2"}))
    cut, cuts = managed_fields_cut.cut(data)
    assert cuts == 2 and b"fieldsV1" not in cut
    assert _decode_without_managed_fields(data) == _expected(orjson.loads(data))


def test_brackets_quotes_and_backslashes_inside_strings():
    keys = {'k:{"name":"a]b"}': {}, 'v:"x' + "\\" + '"': {}, "f:]": {}, "f:[" + "\\": {}}
    data = _page(
        _item("a", [_entry(keys)], data={"k": '"]"'}),
        _item("b", [_entry({"f:ok": {}})], data={"path": "C:" + "\\" + "temp]"}),
    )
    assert b"\\\\" in data and b']\\"' in data  # escapes and brackets really are inside strings
    page = _decode_without_managed_fields(data)
    assert page == _expected(orjson.loads(data))


def test_list_map_keys_of_a_status_are_cut_past_brackets_in_strings():
    """What every monitor carries once its status.bindings are written: escaped quotes in
    `k:{...}` keys, here with `]` inside them, before the array's own `]`."""
    status_keys = {"f:status": {"f:bindings": {'k:{"group":"g","name":"p]0"}': {
        "f:conditions": {'k:{"type":"Accepted]"}': {".": {}}}}}}}
    data = _page(_item("a", [_entry({"f:spec": {}}), _entry(status_keys)], data={"k": "]"}),
                 _item("b", [_entry(status_keys)]))
    assert data.count(b'\\"') >= 8 and b"\\\\" not in data
    cut, cuts = managed_fields_cut.cut(data)
    assert cuts == 2 and b"Accepted" not in cut
    assert _decode_without_managed_fields(data) == _expected(orjson.loads(data))


def test_a_managed_fields_key_outside_item_metadata_means_a_whole_decode():
    spec_field = _item("a", [_entry({})], spec={"managedFields": [1, 2]})
    assert _decode_without_managed_fields(_page(spec_field)) is None
    not_an_array = _item("b", None)
    not_an_array["metadata"]["managedFields"] = None
    assert _decode_without_managed_fields(_page(not_an_array, _item("c", [_entry({})]))) is None


def test_a_duplicated_key_means_a_whole_decode():
    data = _page(_item("a", [_entry({})]))
    twice = data.replace(b'"managedFields":[', b'"managedFields":[],"managedFields":[', 1)
    assert orjson.loads(twice)  # still valid JSON (the last key wins)
    assert _decode_without_managed_fields(twice) is None


def test_an_array_inside_an_entry_never_gives_a_wrong_result():
    """Not an apiserver's schema, but the cut must then fail rather than cut short."""
    data = _page(_item("a", [{"manager": "m", "odd": [[1], {"x": [2]}]}, _entry({})], data={"k": "v"}))
    page = _decode_without_managed_fields(data)
    assert page is None or page == _expected(orjson.loads(data))


def test_nothing_to_cut():
    assert managed_fields_cut.cut(_page(_item("a"))) is None
    assert _decode_without_managed_fields(b'{"items":[]}') is None
    assert managed_fields_cut.cut(b'{"metadata":{"managedFields":[') is None  # no end: left whole


_text = st.text(alphabet=st.sampled_from(list('ab]["\\{}:,.\u00e9 ')), max_size=8)
_fields = st.recursive(st.just({}), lambda inner: st.dictionaries(_text, inner, max_size=3), max_leaves=8)
_entries = st.lists(st.fixed_dictionaries({"manager": _text, "fieldsV1": _fields}), max_size=3)
_values = st.recursive(st.none() | st.integers(-1000, 1000) | _text,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                       max_leaves=6)


@st.composite
def _pages(draw) -> bytes:
    items = []
    for i in range(draw(st.integers(0, 4))):
        meta = {"name": f"n{i}", "labels": draw(st.dictionaries(_text, _text, max_size=2))}
        if draw(st.booleans()):
            meta["managedFields"] = draw(_entries | st.none())
        item = {"metadata": meta, "data": draw(st.dictionaries(_text, _text, max_size=2))}
        if draw(st.integers(0, 5)) == 0:
            item["spec"] = {"managedFields": draw(_values)}
        if draw(st.integers(0, 5)) == 0:
            item["status"] = draw(_values)
        items.append(item)
    return _page(*items)


@settings(max_examples=300, deadline=None)
@given(_pages())
def test_the_cut_equals_the_whole_decode_or_declines(data):
    page = _decode_without_managed_fields(data)
    if page is not None:
        assert page == _expected(orjson.loads(data))


def test_only_our_dropping_transform_allows_the_cut():
    assert drops_managed_fields(strip_managed_fields)
    assert not drops_managed_fields(None)
    assert not drops_managed_fields(lambda obj: obj)


def test_list_all_cuts_only_when_asked(api_client, sandbox, monkeypatch):
    kube = KubeClient(api_client, qps=0, burst=0, registry=CollectorRegistry())
    for i in range(3):
        kube.create(CONFIGMAPS, {"metadata": {"name": f"c{i}", "namespace": "default"}, "data": {"i": str(i)}})
    calls = []
    real = managed_fields_cut.cut
    monkeypatch.setattr(managed_fields_cut, "cut", lambda data: calls.append(1) or real(data))
    kept, _ = kube.list_all(CONFIGMAPS, "default", page_size=2)
    assert not calls and all("managedFields" in o["metadata"] for o in kept)  # the sandbox sets them
    dropped, _ = kube.list_all(CONFIGMAPS, "default", page_size=2, drop_managed_fields=True)
    assert len(calls) == 2
    assert dropped == [_expected({"items": [json.loads(json.dumps(o))]})["items"][0] for o in kept]
