"""Config generation from monitors taken as given (no selection): upstream's GenerateServerConfiguration.

`generate_config` is what the conformance tests call; `render()` (pipeline.py)
selects, then calls the same pieces. Each monitor becomes a Fragment: its jobs
(also as YAML text), its problems, TLS assets and the Secret keys it read.
"""

from __future__ import annotations

import functools
from itertools import chain
from dataclasses import dataclass, field
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import yaml

from promop.render import assembly, auth, topology
from promop.render.additional import additional_scrape_configs
from promop.render.alerting import alerting_section
from promop.render.config import Piece, cut_pieces, dump_job, rule_files, text_of
from promop.render.context import GenContext
from promop.render.globals import global_section, runtime_section, storage_section
from promop.render.model import Problem, RenderOptions, lazy_field, obj_meta
from promop.render.otlp import otlp_section
from promop.render.podmonitor import pod_monitor_jobs
from promop.render.probe import probe_jobs, validate_probe
from promop.render.remote_write import remote_read_section, remote_write_section
from promop.render.schema_check import InvalidPrometheus, merge_problems, schema_problems
from promop.render.scrape import service_monitor_jobs
from promop.render.scrapeconfig import scrape_config_jobs
from promop.render.scrapeconfig.validate import validate_scrape_config
from promop.render.shape import sanitized_prometheus
from promop.render.store import Reject, Scope, Store
from promop.render.tls_assets import tls_config
from promop.render.tracing import tracing_section
from promop.render.validate_monitor import validate_monitor

class FragmentCache(Protocol):
    """What rendering needs of a cache (promop.render.cache.RenderCache): a monitor's fragment, reused
    while what it read is unchanged. A protocol, so that the cache may import this module and not back."""

    def fragment(self, ctx: GenContext, monitor_key: str, kind: str, obj: Mapping[str, Any]) -> "Fragment": ...


_GENERATORS = {"ServiceMonitor": service_monitor_jobs, "PodMonitor": pod_monitor_jobs}
_GENERATORS["Probe"] = probe_jobs
_GENERATORS["ScrapeConfig"] = scrape_config_jobs
_VALIDATORS = {"Probe": validate_probe, "ScrapeConfig": validate_scrape_config}  # kinds not checked by validate_monitor


@dataclass
class Fragment:
    """What one monitor contributes. Treat as immutable: RenderCache shares it between renders."""

    kind: str
    namespace: str
    name: str
    jobs: list[dict] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    rejected: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    assets: dict[str, str] = field(default_factory=dict)
    reads: dict[tuple[str, str, str, str], str | None] = field(default_factory=dict)

    # What build_config takes of an accepted fragment on every render, computed once (a cached
    # fragment is reused by every render until its monitor changes). Shared: treat as read-only.
    @functools.cached_property
    def identity(self) -> tuple[str, str, str]:
        return self.kind, self.namespace, self.name

    @functools.cached_property
    def job_names(self) -> list[str]:
        return [j["job_name"] for j in self.jobs]

    @functools.cached_property
    def group(self) -> tuple[str, list[str]]:
        return f"{self.kind}/{self.namespace}/{self.name}", list(self.texts)

    def drop_jobs(self) -> None:
        """Keep the jobs as their YAML text only (decoded again if read): the operator's render cache
        holds one fragment per monitor, and the decoded jobs were most of its memory."""
        if self.__dict__.get("_jobs_value"):  # a list, or the callable that makes it: not called here
            self.job_names, self.group  # noqa: B018 - computed from the jobs while they are here
            self.jobs = functools.partial(_decode_jobs, tuple(self.texts))


def _unshared(value: Any) -> Any:
    """`value` with every dict and list copied, emit.Frozen ones as plain dicts: a render's config
    holds no object twice (yaml.safe_dump would write anchors), and a reader may change it."""
    if isinstance(value, dict):
        return {k: _unshared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshared(v) for v in value]
    return value


def _decode_jobs(texts: Sequence[str]) -> list[dict]:
    """Jobs from their texts (promop.render.emit's YAML loads back to exactly the data it was given)."""
    return yaml.load("".join(texts), Loader=_LOADER) or []


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
decode_jobs = _decode_jobs  # for fragments rendered elsewhere (promop.operator.render_pool)
lazy_field(Fragment, "jobs")


@dataclass
class ConfigResult:
    """The generated config (dict and YAML text) and what went into it."""

    config: dict
    text: str
    jobs: dict[tuple[str, str, str], list[str]]
    rejected: list[Problem]
    warnings: list[Problem]
    assets: dict[str, str]
    # for the split past one Secret (promop.render.split): the sections around the jobs, and the
    # jobs grouped by what moves together ((group key, job texts): a monitor's, or one additional job)
    head: dict = field(default_factory=dict)
    tail: dict = field(default_factory=dict)
    groups: list[tuple[str, list[str]]] = field(default_factory=list)
    # the text cut into stable pieces (promop.render.config.pieces): what the config is gzipped from
    pieces: list[Piece] = field(default_factory=list)
    job_count: int = 0


