"""Alertmanager objects read from files: the Alertmanager half of `promop render` and `promop explain`."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promop.render.alertmanager.model import AMRenderInputs, AMRenderOptions, AMRenderResult
from promop.render.alertmanager.pipeline import render
from promop.render.model import Problem, obj_meta

KINDS = ("Alertmanager", "AlertmanagerConfig")
KIND_ALIASES = {"Alertmanager": ("alertmanager", "alertmanagers", "am"),
                "AlertmanagerConfig": ("alertmanagerconfig", "alertmanagerconfigs", "amcfg")}


@dataclass
class AMRendered:
    results: list[tuple[dict, AMRenderResult]] = field(default_factory=list)
    rejected: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)  # an Alertmanager whose configuration cannot be built


def _of(loaded: Any, kind: str) -> list[dict]:
    return list(loaded.objects.get(kind) or [])


def render_loaded(loaded: Any, options: AMRenderOptions | None = None) -> AMRendered:
    """Render every Alertmanager in `loaded` against every AlertmanagerConfig, Secret, ConfigMap, Namespace."""
    options = options or AMRenderOptions()
    out = AMRendered()
    seen: set[Problem] = set()
    secrets = {obj_meta(s): s for s in _of(loaded, "Secret")}
    configmaps = {obj_meta(c): c for c in _of(loaded, "ConfigMap")}
    for am in sorted(_of(loaded, "Alertmanager"), key=obj_meta):
        result = render(AMRenderInputs(am, _of(loaded, "AlertmanagerConfig"), _of(loaded, "Namespace"),
                                       secrets, configmaps, options))
        out.results.append((am, result))
        for target, problems in ((out.rejected, result.rejected), (out.warnings, result.warnings)):
            for p in problems:
                if p not in seen:
                    seen.add(p)
                    target.append(p)
        if result.fatal is not None:
            ns, name = obj_meta(am)
            out.errors.append(Problem("Alertmanager", ns, name, result.fatal.field, result.fatal.message))
    return out


def objects(rendered: AMRendered) -> list[dict]:
    return [obj for _, result in rendered.results for obj in result.objects()]


def write_tree(out_dir: str, rendered: AMRendered, dump_all) -> None:
    """DIR/<ns>/<alertmanager>/alertmanager.yaml and manifests.yaml."""
    for am, result in rendered.results:
        ns, name = obj_meta(am)
        base = Path(out_dir) / ns / name
        base.mkdir(parents=True, exist_ok=True)
        if result.fatal is None:
            (base / "alertmanager.yaml").write_text(result.config_text)
        (base / "manifests.yaml").write_text(dump_all(result.objects()))
        print(f"rendered Alertmanager {ns}/{name} -> {base}", file=sys.stderr)


def report(rendered: AMRendered) -> None:
    for p in rendered.errors:
        print(f"error {p} (no configuration generated; the operator keeps the previous one)", file=sys.stderr)
    for p in rendered.rejected:
        print(f"rejected {p}", file=sys.stderr)
    for p in rendered.warnings:
        print(f"warning {p}", file=sys.stderr)


def canonical_kind(text: str) -> str | None:
    low = text.lower().split(".", 1)[0]
    return next((k for k, aliases in KIND_ALIASES.items() if low in aliases), None)


def explain(kind: str, namespace: str, name: str, loaded: Any) -> tuple[list[str], bool]:
    """Lines saying what each Alertmanager does with the object (or, for an Alertmanager, with every candidate)."""
    if not any(obj_meta(o) == (namespace, name) for o in _of(loaded, kind)):
        return [f"error: {kind} {namespace}/{name} not found in the given files"], False
    rendered = render_loaded(loaded)
    if kind == "Alertmanager":
        am, result = next((a, r) for a, r in rendered.results if obj_meta(a) == (namespace, name))
        head = f"Alertmanager {namespace}/{name}: "
        if result.fatal is not None:
            lines = [head + f"no configuration: {result.fatal}"]
        elif result.unmanaged:
            lines = [head + "unmanaged: the user Secret's alertmanager.yaml is used as is (no alertmanagerConfigSelector)"]
        else:
            cfg = result.config or {}
            lines = [head + f"{len(cfg.get('receivers') or [])} receivers, "
                     f"{len((cfg.get('route') or {}).get('routes') or [])} top-level routes, "
                     f"{len(cfg.get('inhibit_rules') or [])} inhibit rules, {len(result.accepted())} AlertmanagerConfigs used"]
        rejected = {(p.namespace, p.name): p for p in result.rejected}
        for d in result.selection:
            who = f"  AlertmanagerConfig {d.namespace}/{d.name}"
            if not d.selected:
                lines.append(f"{who}: not selected: {d.reason}")
            elif (d.namespace, d.name) in rejected:
                p = rejected[(d.namespace, d.name)]
                lines.append(f"{who}: selected but rejected: {p.field}: {p.message}")
            else:
                lines.append(f"{who}: selected; receivers prefixed {d.namespace}/{d.name}/")
        lines += [f"  warning: {p.field}: {p.message}" for p in result.warnings
                  if (p.kind, p.namespace, p.name) == ("Alertmanager", namespace, name)]
        return lines, result.fatal is None
    lines, used = [], False
    if not rendered.results:
        return [f"{kind} {namespace}/{name}: not used: no Alertmanager object in the given files"], False
    lines.append(f"{kind} {namespace}/{name}:")
    for am, result in rendered.results:
        who = f"  Alertmanager {'/'.join(obj_meta(am))}"
        decision = next((d for d in result.selection if (d.namespace, d.name) == (namespace, name)), None)
        rejection = next((p for p in result.rejected if (p.namespace, p.name) == (namespace, name)), None)
        if result.fatal is not None:
            lines.append(f"{who}: no configuration generated: {result.fatal}")
        elif result.unmanaged:
            lines.append(f"{who}: not selected: no alertmanagerConfigSelector is set (the user Secret is used as is)")
        elif decision is None:
            lines.append(f"{who}: not selected: it is this Alertmanager's global configuration"
                         if (am.get("spec") or {}).get("alertmanagerConfiguration", {}).get("name") == name
                         else f"{who}: not considered")
        elif not decision.selected:
            lines.append(f"{who}: not selected: {decision.reason}")
        elif rejection:
            lines.append(f"{who}: selected but rejected: {rejection.field}: {rejection.message}")
        else:
            used = True
            lines.append(f"{who}: selected; receivers and time intervals are prefixed {namespace}/{name}/")
    for p in rendered.warnings:
        if (p.kind, p.namespace, p.name) == (kind, namespace, name):
            lines.append(f"  warning: {p.field}: {p.message}")
    return lines, used
