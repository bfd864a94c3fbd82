"""A value built once per schema object, found by identity (a schema dict is not hashable, and CRD
schemas are large: hashing or comparing them per call would cost more than the value saves)."""

from __future__ import annotations

from typing import Any, Callable


class PerSchema:
    """`PerSchema(build)(schema)`: `build(schema)`, memoised by `id(schema)`. Each entry keeps its schema
    alive, so the id stays its own; past `limit` entries the memo starts over."""

    def __init__(self, build: Callable[[dict], Any], limit: int = 64) -> None:
        self._build = build
        self._limit = limit
        self._memo: dict[int, tuple[dict, Any]] = {}

    def __call__(self, schema: dict) -> Any:
        hit = self._memo.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        value = self._build(schema)
        if len(self._memo) > self._limit:
            self._memo.clear()
        self._memo[id(schema)] = (schema, value)
        return value
