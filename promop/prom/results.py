"""Prometheus query results as plain Python values.

Prometheus encodes sample values as strings ("1.5", "NaN", "+Inf") and times
as float seconds; here they are floats. A vector is a list of `Sample`, a
matrix a list of `RangeSeries`, a scalar a `Scalar`, a string a `String`.
For long range answers, `SeriesColumns` holds a series' times and values as
two float arrays (`decode_range_body` reads them straight from the answer's text).
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Union

import orjson


@dataclass(slots=True)
class Sample:
    """One element of an instant vector."""

    labels: dict[str, str]
    value: float
    timestamp: float

    @property
    def name(self) -> str:
        """The metric name (`__name__`), or "" when the query dropped it."""
        return self.labels.get("__name__", "")


@dataclass(slots=True)
class RangeSeries:
    """One series of a range vector: (timestamp, value) points in time order."""

    labels: dict[str, str]
    points: list[tuple[float, float]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.labels.get("__name__", "")

    @property
    def values(self) -> list[float]:
        return [v for _, v in self.points]


@dataclass(slots=True)
class SeriesColumns:
    """One series of a range vector as two parallel float arrays (times, values).

    For readers of large answers (days of history for thousands of series): the
    points are held in two arrays rather than a tuple of two floats per point.
    """

    labels: dict[str, str]
    times: array = field(default_factory=lambda: array("d"))
    values: array = field(default_factory=lambda: array("d"))


@dataclass(slots=True, frozen=True)
class Scalar:
    value: float
    timestamp: float


@dataclass(slots=True, frozen=True)
class String:
    value: str
    timestamp: float


Vector = list[Sample]
Matrix = list[RangeSeries]
QueryResult = Union[Vector, Matrix, Scalar, String]


def _point(pair: list[Any]) -> tuple[float, float]:
    return float(pair[0]), float(pair[1])


def decode_result(data: dict[str, Any]) -> QueryResult:
    """Turn the `data` member of a query response into plain values.

    Raises ValueError on a shape this client does not know (callers wrap it
    with the query that produced it).
    """
    kind = data.get("resultType")
    result = data.get("result")
    if kind == "vector":
        out: Vector = []
        for item in result or ():
            if "value" not in item:  # a native histogram sample: no float value
                continue
            ts, v = _point(item["value"])
            out.append(Sample(item.get("metric") or {}, v, ts))
        return out
    if kind == "matrix":
        return [
            RangeSeries(item.get("metric") or {}, [_point(p) for p in item.get("values") or ()])
            for item in result or ()
        ]
    if kind == "scalar":
        ts, v = _point(result)
        return Scalar(v, ts)
    if kind == "string":
        return String(str(result[1]), float(result[0]))
    raise ValueError(f"unknown resultType {kind!r}")


_TIME, _VALUE = itemgetter(0), itemgetter(1)
# A series' float points as Prometheus writes them, `"values":[[<time>,"<value>"],...]` (no spaces). In
# JSON text an unescaped `"values":[` is always a key: inside a string every `"` is escaped.
_VALUES = re.compile(rb'"values":\[((?:\[[^\[\]"]*"[^"\\]*"\],?)*)\]')


def decode_matrix_columns(data: dict[str, Any]) -> list[SeriesColumns]:
    """The `data` member of a range-query response as SeriesColumns (the same numbers as
    decode_result's points: values as floats, "NaN"/"+Inf" included).

    Raises ValueError when the answer is not a matrix; IndexError or TypeError for a malformed point.
    """
    if data.get("resultType") != "matrix":
        raise ValueError(f"expected a matrix, got resultType {data.get('resultType')!r}")
    return [_columns(item) for item in data.get("result") or ()]


def _columns(item: dict[str, Any]) -> SeriesColumns:
    """One decoded series of a matrix (`{"metric": ..., "values": [[t, "v"], ...]}`) as columns."""
    pairs = item.get("values") or ()
    return SeriesColumns(item.get("metric") or {}, array("d", map(_TIME, pairs)),
                         array("d", map(float, map(_VALUE, pairs))))


def decode_range_body(body: bytes) -> tuple[dict[str, Any], list[SeriesColumns]]:
    """A whole range-query answer (the HTTP body) as (the document without its series, SeriesColumns).

    The same numbers as decode_matrix_columns(orjson.loads(body)["data"]), without a Python list per
    point: each series' points are cut out of the text first and parsed as one run of numbers, so the
    garbage collector has almost nothing to walk however long the history. Points written any other
    way (spaces, another server's layout) take the ordinary decode.
    """
    runs: list[bytes] = []

    def cut(m: re.Match) -> bytes:
        runs.append(m.group(1))
        return b'"values":%d' % (len(runs) - 1)

    doc = orjson.loads(_VALUES.sub(cut, body))
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict):
        return doc if isinstance(doc, dict) else {}, []
    if data.get("resultType") != "matrix":
        raise ValueError(f"expected a matrix, got resultType {data.get('resultType')!r}")
    out = []
    for item in data.get("result") or ():
        values = item.get("values")
        if isinstance(values, int):
            numbers = runs[values].translate(None, b'[]"').split(b",") if runs[values] else ()
            both = array("d", map(float, numbers))
            if len(both) % 2:
                raise ValueError("a point is not a [time, value] pair")
            out.append(SeriesColumns(item.get("metric") or {}, both[0::2], both[1::2]))
        else:
            out.append(_columns(item))
    data["result"] = None
    return doc, out
