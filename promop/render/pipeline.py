"""render(): select, validate, generate, then build every object for one Prometheus.

Order: selection per kind -> per-monitor validation and jobs (a rejection never
stops the others) -> rule ConfigMaps -> config (rule_files from the padded rule
ConfigMap names, only if ruleSelector is set) -> config Secret and TLS asset
Secrets -> input hash -> StatefulSets and the governing Service.
"""

from __future__ import annotations

import json
from itertools import chain
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from promop.render.cache import RenderCache, object_key
from promop.render.config import compress_pieces, config_secret
from promop.render.generate import build_config, monitor_fragments, new_context
from promop.render.model import Decision, ObjectRef, Problem, RenderInputs, RenderResult, obj_meta
from promop.render.rules import RulesResult, build_rule_configmaps
from promop.render.schema_check import InvalidPrometheus, schema_problems
from promop.render.selection import SELECTOR_FIELDS, select
from promop.render.shape import sanitized_prometheus
from promop.render.service import build_service
from promop.render import topology, webconfig
from promop.render import fast_reload, split
from promop.render.statefulset import build_statefulsets, compute_input_hash, web_config_enabled
from promop.render.store import Reject, Scope, Store
from promop.render.thanos import sidecar as thanos_sidecar
from promop.render.tls_assets import tls_secrets
from promop.render.unsupported import unsupported_fields

# Upstream: with none of these set, the config Secret is left to the user ("unmanaged").
SCRAPE_SELECTORS = ("serviceMonitorSelector", "podMonitorSelector", "probeSelector", "scrapeConfigSelector")


def _selected(decisions: list[Decision], objs: Sequence[Mapping[str, Any]], cache: RenderCache | None = None,
              kind: str = "") -> list[Mapping[str, Any]]:
    if cache is not None:  # the incremental selection knows, without a set of every name
        known = cache.selection_index(kind).selected(objs)
        if known is not None:
            return known
    chosen = {(d.namespace, d.name) for d in decisions if d.selected}
    return [o for o in objs if obj_meta(o) in chosen]


def select_all(
    inputs: RenderInputs,
    warnings: list[Problem] | None = None,
    prometheus: dict | None = None,
    cache: RenderCache | None = None,
) -> dict[str, list[Decision]]:
    """Selection decisions for each kind a Prometheus selects (memoised in `cache` when given)."""
    prometheus = prometheus or inputs.prometheus
    namespaces = list(inputs.namespaces) or _inferred_namespaces(inputs)
    kinds = (
        ("ServiceMonitor", inputs.service_monitors),
        ("PodMonitor", inputs.pod_monitors),
        ("PrometheusRule", inputs.prometheus_rules),
        ("Probe", inputs.probes),
        ("ScrapeConfig", inputs.scrape_configs),
    )

    if cache is None:
        found: list[Problem] = []
        decisions = {kind: select(prometheus, objs, kind, namespaces, found) for kind, objs in kinds}
    else:
        cache.begin()  # every pass over the inputs starts here
        # Selection reads the Prometheus's identity and selector fields, the Namespace objects and
        # each candidate's namespace/name/labels: the first two are the basis of the incremental
        # selection (a change decides on everything again), the candidates it follows one by one.
        spec = prometheus.get("spec") or {}
        fields = {f: spec.get(f) for pair in SELECTOR_FIELDS.values() for f in pair}
        basis = (obj_meta(prometheus), json.dumps(fields, sort_keys=True, default=str),
                 tuple(object_key(n) for n in namespaces))
        decisions, found = {}, []
        for kind, objs in kinds:
            decisions[kind], kind_warnings = cache.selection_index(kind).update(basis, prometheus, objs, namespaces)
            found += kind_warnings
    if warnings is not None:
        warnings += found
    return decisions


def _inferred_namespaces(inputs: RenderInputs) -> list[dict]:
    kinds = (inputs.service_monitors, inputs.pod_monitors, inputs.prometheus_rules, inputs.probes, inputs.scrape_configs)
    names = {obj_meta(o)[0] for objs in kinds for o in objs}
    names.add(obj_meta(inputs.prometheus)[0])
    return [{"metadata": {"name": n}} for n in sorted(names)]