lazy_field(ConfigResult, "text")  # `text` and `config` may be given as callables (computed when first read)
lazy_field(ConfigResult, "config")


INTERNAL_ERROR = "promop could not process this object (a promop bug, please report it)"


def monitor_fragment(ctx: GenContext, kind: str, obj: Mapping[str, Any]) -> Fragment:
    """Validate and generate one ServiceMonitor/PodMonitor; never raises for bad input.

    An unexpected exception rejects this object only, so one object that hits
    a bug cannot stop every other one from rendering.
    """
    try:
        return _monitor_fragment(ctx, kind, obj)
    except Exception as e:  # noqa: BLE001 - isolate the failure to this object
        ns, name = obj_meta(obj)
        return Fragment(kind, ns, name, rejected=[Problem(kind, ns, name, "spec", f"{INTERNAL_ERROR}: {type(e).__name__}: {e}")])


def _monitor_fragment(ctx: GenContext, kind: str, obj: Mapping[str, Any]) -> Fragment:
    ns, name = obj_meta(obj)
    frag = Fragment(kind, ns, name)
    frag.rejected = merge_problems(_VALIDATORS.get(kind, validate_monitor)(ctx, kind, obj), schema_problems(kind, obj))
    if frag.rejected:
        return frag
    scope = Scope(ctx.store, kind, ns, name, ctx.version)
    try:
        jobs = _GENERATORS[kind](ctx, obj, scope)
    except Reject as e:
        frag.rejected = [Problem(kind, ns, name, e.field, e.message)]
        frag.reads = scope.reads
        return frag
    frag.texts = [dump_job(j) for j in jobs]
    frag.job_names = [j["job_name"] for j in jobs]
    # the jobs share rule objects with every other job (emit.Frozen): read, they are plain copies
    frag.jobs = functools.partial(_unshared, jobs)
    frag.warnings = scope.warnings
    frag.assets = scope.assets
    frag.reads = scope.reads
    return frag


def apiserver_sd(ctx: GenContext, scope: Scope) -> dict:
    """kubernetes_sd_configs keys from spec.apiserverConfig (credentials in the Prometheus's namespace)."""
    cfg = ctx.spec.get("apiserverConfig")
    if not cfg:
        return {}
    field = "spec.apiserverConfig"
    out: dict = {"api_server": cfg.get("host")}
    try:
        if cfg.get("basicAuth"):
            out["basic_auth"] = auth.basic_auth(scope, cfg["basicAuth"], f"{field}.basicAuth")
        if cfg.get("bearerToken"):
            out["bearer_token"] = cfg["bearerToken"]
        if cfg.get("bearerTokenFile"):
            out["bearer_token_file"] = cfg["bearerTokenFile"]
        if cfg.get("authorization"):
            out["authorization"] = auth.authorization(scope, cfg["authorization"], f"{field}.authorization")
        if cfg.get("tlsConfig"):
            out["tls_config"] = tls_config(scope, cfg["tlsConfig"], f"{field}.tlsConfig")
    except Reject as e:
        scope.warn(e.field, f"{e.message}; apiserverConfig credentials ignored")
        return {"api_server": cfg.get("host")}
    return out


def new_context(prometheus: Mapping[str, Any], options: RenderOptions, store: Store) -> tuple[GenContext, Scope]:
    """The generation context plus the Scope for reads made on behalf of the Prometheus itself."""
    ctx = GenContext(prometheus, options, store)
    scope = Scope(store, "Prometheus", ctx.namespace, ctx.name, ctx.version)
    defaults = [c.get("name") for c in ctx.scrape_classes.values() if c.get("default")]
    if len(defaults) > 1:
        scope.warn("spec.scrapeClasses", f"several scrape classes are marked default ({', '.join(defaults)}); "
                   f"using {defaults[0]!r}: mark only one")
    ctx.apiserver_sd = apiserver_sd(ctx, scope)
    _check_topology(ctx, scope)
    return ctx, scope


def _check_topology(ctx: GenContext, scope: Scope) -> None:
    """Refuse a topology strategy with fewer shards than zones; warn when one is asked for but ignored."""
    try:
        topology.of(ctx.spec, ctx.options)
    except topology.TopologyError as exc:
        raise InvalidPrometheus([Problem("Prometheus", ctx.namespace, ctx.name, "spec.shards", str(exc))]) from None
    reason = topology.ignored_reason(ctx.spec, ctx.options)
    if reason:
        scope.warn("spec.shardingStrategy", reason)


