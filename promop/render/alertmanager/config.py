"""Build one Alertmanager's configuration: base + every selected AlertmanagerConfig, version-gated.

Three modes (reference §4): unmanaged (no selector and no
`alertmanagerConfiguration`: the user's text is used verbatim), the user's
Secret as the base, or a global AlertmanagerConfig as the base. An invalid
AlertmanagerConfig is rejected alone (also where upstream would fail the
whole reconcile during conversion or sanitize); only a problem with the base
or the Alertmanager itself is Fatal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from promop.render.alertmanager import amconfig
from promop.render.alertmanager.base import (CONFIG_KEY, check_root_route, convert_global, parse_base, user_config,
                                             user_secret_name)
from promop.render.alertmanager.cache import AMRenderCache, Entry, object_key
from promop.render.alertmanager.common import TEMPLATES_DIR, AMScope, Fatal, Reject, Store, Version, am_version
from promop.render.alertmanager.receivers import ReceiverContext
from promop.render.alertmanager.sanitize import Sanitizer
from promop.render.alertmanager.selection import select_configs
from promop.render.emit import emit
from promop.render.model import Decision, Problem, obj_meta

OUTPUT_ORDER = ("global", "route", "inhibit_rules", "receivers", "mute_time_intervals", "time_intervals", "templates")


@dataclass
class ConfigResult:
    """The generated configuration (or why there is none) and what each AlertmanagerConfig did."""

    config: dict | None = None
    text: str = ""
    unmanaged: bool = False
    fatal: Fatal | None = None
    selection: list[Decision] = field(default_factory=list)
    rejected: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    assets: dict[str, str] = field(default_factory=dict)  # tls-assets file name -> content
    extra_data: dict[str, str] = field(default_factory=dict)  # user Secret keys (base64) copied into the generated one
    version: Version | None = None

    def accepted(self) -> list[tuple[str, str]]:
        bad = {(p.namespace, p.name) for p in self.rejected}
        return [(d.namespace, d.name) for d in self.selection if d.selected and (d.namespace, d.name) not in bad]


ROUTE_ORDER = ("receiver", "group_by", "group_wait", "group_interval", "repeat_interval", "match", "match_re",
               "matchers", "continue", "routes", "mute_time_intervals", "active_time_intervals")


def _ordered_route(route: Any, deep: bool = True) -> Any:
    """A route with its keys in upstream's struct order (unknown keys kept, last). `deep=False` reorders the
    top only: for an AlertmanagerConfig's route, whose children amconfig builds in this order already."""
    if not isinstance(route, Mapping):
        return route
    out = {k: route[k] for k in ROUTE_ORDER if k in route}
    out.update((k, v) for k, v in route.items() if k not in out)
    if deep and isinstance(out.get("routes"), list):
        out["routes"] = [_ordered_route(r) for r in out["routes"]]
    return out


def dump_config(cfg: Mapping[str, Any]) -> str:
    """The configuration as YAML, top-level keys in upstream's order, `templates: []` always present."""
    ordered = {k: cfg[k] for k in OUTPUT_ORDER if k in cfg}
    if "route" in ordered:
        ordered["route"] = _ordered_route(ordered["route"])
    ordered.setdefault("templates", [])
    if "templates" in ordered and list(ordered)[-1] != "templates":
        ordered["templates"] = ordered.pop("templates")
    return _dump(ordered)


def _scope(store: Store, kind: str, obj: Mapping[str, Any], version: Version) -> AMScope:
    ns, name = obj_meta(obj)
    return AMScope(store, kind, ns, name, version)