def render(inputs: RenderInputs, cache: RenderCache | None = None) -> RenderResult:
    """Every object one Prometheus needs. Pure: equal inputs give equal outputs, cache or not.

    Raises InvalidPrometheus (with every problem) when the Prometheus violates its CRD schema.
    """
    invalid = schema_problems("Prometheus", inputs.prometheus) or thanos_sidecar.problems(inputs.prometheus)
    if invalid:
        raise InvalidPrometheus(invalid)
    prometheus, malformed = sanitized_prometheus(inputs.prometheus)
    options = inputs.options
    spec = prometheus["spec"]
    prom_ns, prom_name = obj_meta(prometheus)
    warnings: list[Problem] = [Problem("Prometheus", prom_ns, prom_name, f, m) for f, m in malformed]
    warnings += unsupported_fields(prometheus)
    decisions = select_all(inputs, warnings, prometheus, cache)
    sms = _selected(decisions["ServiceMonitor"], inputs.service_monitors, cache, "ServiceMonitor")
    pms = _selected(decisions["PodMonitor"], inputs.pod_monitors, cache, "PodMonitor")
    rules = sorted(_selected(decisions["PrometheusRule"], inputs.prometheus_rules, cache, "PrometheusRule"), key=obj_meta)
    probes = _selected(decisions["Probe"], inputs.probes, cache, "Probe")
    scs = _selected(decisions["ScrapeConfig"], inputs.scrape_configs, cache, "ScrapeConfig")
    if cache is None:
        for obj in (*sms, *pms, *rules):
            warnings += unsupported_fields(dict(obj))
    else:  # per kind, so that each pass compares a list with its own last one (promop.render.listdiff)
        for kind, objs in (("ServiceMonitor", sms), ("PodMonitor", pms), ("PrometheusRule", rules)):
            warnings += chain.from_iterable(filter(None, cache.per_objects(("unsupported", kind), objs, _unsupported)))

    ctx, prom_scope = new_context(prometheus, options, Store(inputs.secrets, inputs.configmaps))
    web_tls = _web_tls(prometheus, prom_scope)
    fragments = monitor_fragments(ctx, sms, pms, cache, probes=probes, scrape_configs=scs)

    def build_rules() -> RulesResult:
        memo = cache.rule_files if cache is not None else None
        return build_rule_configmaps(prometheus, [dict(r) for r in rules], options, memo)

    rules_result = cache.rules(prometheus, rules, options, build_rules) if cache is not None else build_rules()
    rule_names = rules_result.names if spec.get("ruleSelector") is not None else None
    generated = build_config(ctx, prom_scope, fragments, rule_names, cache.config_memo if cache is not None else None)

    # --disable-unmanaged-prometheus-configuration: nil selectors then select nothing, the config is ours
    unmanaged = options.unmanaged_configuration and all(spec.get(s) is None for s in SCRAPE_SELECTORS)
    if unmanaged:
        warnings.append(Problem(
            "Prometheus", ctx.namespace, ctx.name, "spec.serviceMonitorSelector",
            "no serviceMonitorSelector, podMonitorSelector, probeSelector or scrapeConfigSelector is set: "
            "the config Secret is left to you (unmanaged); set serviceMonitorSelector: {} to let promop generate it",
        ))
    gz = None if unmanaged else (cache.compressed_pieces(generated.pieces, compress_pieces) if cache
                                 else compress_pieces(generated.pieces)[0])
    parts = split.plan(prometheus, generated, gz, options, inputs.config_parts,
                       cache.part_memo if cache is not None else None) if gz else None
    if parts is not None:
        gz = parts.main_gz
    secret = config_secret(prometheus, options, gz)
    tls = tls_secrets(prometheus, options, generated.assets)
    tls_names = [s["metadata"]["name"] for s in tls]
    cm_names = list(rules_result.names)
    input_hash = compute_input_hash(prometheus, options, cm_names, tls_names)
    if parts is not None:
        input_hash = split.input_hash(input_hash, parts.names)
    statefulsets = build_statefulsets(prometheus, options, cm_names, tls_names, input_hash)
    statefulsets = [webconfig.adapt_statefulset(s, spec, web_tls) for s in statefulsets]
    zones = topology.for_context(ctx)
    statefulsets = [topology.adapt_statefulset(s, shard, zones) for shard, s in enumerate(statefulsets)]
    fast = fast_reload.mode(prometheus, options).fast
    if parts is not None:
        statefulsets = [split.adapt_statefulset(s, parts.names, prom_ns, fast) for s in statefulsets]
    if fast:
        statefulsets = [fast_reload.adapt_statefulset(s, prometheus, cm_names) for s in statefulsets]
    result = RenderResult(
        config={} if unmanaged else (lambda: generated.config),  # decoded only when read
        config_secret=secret,
        tls_secrets=tls,
        rule_configmaps=rules_result.configmaps,
        service=build_service(prometheus, options),
        statefulsets=statefulsets,
        selection=[d for kind in ("ServiceMonitor", "PodMonitor", "PrometheusRule", "Probe", "ScrapeConfig")
                   for d in decisions[kind]],
        rejected=[*generated.rejected, *rules_result.rejected],
        warnings=[*warnings, *generated.warnings, *rules_result.warnings],
        jobs=generated.jobs,
        rule_files=dict(rules_result.rule_files),
        input_hash=input_hash,
        web_config_secret=webconfig.build_web_config_secret(prometheus, options, web_tls),
        config_text="" if unmanaged else parts.main_text if parts is not None else (lambda: generated.text),
        config_unmanaged=unmanaged,
        reloader_rbac=split.adapt_rbac(fast_reload.rbac_objects(prometheus, options, cm_names),
                                       parts.names if parts is not None else []) if fast else [],
        thanos_secret=thanos_sidecar.http_client_secret(prometheus, options),
        config_parts=parts.secrets if parts is not None else [],
        job_count=0 if unmanaged else generated.job_count,
    )
    return result


