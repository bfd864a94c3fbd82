"""render_agent(): select, generate, then build every object for one PrometheusAgent.

The same steps as render() for a Prometheus (render/pipeline.py), reusing its selection,
monitor fragments, cache, config/TLS Secrets and input hash; the differences are the agent's
config (config.py), its mode (modes.py) and its workload (workload.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promop.render import topology, webconfig
from promop.render.agent.config import KIND, InvalidAgent, agent_context, build_agent_config
from promop.render.agent.modes import is_daemonset, mode_problems
from promop.render.agent.workload import (build_agent_daemonset, build_agent_service, build_agent_statefulsets,
                                          conflicting_agent_args)
from promop.render.cache import RenderCache
from promop.render.config import compress, config_secret
from promop.render.context import GenContext
from promop.render.generate import monitor_fragments
from promop.render.model import MONITORING_GROUP, Problem, RenderInputs, RenderOptions, RenderResult, obj_meta
from promop.render.model import Decision
from promop.render.pipeline import SCRAPE_SELECTORS, select_all, served_web_tls
from promop.render.schema_check import InvalidPrometheus
from promop.render.service import build_service
from promop.render.shape import sanitized_prometheus
from promop.render.statefulset import compute_input_hash
from promop.render.store import Reject, Scope, Store
from promop.render.tls_assets import tls_secrets
from promop.render.unsupported import unsupported_fields
from promop.schema import SchemaNotFound, crd_schema, validate

API_VERSION = "v1alpha1"


@dataclass
class AgentRenderResult(RenderResult):
    """A RenderResult whose workload is either `statefulsets` (and the governing `service`) or `daemonsets`."""

    daemonsets: list[dict] = field(default_factory=list)

    def objects(self) -> list[dict]:
        return [
            self.config_secret,
            *self.tls_secrets,
            *([self.web_config_secret] if self.web_config_secret else []),
            *([self.service] if self.service else []),
            *self.statefulsets,
            *self.daemonsets,
        ]


def _selected(decisions: list[Decision], objs) -> list:
    chosen = {(d.namespace, d.name) for d in decisions if d.selected}
    return [o for o in objs if obj_meta(o) in chosen]


# Kinds the job pipeline may also generate (Probe, ScrapeConfig): (kind, RenderInputs attribute,
# monitor_fragments keyword). Used when select_all() decides on them, so the agent gets every kind a
# Prometheus gets; DaemonSet mode takes PodMonitors only (upstream).
OTHER_SCRAPE_KINDS = (("Probe", "probes", "probes"), ("ScrapeConfig", "scrape_configs", "scrape_configs"))


def _other_scrape_kinds(inputs: RenderInputs, decisions: dict, daemonset: bool) -> dict:
    out: dict = {}
    for kind, attr, keyword in OTHER_SCRAPE_KINDS:
        if kind in decisions and hasattr(inputs, attr) and not daemonset:
            out[keyword] = _selected(decisions[kind], getattr(inputs, attr))
    return out


def schema_problems(agent: dict) -> list[str]:
    """What the apiserver would refuse in this PrometheusAgent (its CRD schema and rules)."""
    try:
        schema = crd_schema(KIND, API_VERSION, MONITORING_GROUP)
    except SchemaNotFound:
        return []
    return [f"{v.path or '(object)'}: {v.message}" for v in validate(dict(agent), schema)]


def _check(agent: dict, inputs: RenderInputs) -> None:
    problems = schema_problems(agent)
    problems += [f"{f}: {m}" for f, m in mode_problems(agent, inputs.options.feature_gates)
                 if not any(m in p for p in problems)]
    if problems:
        raise InvalidAgent("; ".join(problems))


def _web_tls(agent: dict, scope: Scope) -> webconfig.TLSMounts | None:
    """As for a Prometheus (served_web_tls); a bad reference stops this agent (its pod could never start)."""
    try:
        return served_web_tls(agent.get("spec") or {}, scope)
    except Reject as exc:
        raise InvalidAgent(f"{exc.field}: {exc.message}") from None


def _statefulsets(agent: dict, ctx: GenContext, options: RenderOptions, tls_names: list[str], input_hash: str,
                  web_tls: webconfig.TLSMounts | None) -> list[dict]:
    """The StatefulSets with the web TLS (HTTPS probes and reloads) and, under topology sharding, each
    shard's zone (nodeSelector, and the TOPOLOGY_ZONE / INZONE_SHARD the reloaders put into the config)."""
    spec = agent.get("spec") or {}
    zones = topology.for_context(ctx)
    return [topology.adapt_statefulset(webconfig.adapt_statefulset(s, spec, web_tls), shard, zones)
            for shard, s in enumerate(build_agent_statefulsets(agent, options, tls_names, input_hash))]