def build_config(
    alertmanager: Mapping[str, Any],
    candidates: Sequence[Mapping[str, Any]] = (),
    namespaces: Sequence[Mapping[str, Any]] = (),
    store: Store | None = None,
    cache: AMRenderCache | None = None,
) -> ConfigResult:
    """The configuration of one Alertmanager. Pure: everything it reads is in the arguments
    (`cache` only saves work: the result is the same with or without it)."""
    store = store or Store()
    spec = alertmanager.get("spec") or {}
    am_ns, am_name = obj_meta(alertmanager)
    result = ConfigResult()

    def am_warn(fld: str, message: str) -> None:
        result.warnings.append(Problem("Alertmanager", am_ns, am_name, fld, message))

    try:
        version = am_version(spec)
    except Fatal as exc:
        result.fatal = exc
        return result
    result.version = version
    global_spec = spec.get("alertmanagerConfiguration")
    if spec.get("alertmanagerConfigSelector") is None and global_spec is None:
        return _unmanaged(alertmanager, store, result, am_warn)
    cfg = _base_config(alertmanager, global_spec, candidates, store, version, result, am_warn)
    if cfg is None:
        return result
    strategy = (spec.get("alertmanagerConfigMatcherStrategy") or {}).get("type") or "OnNamespace"
    if strategy not in amconfig.STRATEGIES:
        result.fatal = Fatal("spec.alertmanagerConfigMatcherStrategy.type",
                             f"{strategy!r} is not one of {', '.join(amconfig.STRATEGIES)}")
        return result
    result.selection = select_configs(alertmanager, candidates, namespaces)
    merged = _merge_selected(cfg, candidates, store, cache, version, am_ns, strategy, result)
    base_text = _assemble(cfg, merged.parts)
    if merged.inhibit:
        cfg["inhibit_rules"] = [*(cfg.get("inhibit_rules") or []), *merged.inhibit]
    if merged.receivers:
        cfg["receivers"] = [*(cfg.get("receivers") or []), *merged.receivers]
    if merged.intervals:
        cfg["mute_time_intervals"] = [*(cfg.get("mute_time_intervals") or []), *merged.intervals]
    if merged.routes:
        cfg["route"]["routes"] = [*merged.routes, *(cfg["route"].get("routes") or [])]
    cfg.setdefault("templates", cfg.get("templates") or [])
    result.config = cfg
    result.text = base_text
    return result


def _unmanaged(alertmanager: Mapping[str, Any], store: Store, result: ConfigResult, am_warn) -> ConfigResult:
    """No selector and no alertmanagerConfiguration: the user's Secret passes through as written."""
    text, result.extra_data = user_config(alertmanager, store)
    result.unmanaged, result.text = True, text
    try:
        loaded = yaml.safe_load(text)
        result.config = loaded if isinstance(loaded, dict) else {}
    except yaml.YAMLError:
        result.config = {}
        am_warn(f"Secret {user_secret_name(alertmanager)}", f"{CONFIG_KEY} is not valid YAML; it is passed through "
                "unchecked because no alertmanagerConfigSelector is set")
    return result


def _base_config(alertmanager: Mapping[str, Any], global_spec: Any, candidates: Sequence[Mapping[str, Any]],
                 store: Store, version: Any, result: ConfigResult, am_warn) -> dict | None:
    """The base configuration (the user's Secret, or spec.alertmanagerConfiguration's object), sanitized
    for the version; None when it cannot be used (result.fatal says why)."""
    am_ns = obj_meta(alertmanager)[0]
    sanitizer = Sanitizer(version, am_warn, Fatal)
    try:
        if global_spec is None:
            text, result.extra_data = user_config(alertmanager, store)
            cfg = parse_base(text, f"Secret {am_ns}/{user_secret_name(alertmanager)} key {CONFIG_KEY}")
        else:
            cfg = _from_global(alertmanager, global_spec, candidates, store, version, result)
        sanitizer.config(cfg)
    except Fatal as exc:
        result.fatal = exc
        return None
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:
        result.fatal = Fatal("base configuration", f"malformed ({type(exc).__name__}: {exc}); check it with "
                             "`amtool check-config` or against the AlertmanagerConfig CRD")
        return None
    return cfg


@dataclass
class _Merged:
    """What the selected AlertmanagerConfigs add to the base configuration."""

    parts: list[dict[str, str]] = field(default_factory=list)  # per accepted object: part -> YAML text of its items
    routes: list = field(default_factory=list)
    receivers: list = field(default_factory=list)
    inhibit: list = field(default_factory=list)
    intervals: list = field(default_factory=list)