def build_config(
    ctx: GenContext,
    prom_scope: Scope,
    fragments: Sequence[Fragment],
    rule_configmap_names: Sequence[str] | None,
    memo: ConfigMemo | None = None,
) -> ConfigResult:
    """Assemble the config from monitor fragments (already in upstream order) and the Prometheus spec.
    `memo` (the render cache's) lets an edit patch the last assembly instead of redoing it."""
    head: dict = {"global": global_section(ctx, prom_scope)}
    runtime = runtime_section(ctx, prom_scope)
    if runtime:
        head["runtime"] = runtime
    if rule_configmap_names is not None:
        head["rule_files"] = rule_files(rule_configmap_names)
    done = assembly.assemble(fragments, memo.assembled if memo is not None else None)
    if memo is not None:
        memo.assembled = done
    groups = done.groups
    warnings = list(done.warnings)
    assets = dict(done.assets)
    extra = additional_scrape_configs(ctx, prom_scope, set(done.taken))
    if extra:
        extra_texts = [dump_job(j) for j in extra]
        groups = [*groups, *((f"additional/{j['job_name']}", [t]) for j, t in zip(extra, extra_texts))]
    tail: dict = {}
    storage = storage_section(ctx, prom_scope)
    if storage:
        tail["storage"] = storage
    alerting = alerting_section(ctx, prom_scope)
    if alerting:
        tail["alerting"] = alerting
    remote_write = remote_write_section(ctx, prom_scope)
    if remote_write:
        tail["remote_write"] = remote_write
    remote_read = remote_read_section(ctx, prom_scope)
    if remote_read:
        tail["remote_read"] = remote_read
    tail.update(otlp_section(ctx, prom_scope) | tracing_section(ctx, prom_scope))  # upstream: otlp, then tracing
    assets.update(prom_scope.assets)
    warnings += prom_scope.warnings
    cut = cut_pieces(head, groups, tail, memo.pieces if memo is not None else None)
    if memo is not None:
        memo.pieces = cut
    config_pieces, accepted = cut.pieces, done.frags

    def config() -> dict:  # the jobs decoded: only when read (never by the operator)
        jobs = list(chain.from_iterable(f.jobs for f in accepted if not f.rejected))
        return {**head, "scrape_configs": jobs + extra, **tail}

    return ConfigResult(config, lambda: text_of(config_pieces), done.job_names, list(done.rejected), warnings,
                        assets, head=head, tail=tail, groups=groups, pieces=config_pieces,
                        job_count=done.job_count + len(extra))


class ConfigMemo:
    """What build_config may patch on the next render (promop.render.assembly); the render cache keeps one."""

    def __init__(self) -> None:
        self.assembled: assembly.Assembled | None = None
        self.pieces: assembly.Pieces | None = None


def sort_key(obj: Mapping[str, Any]) -> str:
    """Upstream orders monitors by their map key `<namespace>/<name>`."""
    ns, name = obj_meta(obj)
    return f"{ns}/{name}"


def generate_config(
    prometheus: Mapping[str, Any],
    service_monitors: Sequence[Mapping[str, Any]] = (),
    pod_monitors: Sequence[Mapping[str, Any]] = (),
    *,
    secrets: Mapping[tuple[str, str], dict] | None = None,
    configmaps: Mapping[tuple[str, str], dict] | None = None,
    options: RenderOptions | None = None,
    rule_configmap_names: Sequence[str] | None = None,
    cache: "FragmentCache | None" = None,
    probes: Sequence[Mapping[str, Any]] = (),
    scrape_configs: Sequence[Mapping[str, Any]] = (),
) -> ConfigResult:
    """The Prometheus config for monitors taken as given, with no selection step.

    Invalid monitors are left out and reported in `rejected`.
    """
    options = options or RenderOptions()
    invalid = schema_problems("Prometheus", prometheus)
    if invalid:
        raise InvalidPrometheus(invalid)
    prometheus, malformed = sanitized_prometheus(prometheus)
    ctx, prom_scope = new_context(prometheus, options, Store(secrets, configmaps))
    for f, m in malformed:
        prom_scope.warn(f, m)
    if hasattr(cache, "begin"):
        cache.begin()
    fragments = monitor_fragments(ctx, service_monitors, pod_monitors, cache, probes=probes, scrape_configs=scrape_configs)
    return build_config(ctx, prom_scope, fragments, rule_configmap_names)


def monitor_fragments(
    ctx: GenContext,
    service_monitors: Sequence[Mapping[str, Any]],
    pod_monitors: Sequence[Mapping[str, Any]],
    cache: "FragmentCache | None",
    probes: Sequence[Mapping[str, Any]] = (),
    scrape_configs: Sequence[Mapping[str, Any]] = (),
) -> list[Fragment]:
    """Fragments for ServiceMonitors, PodMonitors, Probes, then ScrapeConfigs (upstream's order), each sorted by `<ns>/<name>`."""
    out = []
    monitor_key = ctx.monitor_key() if cache is not None else ""
    kinds: list[tuple[str, Sequence[Mapping[str, Any]]]] = [("ServiceMonitor", service_monitors), ("PodMonitor", pod_monitors)]
    kinds.append(("Probe", probes))
    kinds.append(("ScrapeConfig", scrape_configs))
    many = getattr(cache, "sorted_fragments", None)  # RenderCache: the whole list, patched after an edit
    for kind, objs in kinds:
        if many is not None:
            out += many(ctx, monitor_key, kind, objs)
            continue
        for obj in sorted(objs, key=sort_key):
            if cache is None:
                out.append(monitor_fragment(ctx, kind, obj))
            else:
                out.append(cache.fragment(ctx, monitor_key, kind, obj))
    return out