def render_agent(inputs: RenderInputs, cache: RenderCache | None = None) -> AgentRenderResult:
    """Every object one PrometheusAgent (in inputs.prometheus) needs. Pure, like render().

    Raises InvalidAgent (one line, every problem) when the agent violates its CRD or its mode's rules.
    """
    raw = {**inputs.prometheus, "kind": KIND}
    _check(raw, inputs)
    agent, malformed = sanitized_prometheus(raw)
    options = inputs.options
    spec = agent["spec"]
    ns, name = obj_meta(agent)
    daemonset = is_daemonset(agent)
    warnings = [Problem(KIND, ns, name, f, m) for f, m in malformed]
    warnings += unsupported_fields(agent)
    warnings += [Problem(KIND, ns, name, "spec.additionalArgs", f"--{arg.lstrip('-')} is managed by the operator; "
                         "this additional argument is ignored") for arg in conflicting_agent_args(spec)]
    decisions = select_all(inputs, warnings, agent, cache)
    sms = [] if daemonset else _selected(decisions["ServiceMonitor"], inputs.service_monitors)
    pms = _selected(decisions["PodMonitor"], inputs.pod_monitors)
    try:
        ctx, scope = agent_context(agent, options, Store(inputs.secrets, inputs.configmaps), daemonset)
    except InvalidPrometheus as exc:  # e.g. fewer shards than topology zones: the agent's own error type
        raise InvalidAgent(str(exc)) from None
    web_tls = _web_tls(agent, scope)
    extra = _other_scrape_kinds(inputs, decisions, daemonset)
    generated = build_agent_config(ctx, scope, monitor_fragments(ctx, sms, pms, cache, **extra))
    unmanaged = all(spec.get(s) is None for s in SCRAPE_SELECTORS)
    if unmanaged:
        warnings.append(Problem(KIND, ns, name, "spec.podMonitorSelector",
                                "no serviceMonitorSelector, podMonitorSelector, probeSelector or scrapeConfigSelector "
                                "is set: the config Secret is left to you (unmanaged); set podMonitorSelector: {} "
                                "to let promop generate it"))
    gz = None if unmanaged else compress(generated.text)
    tls = tls_secrets(agent, options, generated.assets)
    tls_names = [s["metadata"]["name"] for s in tls]
    input_hash = compute_input_hash(agent, options, [], tls_names)
    statefulsets = [] if daemonset else _statefulsets(agent, ctx, options, tls_names, input_hash, web_tls)
    kinds = ("ServiceMonitor", "PodMonitor", *(k for k, _, _ in OTHER_SCRAPE_KINDS if k in decisions and not daemonset))
    return AgentRenderResult(
        config={} if unmanaged else generated.config,
        config_secret=config_secret(agent, options, gz),
        tls_secrets=tls,
        rule_configmaps=[],
        service=None if daemonset else build_agent_service(agent, options, build_service(agent, options)),
        statefulsets=statefulsets,
        selection=[d for kind in kinds for d in decisions[kind] if not (daemonset and kind == "ServiceMonitor")],
        rejected=list(generated.rejected),
        warnings=[*warnings, *generated.warnings],
        jobs=generated.jobs,
        input_hash=input_hash,
        web_config_secret=webconfig.build_web_config_secret(agent, options, web_tls),
        config_text="" if unmanaged else generated.text,
        config_unmanaged=unmanaged,
        daemonsets=[webconfig.adapt_statefulset(build_agent_daemonset(agent, options, tls_names), spec, web_tls)]
        if daemonset else [],
    )
