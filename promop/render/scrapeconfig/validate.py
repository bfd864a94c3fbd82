"""Static checks of a ScrapeConfig beyond its CRD schema: what Prometheus would refuse.

Each problem rejects this ScrapeConfig only. Relabelings and references are checked while
generating (Reject), where their context is at hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.duration import DurationError, parse_duration
from promop.render import relabel
from promop.render.context import GenContext
from promop.render.model import Problem, obj_meta
from promop.render.scrapeconfig.selection_checks import selection_problems


def validate_scrape_config(ctx: GenContext, kind: str, obj: Mapping[str, Any]) -> list[Problem]:
    """Every problem found in a ScrapeConfig (empty when it is valid)."""
    ns, name = obj_meta(obj)
    problems: list[Problem] = []

    def bad(field: str, message: str) -> None:
        problems.append(Problem(kind, ns, name, field, message))

    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        bad("spec", "must be a mapping")
        return problems
    enforced = ctx.spec.get("enforcedNamespaceLabel")
    if enforced and not relabel.valid_label_name(enforced, ctx.version):
        bad("spec", f"the Prometheus spec.enforcedNamespaceLabel {enforced!r} is not a valid label name for "
                    f"Prometheus {ctx.version}; fix the Prometheus")
    interval, timeout = _duration(spec, "scrapeInterval", bad), _duration(spec, "scrapeTimeout", bad)
    if interval is not None and timeout is not None and timeout > interval:
        bad("spec.scrapeTimeout", f"scrapeTimeout {spec['scrapeTimeout']} is longer than scrapeInterval "
                                  f"{spec['scrapeInterval']}; Prometheus refuses it: shorten the timeout")
    for field, message in selection_problems(spec, ctx.version):
        bad(field, message)
    cls = spec.get("scrapeClass")
    if cls and cls not in ctx.scrape_classes:
        known = ", ".join(sorted(n for n in ctx.scrape_classes if n)) or "none defined"
        bad("spec.scrapeClass", f"scrape class {cls!r} is not defined in the Prometheus spec.scrapeClasses ({known})")
    return problems


def _duration(spec: Mapping[str, Any], key: str, bad: Any) -> float | None:
    value = spec.get(key)
    if not value:
        return None
    try:
        return parse_duration(value)
    except DurationError as e:
        bad(f"spec.{key}", f"{e}; use a duration such as 30s or 1m")
        return None