def _merge_selected(cfg: dict, candidates: Sequence[Mapping[str, Any]], store: Store, cache: AMRenderCache | None,
                    version: Any, am_ns: str, strategy: str, result: ConfigResult) -> _Merged:
    """Convert each selected AlertmanagerConfig (through `cache`), in name order; a rejected one is
    reported in result.rejected and leaves the others alone."""
    chosen = {(d.namespace, d.name) for d in result.selection if d.selected}
    ctx = ReceiverContext(cfg.get("global"))
    ctx_key = (version.parts, strategy, am_ns, ctx.global_has("smtp_smarthost"), ctx.global_has("smtp_from"))
    taken = {r["name"] for r in cfg.get("receivers") or []}
    merged = _Merged()
    keyed = [(k, c) for k, c in ((obj_meta(c), c) for c in candidates) if k in chosen]
    for key, amc in sorted(keyed, key=_first):
        entry = cache.get(key, object_key(amc), ctx_key, store) if cache is not None else None
        if entry is None:
            entry = _convert(amc, store, version, ctx, am_ns, strategy, ctx_key)
            if cache is not None:
                cache.put(key, entry)
        if entry.problem is None and entry.fragment is not None:
            clash = sorted(entry.receiver_names & taken) if not entry.receiver_names.isdisjoint(taken) else ()
            if clash:
                result.rejected.append(Problem("AlertmanagerConfig", key[0], key[1], "spec.receivers",
                                               f"receiver name {clash[0]!r} is already used by the base configuration"))
                continue
        if entry.problem is not None:
            result.rejected.append(entry.problem)
            continue
        frag = entry.fragment
        result.warnings += entry.warnings
        taken |= entry.receiver_names
        merged.inhibit += frag.inhibit_rules
        if frag.route is not None:
            merged.routes.append(frag.route)
            merged.receivers += frag.receivers
            merged.intervals += frag.mute_time_intervals
        result.assets.update(frag.assets)
        merged.parts.append(entry.texts)
    if cache is not None:
        cache.retain({obj_meta(c) for c in candidates})
    return merged


def _first(pair: tuple) -> Any:
    return pair[0]


def _convert(amc: Mapping[str, Any], store: Store, version: Version, ctx: ReceiverContext, am_ns: str,
             strategy: str, ctx_key: tuple) -> Entry:
    """Convert, sanitise and dump one AlertmanagerConfig (what the cache keeps)."""
    ns, name = obj_meta(amc)
    scope = _scope(store, "AlertmanagerConfig", amc, version)
    warnings: list[Problem] = []

    def warn(fld: str, message: str) -> None:
        warnings.append(Problem("AlertmanagerConfig", ns, name, fld, message))

    entry = Entry(object_key(amc), ctx_key, scope.reads)
    try:
        frag = amconfig.convert(amc, scope, ctx, am_ns, strategy)
        amconfig.sanitize_fragment(frag, Sanitizer(version, warn, Reject))
    except Reject as exc:
        entry.problem = Problem("AlertmanagerConfig", ns, name, exc.field, exc.message)
        return entry
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:
        # a value of the wrong shape somewhere (objects read from files skip the CRD schema): reject this
        # object, never the whole configuration
        entry.problem = Problem("AlertmanagerConfig", ns, name, "spec",
                                f"malformed object ({type(exc).__name__}: {exc}); check it against the CRD schema "
                                "(kubectl apply --dry-run=server would say which field)")
        return entry
    entry.fragment, entry.warnings = frag, warnings
    entry.receiver_names = frozenset(r["name"] for r in frag.receivers)
    entry.texts = {
        "routes": _dump_items([_ordered_route(frag.route, deep=False)] if frag.route is not None else [], nested=True),
        "receivers": _dump_items(frag.receivers if frag.route is not None else []),
        "inhibit_rules": _dump_items(frag.inhibit_rules),
        "mute_time_intervals": _dump_items(frag.mute_time_intervals if frag.route is not None else []),
    }
    return entry


def _dump(data: Any) -> str:
    """YAML text as the renderer writes it everywhere (promop.render.emit: block style, insertion order).

    A user's own alertmanager.yaml may hold values JSON has no type for (an unquoted date, `!!binary`):
    the emitter refuses those, and PyYAML, which wrote them when they were read, writes them back."""
    try:
        return emit(data)
    except TypeError:
        return yaml.safe_dump(data, default_flow_style=False, sort_keys=False, allow_unicode=True, width=1 << 16)


_NESTED_HEAD = "route:\n  routes:\n"