def served_web_tls(spec: Mapping[str, Any], scope: Scope) -> webconfig.TLSMounts | None:
    """spec.web.tlsConfig's section and volumes (a Prometheus or an agent); Reject for a bad reference. A version
    without web config files ignores spec.web's TLS and HTTP settings with a warning."""
    if not web_config_enabled(spec):
        for key in ("tlsConfig", "httpConfig"):
            if (spec.get("web") or {}).get(key) is not None:
                scope.warn(f"spec.web.{key}", "ignored: Prometheus reads a web config file only from v2.24.0; "
                                              "raise spec.version to serve it")
        return None
    return webconfig.prometheus_web_tls(scope, spec)


def _web_tls(prometheus: dict, scope: Scope) -> webconfig.TLSMounts | None:
    """served_web_tls; a bad reference stops this Prometheus (InvalidPrometheus), since a pod pointed at a
    missing certificate would never start."""
    try:
        return served_web_tls(prometheus.get("spec") or {}, scope)
    except Reject as exc:
        ns, name = obj_meta(prometheus)
        raise InvalidPrometheus([Problem("Prometheus", ns, name, exc.field, exc.message)]) from None


_SECRET_REF_KEYS = frozenset({
    "secret", "keySecret", "bearerTokenSecret", "credentials", "username", "password", "clientSecret",
    "additionalScrapeConfigs", "additionalAlertRelabelConfigs", "additionalAlertManagerConfigs",
})
# ScrapeConfig service discoveries' Secret-backed fields (promop/render/scrapeconfig/sd.py SECRET_FIELDS)
_SECRET_REF_KEYS |= {"tokenRef", "accessKey", "secretKey", "applicationSecret", "consumerKey",
                     "applicationCredentialSecret"}


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _walk_refs(value: Any, namespace: str, out: set[ObjectRef], key: str = "") -> None:
    if type(value) is dict or isinstance(value, Mapping):
        if key in _SECRET_REF_KEYS and isinstance(value.get("name"), str) and "key" in value:
            out.add(ObjectRef("Secret", namespace, value["name"]))
            return
        if key == "configMap" and isinstance(value.get("name"), str) and "key" in value:
            out.add(ObjectRef("ConfigMap", namespace, value["name"]))
            return
        if key == "proxyConnectHeader":  # {header: [SecretKeySelector, ...]}
            for selectors in value.values():
                for sel in selectors if isinstance(selectors, list) else ():
                    _walk_refs(sel, namespace, out, "secret")
            return
        for k, v in value.items():
            if type(v) not in _LEAVES:  # scalars hold no reference: no call for them (most fields)
                _walk_refs(v, namespace, out, k)
    elif isinstance(value, list):
        for item in value:
            if type(item) not in _LEAVES:
                _walk_refs(item, namespace, out, key)


def _unsupported(obj: Mapping[str, Any]) -> list[Problem]:
    return unsupported_fields(dict(obj))


def _object_refs(obj: Mapping[str, Any]) -> frozenset[ObjectRef]:
    out: set[ObjectRef] = set()
    _walk_refs(obj.get("spec") or {}, obj_meta(obj)[0], out)
    return frozenset(out)


def references(inputs: RenderInputs, cache: RenderCache | None = None) -> set[ObjectRef]:
    """Secrets and ConfigMaps a render of `inputs` may read: fetch these into inputs.secrets/configmaps.

    Covers the Prometheus itself and the monitors it selects (references are
    resolved in each object's own namespace). With the RenderCache the next
    render() will use, the selection and each unchanged monitor's references
    are memoised, so a sync does not walk every monitor again; the result is
    the same with or without the cache.
    """
    out: set[ObjectRef] = set()
    prometheus, _ = sanitized_prometheus(inputs.prometheus)
    prom_ns, _ = obj_meta(prometheus)
    _walk_refs(prometheus["spec"], prom_ns, out)
    decisions = select_all(inputs, None, prometheus, cache)
    scrape_objects = [("ServiceMonitor", inputs.service_monitors), ("PodMonitor", inputs.pod_monitors)]
    scrape_objects += [("Probe", inputs.probes), ("ScrapeConfig", inputs.scrape_configs)]
    for kind, objs in scrape_objects:
        chosen = _selected(decisions[kind], objs, cache, kind)
        found = cache.per_objects(("references", kind), chosen, _object_refs) if cache is not None \
            else map(_object_refs, chosen)
        out.update(*filter(None, found))
    return out
