"""spec.tsdb of a Prometheus: upstream's TSDBSpec.Validate and the `storage.tsdb` settings it maps to.

Each setting is written only from the Prometheus version that reads it (else dropped with a
warning, as upstream's WithMinimumVersion does); `retention` is not here (globals.py owns it).
A value upstream's validation refuses stops the whole Prometheus, as upstream's reconcile does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.quantity import QuantityError, approximate_float
from promop.render.store import Scope
from promop.render.versions import Version

OUT_OF_ORDER_SINCE = "2.39.0"
STALE_SERIES_SINCE = "3.10.0"
CHUNK_ENCODING_SINCE = "3.13.0"
XOR2_FEATURE = "xor2-encoding"  # Prometheus reads xor2 float chunks only with this feature flag
ST_STORAGE_FEATURE = "st-storage"


def _floats(spec: Mapping[str, Any]) -> str | None:
    """spec.tsdb.chunkEncoding.floats as Prometheus spells it (the CRD's Xor/Xor2 are lower-cased)."""
    tsdb = spec.get("tsdb") or {}
    floats = (tsdb.get("chunkEncoding") or {}).get("floats") if isinstance(tsdb, Mapping) else None
    return str(floats).lower() if floats else None


def tsdb_problems(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, reason) for every value upstream's TSDBSpec.Validate refuses (whatever the version)."""
    tsdb = spec.get("tsdb") or {}
    if not isinstance(tsdb, Mapping):
        return []
    out = []
    threshold = tsdb.get("staleSeriesCompactionThreshold")
    if threshold is not None:
        field = "spec.tsdb.staleSeriesCompactionThreshold"
        try:
            value = approximate_float(threshold)
        except QuantityError as e:
            out.append((field, f"{e}; use a number between 0 and 1 such as 0.5"))
        else:
            if not 0 <= value <= 1:
                out.append((field, f"{threshold} is not between 0 and 1 (a ratio of stale series); use e.g. 0.5"))
    if _floats(spec) == "xor" and ST_STORAGE_FEATURE in (spec.get("enableFeatures") or ()):
        out.append(("spec.tsdb.chunkEncoding.floats", "Xor chunks cannot store the start timestamps that the "
                    "st-storage feature needs; use Xor2 or remove st-storage from spec.enableFeatures"))
    return out


def tsdb_settings(spec: Mapping[str, Any], scope: Scope, out_of_order_since: str = OUT_OF_ORDER_SINCE) -> dict:
    """`storage.tsdb` keys other than retention, in upstream's order; call after tsdb_problems is empty.
    An agent reads the out-of-order window from a later version than a server (its own gate)."""
    tsdb_spec = spec.get("tsdb") or {}
    out: dict = {}
    if tsdb_spec.get("outOfOrderTimeWindow"):
        scope.put(out, "out_of_order_time_window", tsdb_spec["outOfOrderTimeWindow"], out_of_order_since,
                  "spec.tsdb.outOfOrderTimeWindow")
    threshold = tsdb_spec.get("staleSeriesCompactionThreshold")
    if threshold is not None:
        value = approximate_float(threshold)  # Go marshals the float64: 1 -> 1, 0.5 -> 0.5
        scope.put(out, "stale_series_compaction_threshold", int(value) if value.is_integer() else value,
                  STALE_SERIES_SINCE, "spec.tsdb.staleSeriesCompactionThreshold")
    floats = _floats(spec)
    if floats:
        scope.put(out, "chunk_encoding", {"floats": floats}, CHUNK_ENCODING_SINCE, "spec.tsdb.chunkEncoding.floats")
    return out


def auto_features(spec: Mapping[str, Any], version: Version) -> list[str]:
    """Feature flags spec.tsdb turns on by itself: Xor2 float chunks need `xor2-encoding` (upstream adds it,
    once, whether or not the user listed it). Below 3.13 the encoding is not written, so no flag either."""
    if _floats(spec) == "xor2" and version.at_least(CHUNK_ENCODING_SINCE):
        return [XOR2_FEATURE]
    return []
