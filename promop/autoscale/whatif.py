"""`--what-if cpu=2x`: scale observed metric values before deciding."""

from __future__ import annotations

import re
from fractions import Fraction

from promop.autoscale.model import MetricValues, PodMetric

_WHAT_IF = re.compile(r"^([^=\s]+)=(\d+(?:\.\d+)?|\.\d+)x?$")


class WhatIfError(ValueError):
    pass


def parse_what_if(items: list[str]) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for item in items:
        m = _WHAT_IF.match(item.strip())
        if not m:
            raise WhatIfError(f"--what-if {item!r}: use METRIC=FACTORx, e.g. cpu=2x or http_requests=0.5x")
        out[m.group(1)] = Fraction(m.group(2))
    return out


def _scale(v: int, f: Fraction) -> int:
    return int(v * f)


def apply_what_if(values: MetricValues, factors: dict[str, Fraction]) -> list[str]:
    """Scale in place every observed value of the named metrics (resources, pods, object, external metrics);
    returns the names that matched nothing."""
    unmatched = []
    for name, f in factors.items():
        hit = False
        groups = [values.resource, values.pods] + list(values.container_resource.values())
        for group in groups:
            if name in group:
                group[name] = {p: PodMetric(_scale(m.value, f), m.timestamp, m.window) for p, m in group[name].items()}
                hit = True
        if name in values.object:
            values.object[name] = _scale(values.object[name], f)
            hit = True
        if name in values.external:
            values.external[name] = [_scale(v, f) for v in values.external[name]]
            hit = True
        if not hit:
            unmatched.append(name)
    return unmatched