def _dump_items(items: list, nested: bool = False) -> str:
    """YAML block-sequence items (`- ...` lines), to concatenate under a top-level key, or under
    `route:`'s `routes:` when `nested` (emitted in place there, so no re-indenting pass)."""
    if not items:
        return ""
    if not nested:
        return _dump(list(items))
    text = _dump({"route": {"routes": list(items)}})
    if not text.startswith(_NESTED_HEAD):  # both emitters write block style with indentless sequences
        raise AssertionError(f"unexpected YAML layout: {text[:40]!r}")
    return text[len(_NESTED_HEAD):]


def _assemble(cfg: Mapping[str, Any], parts: list[dict[str, str]]) -> str:
    """The configuration text: the base's parts dumped now, each AlertmanagerConfig's parts from `parts`
    (the same document dump_config would give, as parsed YAML; tested)."""
    out = []
    if "global" in cfg:
        out.append(_dump({"global": cfg["global"]}))
    route = _ordered_route(cfg["route"])
    own_routes = route.pop("routes", None) or []
    out.append(_dump({"route": route}))
    # the parts go into `out` as they are: one join at the end copies the (megabytes of) text once
    added = [p["routes"] for p in parts if p["routes"]]
    if added or own_routes:
        out.append("  routes:\n")
        out += added
        out.append(_dump_items(own_routes, nested=True))
    for key in ("inhibit_rules", "receivers", "mute_time_intervals"):
        added = [p[key] for p in parts if p[key]]
        own = cfg.get(key) or []
        if added or own:
            out.append(f"{key}:\n" + _dump_items(own))
            out += added
    if cfg.get("time_intervals"):
        out.append(_dump({"time_intervals": cfg["time_intervals"]}))
    out.append(_dump({"templates": list(cfg.get("templates") or [])}))
    return "".join(out)


def _from_global(alertmanager: Mapping[str, Any], global_spec: Any, candidates: Sequence[Mapping[str, Any]],
                 store: Store, version: Version, result: ConfigResult) -> dict:
    """Mode 3: the global AlertmanagerConfig is the base (no namespace enforcement, names still prefixed)."""
    am_ns, _ = obj_meta(alertmanager)
    where = "spec.alertmanagerConfiguration"
    if not isinstance(global_spec, Mapping):
        raise Fatal(where, "must be a mapping")
    name = global_spec.get("name")
    if not name:
        raise Fatal(f"{where}.name", "names the AlertmanagerConfig that holds the base configuration; it is empty")
    amc = next((c for c in candidates if obj_meta(c) == (am_ns, name)), None)
    if amc is None:
        raise Fatal(f"{where}.name", f"AlertmanagerConfig {am_ns}/{name} not found; create it in the Alertmanager's namespace")
    cfg: dict = {}
    am_scope = _scope(store, "Alertmanager", alertmanager, version)
    if global_spec.get("global") is not None:
        try:
            cfg["global"] = convert_global(am_scope, global_spec["global"])
        except Reject as exc:
            raise Fatal(exc.field, exc.message) from None
    scope = _scope(store, "AlertmanagerConfig", amc, version)
    try:
        frag = amconfig.convert(amc, scope, ReceiverContext(cfg.get("global")), am_ns, is_global=True)
    except Reject as exc:
        raise Fatal(f"AlertmanagerConfig {am_ns}/{name} {exc.field}", exc.message) from None
    if frag.route is None:
        raise Fatal(f"AlertmanagerConfig {am_ns}/{name} spec.route", "the global AlertmanagerConfig needs a route")
    check_root_route(frag.route, f"AlertmanagerConfig {am_ns}/{name} spec.route")
    cfg["route"] = frag.route
    if frag.inhibit_rules:
        cfg["inhibit_rules"] = frag.inhibit_rules
    cfg["receivers"] = frag.receivers
    if frag.mute_time_intervals:
        cfg["mute_time_intervals"] = frag.mute_time_intervals
    templates = []
    for i, t in enumerate(global_spec.get("templates") or []):
        key = ((t.get("secret") or t.get("configMap") or {}) if isinstance(t, Mapping) else {}).get("key")
        if not key:
            raise Fatal(f"{where}.templates[{i}]", "needs a secret or configMap with a key")
        templates.append(f"{TEMPLATES_DIR}/{key}")
    cfg["templates"] = templates
    result.assets.update(am_scope.assets)
    result.assets.update(frag.assets)
    return cfg
