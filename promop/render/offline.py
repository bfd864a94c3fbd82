"""Rendering objects read from files: the shared core of `promop render` and `promop explain`.

Every Prometheus found is rendered against all monitors, rules, Secrets,
ConfigMaps and Namespaces found (the renderer selects, as the operator does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from promop.render.emit import emit_all
from promop.render.loader import Loaded
from promop.render.model import Problem, RenderInputs, RenderOptions, RenderResult, obj_meta
from promop.render.agent import InvalidAgent, render_agent
from promop.render.probe import with_crd_defaults
from promop.render.schema_check import InvalidPrometheus
from promop.render.unsupported import unsupported_fields

_FIELD_PREFIX = re.compile(r"^((?:spec|metadata)[\w.\[\]-]*): (.+)$", re.S)  # "spec.version: ..." messages
MONITORING_KINDS = ("Prometheus", "ServiceMonitor", "PodMonitor", "PrometheusRule", "Probe")


def dump_all(objects: Iterable[Any]) -> str:
    """A multi-document YAML stream (field order kept)."""
    return emit_all(list(objects))


@dataclass
class Rendered:
    """The result for each Prometheus, plus every problem (deduplicated, in order)."""

    results: list[tuple[dict, RenderResult]] = field(default_factory=list)
    failed: list[tuple[dict, str]] = field(default_factory=list)  # Prometheus that could not render at all
    rejected: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def inputs_for(prometheus: dict, loaded: Loaded, options: RenderOptions) -> RenderInputs:
    return RenderInputs(
        prometheus=prometheus,
        service_monitors=loaded.of("ServiceMonitor"),
        pod_monitors=loaded.of("PodMonitor"),
        scrape_configs=loaded.of("ScrapeConfig"),
        prometheus_rules=loaded.of("PrometheusRule"),
        probes=[with_crd_defaults(p) for p in loaded.of("Probe")],
        namespaces=loaded.of("Namespace"),
        secrets={obj_meta(s): s for s in loaded.of("Secret")},
        configmaps={obj_meta(c): c for c in loaded.of("ConfigMap")},
        options=options,
    )


def _add_unique(target: list[Problem], problems: Iterable[Problem], seen: set[Problem]) -> None:
    for p in problems:
        if p not in seen:
            seen.add(p)
            target.append(p)


def render_loaded(loaded: Loaded, options: RenderOptions | None = None) -> Rendered:
    """Render every Prometheus in `loaded`; one failing Prometheus does not stop the others."""
    try:
        from promop.render import render  # the pipeline entry point
    except ImportError:  # before the package re-exports it
        from promop.render.pipeline import render

    options = options or RenderOptions()
    out = Rendered()
    seen: set[Problem] = set()
    for prometheus in sorted(loaded.of("Prometheus"), key=obj_meta):
        try:
            result = render(inputs_for(prometheus, loaded, options))
        except InvalidPrometheus as exc:
            out.failed.append((prometheus, str(exc)))
            _add_unique(out.rejected, exc.problems, seen)
            continue
        except Exception as exc:  # noqa: BLE001 - reported per object, as the operator would
            ns, name = obj_meta(prometheus)
            out.failed.append((prometheus, str(exc)))
            m = _FIELD_PREFIX.match(str(exc))
            field_, message = (m.group(1), m.group(2)) if m else ("spec", str(exc))
            _add_unique(out.rejected, [Problem("Prometheus", ns, name, field_, message)], seen)
            continue
        out.results.append((prometheus, result))
        _add_unique(out.rejected, result.rejected, seen)
        _add_unique(out.warnings, result.warnings, seen)
    for agent in sorted(loaded.of("PrometheusAgent"), key=obj_meta):  # the same, through render_agent
        try:
            result = render_agent(inputs_for(agent, loaded, options))
        except (InvalidAgent, ValueError) as exc:
            out.failed.append((agent, str(exc)))
            _add_unique(out.rejected, [Problem("PrometheusAgent", *obj_meta(agent), "spec", str(exc))], seen)
            continue
        out.results.append((agent, result))
        _add_unique(out.rejected, result.rejected, seen)
        _add_unique(out.warnings, result.warnings, seen)
    for kind in MONITORING_KINDS:
        for obj in loaded.of(kind):
            _add_unique(out.warnings, unsupported_fields(obj), seen)
    return out


def merge_services(objects: list[dict]) -> list[dict]:
    """One governing Service per namespace/name, with every Prometheus as an owner."""
    out: list[dict] = []
    services: dict[tuple[str, str], dict] = {}
    for obj in objects:
        if obj.get("kind") != "Service":
            out.append(obj)
            continue
        key = obj_meta(obj)
        if key not in services:
            services[key] = obj
            out.append(obj)
            continue
        owners = services[key]["metadata"].setdefault("ownerReferences", [])
        for ref in obj["metadata"].get("ownerReferences") or []:
            if ref not in owners:
                owners.append(ref)
    return out


LINT_SELECTORS = (
    "serviceMonitorSelector", "serviceMonitorNamespaceSelector", "podMonitorSelector", "podMonitorNamespaceSelector",
    "ruleSelector", "ruleNamespaceSelector",
)
_MISSING_REF = re.compile(r"^(Secret|ConfigMap) (\S+) not found; create it or fix the reference$")


def _linting(prometheus: dict) -> dict:
    """A copy of `prometheus` that selects every monitor and rule in every namespace."""
    out = {**prometheus, "spec": dict(prometheus.get("spec") or {})}
    for name in LINT_SELECTORS:
        out["spec"][name] = {}
    return out


def lint_loaded(loaded: Loaded, options: RenderOptions | None = None) -> Rendered:
    """Every rejection and warning for the monitors and rules in `loaded`, as `render` would give.

    Each Prometheus in the files (or, without one, a default Prometheus of promop's default
    version) is made to select everything, so every object is checked. A reference to a
    Secret/ConfigMap that is not in the files cannot be checked: that is a warning, not a rejection.
    """
    proms = loaded.of("Prometheus") or [{
        "apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
        "metadata": {"name": "lint", "namespace": "default", "uid": "lint"}, "spec": {},
    }]
    linting = Loaded(objects={**loaded.objects, "Prometheus": [_linting(p) for p in proms]},
                     sources=loaded.sources, skipped=loaded.skipped, rejected=loaded.rejected)
    rendered = render_loaded(linting, options)
    out = Rendered(results=rendered.results, failed=rendered.failed, warnings=list(rendered.warnings))
    seen = set(out.warnings)
    for p in rendered.rejected:
        if _MISSING_REF.match(p.message):
            _add_unique(out.warnings, [Problem(p.kind, p.namespace, p.name, p.field,
                                               f"not checked: {p.message.split(';')[0]} in the given files")], seen)
        else:
            out.rejected.append(p)
    return out
