"""How many shards a Prometheus has: one answer for the config, the StatefulSets and the status.

A module of its own so that the generation context and the StatefulSet builder
both read it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def shard_count(spec: Mapping[str, Any]) -> int:
    """The one answer to "how many shards" (config relabelling, StatefulSets, status): an integer
    above 1, else 1. The CRD types `shards` as an integer; anything else (a string "3", a bool)
    counts as unset, as upstream's typed decode would refuse it."""
    shards = spec.get("shards")
    return shards if isinstance(shards, int) and not isinstance(shards, bool) and shards > 1 else 1
