"""The batch decoder of large /api/v1/series answers: whatever the label values and
wherever the network splits the body, the batches hold exactly the answer's objects."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from promop.prom.stream import StreamDecodeError, iter_data_batches

TRICKY = ["},{\"", "}", "{", "\"", "\\", "},{\"a\":\"", "\\\"},{\"", "é", "\n", ",", "]}", "[", "data\":["]
label_values = st.one_of(st.sampled_from(TRICKY), st.text(max_size=12))
label_sets = st.dictionaries(st.sampled_from(["__name__", "a", "pod", "x_y"]), label_values, min_size=1, max_size=4)


def _chunks(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts})
    out, prev = [], 0
    for p in points + [len(body)]:
        out.append(body[prev:p])
        prev = p
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(label_sets, max_size=30), st.lists(st.integers(0, 10_000), max_size=8),
       st.integers(1, 200), st.booleans(), st.booleans())
def test_batches_are_exactly_the_objects(series, cuts, batch_bytes, warnings, compact) -> None:
    doc = {"status": "success", "data": series}
    if warnings:
        doc["warnings"] = ["some warning"]
    body = json.dumps(doc, ensure_ascii=False, separators=(",", ":") if compact else None).encode()
    got = [item for batch in iter_data_batches(_chunks(body, cuts), batch_bytes) for item in batch]
    assert got == series


def test_batches_are_bounded() -> None:
    series = [{"__name__": f"m{i}", "pod": f"p{i}"} for i in range(5000)]
    body = json.dumps({"status": "success", "data": series}, separators=(",", ":")).encode()  # as Prometheus
    batches = list(iter_data_batches([body[i : i + 4096] for i in range(0, len(body), 4096)], 16384))
    assert sum(len(b) for b in batches) == 5000
    assert len(batches) > 5 and max(len(b) for b in batches) < 1000


def test_empty_null_and_garbage() -> None:
    assert [x for b in iter_data_batches([b'{"status":"success","data":[]}']) for x in b] == []
    assert [x for b in iter_data_batches([b'{"status":"success","data":null}']) for x in b] == []
    with pytest.raises(StreamDecodeError):
        list(iter_data_batches([b'{"status":"success","data":[{"a":"b"},{"a"']))
    with pytest.raises(StreamDecodeError):
        list(iter_data_batches([b"<html>oops</html>"]))
