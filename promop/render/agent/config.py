"""The agent's Prometheus config: upstream's GenerateAgentConfiguration.

Only `global` (no evaluation settings), `runtime`, `scrape_configs`, `storage.tsdb`
(with the agent's own version gates) and `remote_write`: an agent evaluates no rules
and sends no alerts. Jobs come from the same monitor fragments as a Prometheus's, so
every kind the pipeline generates (ServiceMonitor, PodMonitor, and Probe/ScrapeConfig
once they are fed through it) reaches the agent too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from promop.featuregates import AGENT_DAEMONSET
from promop.render import tsdb
from promop.render.additional import additional_scrape_configs
from promop.render.config import assemble, dump_job
from promop.render.context import GenContext
from promop.render.generate import ConfigResult, Fragment, monitor_fragments, new_context
from promop.render.globals import global_section, runtime_section
from promop.render.model import Problem, RenderOptions, obj_meta
from promop.render.remote_write import remote_write_section
from promop.render.shape import sanitized_prometheus
from promop.render.store import Scope, Store

KIND = "PrometheusAgent"
API_VERSION = "monitoring.coreos.com/v1alpha1"
AGENT_GATE = AGENT_DAEMONSET
# Server-only global keys: an agent has no rule evaluation and no query engine.
_SERVER_GLOBALS = ("evaluation_interval", "rule_query_offset", "query_log_file")
# The out-of-order window in agent mode (upstream's gate; the other spec.tsdb gates are the server's).
OUT_OF_ORDER_SINCE = "2.54.0"


class InvalidAgent(ValueError):
    """The PrometheusAgent cannot be rendered (the message says which field and why)."""


def agent_storage(ctx: GenContext, scope: Scope) -> dict | None:
    """storage.tsdb for an agent: the server's settings and gates (promop/render/tsdb.py), except the
    out-of-order window, which agent mode reads from 2.54."""
    settings = tsdb.tsdb_settings(ctx.spec, scope, out_of_order_since=OUT_OF_ORDER_SINCE)
    return {"tsdb": settings} if settings else None


def agent_context(agent: Mapping[str, Any], options: RenderOptions, store: Store,
                  daemonset: bool) -> tuple[GenContext, Scope]:
    """The generation context of an agent (in DaemonSet mode: node-local pods, no sharding)."""
    problems = [f"{field}: {why}" for field, why in tsdb.tsdb_problems(agent.get("spec") or {})]
    if problems:
        raise InvalidAgent("; ".join(problems))
    ctx, scope = new_context(agent, options, store)
    ctx.daemonset = daemonset
    return ctx, scope


def build_agent_config(ctx: GenContext, scope: Scope, fragments: Sequence[Fragment]) -> ConfigResult:
    """Assemble the agent config from monitor fragments (already in upstream order)."""
    global_ = {k: v for k, v in global_section(ctx, scope).items() if k not in _SERVER_GLOBALS}
    head: dict = {"global": global_}
    runtime = runtime_section(ctx, scope)
    if runtime:
        head["runtime"] = runtime
    jobs: list[dict] = []
    texts: list[str] = []
    job_names: dict[tuple[str, str, str], list[str]] = {}
    rejected: list[Problem] = []
    warnings: list[Problem] = []
    assets: dict[str, str] = {}
    for frag in fragments:
        rejected += frag.rejected
        warnings += frag.warnings
        if frag.rejected:
            continue
        jobs += frag.jobs
        texts += frag.texts
        assets.update(frag.assets)
        job_names[(frag.kind, frag.namespace, frag.name)] = [j["job_name"] for j in frag.jobs]
    if not ctx.daemonset:  # upstream's CRD refuses additionalScrapeConfigs in DaemonSet mode
        extra = additional_scrape_configs(ctx, scope, {j["job_name"] for j in jobs})
        jobs += extra
        texts += [dump_job(j) for j in extra]
    tail: dict = {}
    storage = agent_storage(ctx, scope)
    if storage:
        tail["storage"] = storage
    remote_write = remote_write_section(ctx, scope)
    if remote_write:
        tail["remote_write"] = remote_write
    else:
        scope.warn("spec.remoteWrite", "no remoteWrite is set: an agent keeps no data and sends its samples "
                   "nowhere; add a remoteWrite endpoint")
    assets.update(scope.assets)
    warnings += scope.warnings
    config = {**head, "scrape_configs": jobs, **tail}
    return ConfigResult(config, assemble(head, texts, tail), job_names, rejected, warnings, assets)


def generate_agent_config(
    agent: Mapping[str, Any],
    service_monitors: Sequence[Mapping[str, Any]] = (),
    pod_monitors: Sequence[Mapping[str, Any]] = (),
    *,
    secrets: Mapping[tuple[str, str], dict] | None = None,
    configmaps: Mapping[tuple[str, str], dict] | None = None,
    options: RenderOptions | None = None,
    daemonset: bool = False,
) -> ConfigResult:
    """The agent config for monitors taken as given (no selection): what the conformance tests call.

    In DaemonSet mode only PodMonitors are used, as upstream. Raises InvalidAgent for a bad spec.tsdb.
    """
    options = options or RenderOptions()
    agent, malformed = sanitized_prometheus(agent)
    ctx, scope = agent_context(agent, options, Store(secrets, configmaps), daemonset)
    for f, m in malformed:
        scope.warn(f, m)
    fragments = monitor_fragments(ctx, () if daemonset else service_monitors, pod_monitors, None)
    return build_agent_config(ctx, scope, fragments)


def agent_identity(agent: Mapping[str, Any]) -> str:
    ns, name = obj_meta(agent)
    return f"{KIND} {ns}/{name}"
