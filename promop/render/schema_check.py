"""CRD schema validation of the objects the renderer reads, as the apiserver would do it.

An object the apiserver would refuse (wrong type, pattern, enum, format, bounds, required
field, a CRD validation rule) is rejected with the field path and the schema's reason,
before any other check. Objects written before a CRD upgrade, and objects read from files
by `promop render`, can violate the schema; Prometheus would then refuse the config.
The check uses promop's own CRDs (crds/, the schemas `kubectl apply` installs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.model import MONITORING_GROUP, MONITORING_VERSION, Problem, obj_meta
from promop.schema import SchemaNotFound, crd_schema, validate

SCHEMA_KINDS = ("Prometheus", "ServiceMonitor", "PodMonitor", "PrometheusRule", "Probe")
KIND_VERSIONS = {"ScrapeConfig": "v1alpha1"}  # kinds not served as monitoring.coreos.com/v1


class InvalidPrometheus(ValueError):
    """The Prometheus object violates its CRD schema; nothing is rendered for it."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        shown = "; ".join(f"{p.field}: {p.message}" for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"{shown}{more}")


# What the CRD's common patterns mean, so a rejection says what to write instead.
_PATTERN_HINTS = (
    ("(([0-9]+)y)?(([0-9]+)w)?", "a duration such as 30s, 5m or 1h30m"),
    ("(([0-9]+)h)?(([0-9]+)m)?", "a duration such as 30s, 5m or 1h30m"),
    ("(K|M|G|T|E|P)i?)?B)$", "a size such as 512MB or 1GiB"),
    ("^(http|https|socks5)://.+$", "a URL starting with http://, https:// or socks5://"),
    ("^(http|https)://.+$", "a URL starting with http:// or https://"),
    ("^https?://.+$", "a URL starting with http:// or https://"),
)


def _with_hint(message: str) -> str:
    if "should match '" in message:
        for fragment, hint in _PATTERN_HINTS:
            if fragment in message:
                return f"{message}: use {hint}"
    return message


def _schema(kind: str) -> dict | None:
    try:
        return crd_schema(kind, KIND_VERSIONS.get(kind, MONITORING_VERSION), MONITORING_GROUP)
    except SchemaNotFound:
        return None


def schema_problems(kind: str, obj: Mapping[str, Any]) -> list[Problem]:
    """Every CRD schema violation of `obj` (a `kind` object), as rejections (empty: valid).

    The status is not checked: nothing is rendered from it, the apiserver checks it when the
    operator writes it, and an object must not be refused for what the operator wrote there (a
    status kept from before a CRD upgrade). It is also most of the work: a restart finds every
    monitor with its status.bindings."""
    schema = _schema(kind)
    if schema is None:
        return []
    ns, name = obj_meta(obj)
    return [
        Problem(kind, ns, name, v.path or "(object)", f"{_with_hint(v.message)} (CRD schema)")
        for v in validate({k: v for k, v in obj.items() if k != "status"}, schema)
    ]


def _overlaps(a: str, b: str) -> bool:
    """Is one field path the other, or inside it?"""
    if a == b:
        return True
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return long_.startswith(short) and long_[len(short)] in ".["


def merge_problems(own: list[Problem], schema: list[Problem]) -> list[Problem]:
    """The renderer's own problems (their messages say what to do), plus every schema violation
    at a field none of them already covers."""
    fields = [p.field for p in own]
    return own + [p for p in schema if not any(_overlaps(p.field, f) for f in fields)]
