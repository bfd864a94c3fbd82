"""ThanosRuler objects read from files: the ThanosRuler half of `promop render` and `promop explain`."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from promop.render.model import Problem, RenderOptions, obj_meta
from promop.render.thanos.ruler_render import InvalidThanosRuler, RulerInputs, RulerResult, render_ruler

KIND = "ThanosRuler"
ALIASES = ("thanosruler", "thanosrulers", "ruler", "tr")


@dataclass
class RulerRendered:
    results: list[tuple[dict, RulerResult]] = field(default_factory=list)
    failed: list[tuple[dict, str]] = field(default_factory=list)
    rejected: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def _of(loaded: Any, kind: str) -> list[dict]:
    return list(loaded.objects.get(kind) or [])


def render_loaded(loaded: Any, options: RenderOptions | None = None) -> RulerRendered:
    """Every ThanosRuler in `loaded` against every PrometheusRule, Namespace, Secret and ConfigMap (web TLS
    certificates); one failing ThanosRuler does not stop the others."""
    out = RulerRendered()
    seen: set[Problem] = set()
    secrets = {obj_meta(s): s for s in _of(loaded, "Secret")}
    configmaps = {obj_meta(c): c for c in _of(loaded, "ConfigMap")}
    for ruler in sorted(_of(loaded, KIND), key=obj_meta):
        try:
            result = render_ruler(RulerInputs(ruler, _of(loaded, "PrometheusRule"), _of(loaded, "Namespace"),
                                              secrets, configmaps, options=options or RenderOptions()))
        except InvalidThanosRuler as exc:
            out.failed.append((ruler, str(exc)))
            problems = exc.problems
            out.rejected += [p for p in problems if p not in seen]
            seen.update(problems)
            continue
        out.results.append((ruler, result))
        for target, problems in ((out.rejected, result.rejected), (out.warnings, result.warnings)):
            target += [p for p in problems if p not in seen]
            seen.update(problems)
    return out


def objects(rendered: RulerRendered) -> list[dict]:
    return [obj for _, result in rendered.results for obj in result.objects()]


def write_tree(out_dir: str, rendered: RulerRendered, dump_all: Callable[[list], str]) -> None:
    """DIR/<ns>/<thanosruler>/rules/<configmap>/<file> and manifests.yaml."""
    for ruler, result in rendered.results:
        ns, name = obj_meta(ruler)
        base = Path(out_dir) / ns / name
        for cm in result.rule_configmaps:
            rules_dir = base / "rules" / cm["metadata"]["name"]
            rules_dir.mkdir(parents=True, exist_ok=True)
            for key, content in (cm.get("data") or {}).items():
                (rules_dir / key).write_text(content)
        base.mkdir(parents=True, exist_ok=True)
        (base / "manifests.yaml").write_text(dump_all(result.objects()))
        print(f"rendered ThanosRuler {ns}/{name} -> {base}", file=sys.stderr)


def report(rendered: RulerRendered) -> None:
    for ruler, message in rendered.failed:
        print(f"error ThanosRuler {'/'.join(obj_meta(ruler))}: nothing rendered: {message}", file=sys.stderr)
    for p in rendered.rejected:
        if p.kind != KIND:
            print(f"rejected {p}", file=sys.stderr)
    for p in rendered.warnings:
        print(f"warning {p}", file=sys.stderr)


def is_kind(text: str) -> bool:
    return text.lower().split(".", 1)[0] in ALIASES


def explain(namespace: str, name: str, loaded: Any) -> tuple[list[str], bool]:
    """What one ThanosRuler selects: each PrometheusRule, selected or not and why, and its rule file."""
    if not any(obj_meta(o) == (namespace, name) for o in _of(loaded, KIND)):
        return [f"error: ThanosRuler {namespace}/{name} not found in the given files"], False
    rendered = render_loaded(loaded)
    head = f"ThanosRuler {namespace}/{name}: "
    failed = next((m for r, m in rendered.failed if obj_meta(r) == (namespace, name)), None)
    if failed is not None:
        return [head + f"nothing rendered: {failed}"], False
    _, result = next((r, res) for r, res in rendered.results if obj_meta(r) == (namespace, name))
    lines = [head + f"StatefulSet {result.statefulset['metadata']['name']}, "
             f"{len(result.accepted_rules())} PrometheusRules in {len(result.rule_configmaps)} ConfigMap(s)"]
    rejected = {(p.namespace, p.name): p for p in result.rejected}
    for d in result.selection:
        who = f"  PrometheusRule {d.namespace}/{d.name}"
        if not d.selected:
            lines.append(f"{who}: not selected: {d.reason}")
        elif (d.namespace, d.name) in rejected:
            p = rejected[(d.namespace, d.name)]
            lines.append(f"{who}: selected but rejected: {p.field}: {p.message}")
        else:
            cm, key = result.rule_files[(d.namespace, d.name)]
            lines.append(f"{who}: selected; rule file {key} in ConfigMap {cm}")
    lines += [f"  warning: {p.field}: {p.message}" for p in result.warnings]
    return lines, True
