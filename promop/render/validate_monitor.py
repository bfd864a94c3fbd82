"""Static checks of a ServiceMonitor or PodMonitor: everything Prometheus would refuse.

Each problem rejects only the monitor it is found in; the message says what to
change. Checks that need referenced Secrets happen during generation (Reject).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.labelselector import SelectorError, parse_selector
from promop.render import relabel
from promop.render.auth import set_auth_fields
from promop.render.context import GenContext
from promop.duration import DurationError, parse_duration, parse_size
from promop.render.model import Problem, obj_meta
from promop.render.shape import MONITOR_SPEC, shape_problems

ENDPOINTS_FIELD = {"ServiceMonitor": "endpoints", "PodMonitor": "podMetricsEndpoints"}
_INT_LIMITS = (
    "sampleLimit", "targetLimit", "labelLimit", "labelNameLengthLimit", "labelValueLengthLimit",
    "keepDroppedTargets", "nativeHistogramBucketLimit",
)


def validate_monitor(ctx: GenContext, kind: str, obj: Mapping[str, Any]) -> list[Problem]:
    """Every problem found in a ServiceMonitor/PodMonitor (empty when it is valid)."""
    ns, name = obj_meta(obj)
    problems: list[Problem] = []

    def bad(field: str, message: str) -> None:
        problems.append(Problem(kind, ns, name, field, message))

    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        bad("spec", "must be a mapping")
        return problems
    enforced = ctx.spec.get("enforcedNamespaceLabel")
    if enforced and not relabel.valid_label_name(enforced, ctx.version):
        # Dropping the label would let tenants spoof namespaces; keeping it would make Prometheus
        # refuse the whole config. So nothing is scraped until the Prometheus is fixed.
        bad("spec", f"the Prometheus spec.enforcedNamespaceLabel {enforced!r} is not a valid label name for "
                    f"Prometheus {ctx.version}; fix the Prometheus")
        return problems
    shapes = shape_problems(spec, MONITOR_SPEC, "spec")
    if shapes:  # deeper checks assume the right types
        for field, message in shapes:
            bad(field, message)
        return problems
    try:
        parse_selector(spec.get("selector") or {}, "spec.selector")
    except SelectorError as e:
        bad("spec.selector", str(e))
    mechanism = spec.get("selectorMechanism")
    if mechanism not in (None, "RelabelConfig", "RoleSelector"):
        bad("spec.selectorMechanism", f"{mechanism!r} is not valid; use RelabelConfig or RoleSelector")
    elif mechanism == "RoleSelector" and not ctx.version.at_least("2.17.0"):
        bad("spec.selectorMechanism", f"RoleSelector needs Prometheus >= 2.17.0, but spec.version is {ctx.version}")
    if kind == "ServiceMonitor" and spec.get("serviceDiscoveryRole") not in (None, "Endpoints", "EndpointSlice"):
        bad("spec.serviceDiscoveryRole", f"{spec['serviceDiscoveryRole']!r} is not valid; use Endpoints or EndpointSlice")
    if spec.get("scrapeClass") and spec["scrapeClass"] not in ctx.scrape_classes:
        known = ", ".join(sorted(n for n in ctx.scrape_classes if n)) or "none defined"
        bad("spec.scrapeClass", f"scrape class {spec['scrapeClass']!r} is not defined in the Prometheus spec.scrapeClasses ({known})")
    else:
        cls = ctx.scrape_classes.get(spec.get("scrapeClass")) if spec.get("scrapeClass") else ctx.default_class
        for f in ("relabelings", "metricRelabelings"):
            for j, rc in enumerate((cls or {}).get(f) or ()):
                try:
                    relabel.validate(rc, ctx.version)
                except relabel.RelabelError as e:
                    bad("spec.scrapeClass", f"scrape class {cls.get('name')!r} has an invalid {f}[{j}]: {e.message}; "
                        "fix it in the Prometheus spec.scrapeClasses")
    ns_sel = spec.get("namespaceSelector")
    if ns_sel is not None and (not isinstance(ns_sel, Mapping) or not isinstance(ns_sel.get("matchNames") or [], list)):
        bad("spec.namespaceSelector", "must be a mapping with `any: true` or `matchNames: [...]`")
    for f in ("targetLabels", "podTargetLabels"):
        values = spec.get(f) or []
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            bad(f"spec.{f}", "must be a list of label names")
    if spec.get("jobLabel") is not None and not isinstance(spec["jobLabel"], str):
        bad("spec.jobLabel", "must be a label name")
    for f in _INT_LIMITS:
        v = spec.get(f)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            bad(f"spec.{f}", f"must be a non-negative integer, got {v!r}")
    if spec.get("bodySizeLimit") is not None:
        try:
            parse_size(spec["bodySizeLimit"])
        except DurationError as e:
            bad("spec.bodySizeLimit", str(e))

    ep_field = ENDPOINTS_FIELD[kind]
    endpoints = spec.get(ep_field) or []
    if not isinstance(endpoints, list):
        bad(f"spec.{ep_field}", "must be a list")
        return problems
    for i, ep in enumerate(endpoints):
        field = f"spec.{ep_field}[{i}]"
        if not isinstance(ep, Mapping):
            bad(field, "must be a mapping")
            continue
        for message_field, message in _endpoint_problems(ctx, kind, ep, field):
            bad(message_field, message)
    return problems


def _endpoint_problems(ctx: GenContext, kind: str, ep: Mapping[str, Any], field: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    durations = {}
    for f in ("interval", "scrapeTimeout"):
        if ep.get(f) is not None:
            try:
                durations[f] = parse_duration(ep[f])
            except DurationError as e:
                out.append((f"{field}.{f}", str(e)))
    if "scrapeTimeout" in durations:
        interval_text = ep.get("interval") if "interval" in durations and durations["interval"] else ctx.scrape_interval()
        try:
            interval = parse_duration(interval_text)
        except DurationError:
            interval = None
        if interval is not None and durations["scrapeTimeout"] > interval:
            out.append((
                f"{field}.scrapeTimeout",
                f"scrapeTimeout {ep['scrapeTimeout']} is greater than the scrape interval {interval_text}; "
                "lower the timeout or raise the interval",
            ))
    scheme = ep.get("scheme")
    if scheme is not None and str(scheme).lower() not in ("http", "https"):
        out.append((f"{field}.scheme", f"{scheme!r} is not a valid scheme; use http or https"))
    port = ep.get("port")
    if kind == "ServiceMonitor" and port is not None and not isinstance(port, str):
        out.append((f"{field}.port", "must be the name of a Service port (a string); use targetPort for numbers"))
    if kind == "PodMonitor":
        if port is not None and not isinstance(port, str):
            out.append((f"{field}.port", "must be the name of a container port (a string); use portNumber for numbers"))
        pn = ep.get("portNumber")
        if pn is not None and (isinstance(pn, bool) or not isinstance(pn, int) or not 1 <= pn <= 65535):
            out.append((f"{field}.portNumber", f"must be a port number between 1 and 65535, got {pn!r}"))
    tp = ep.get("targetPort")
    if tp is not None and (isinstance(tp, bool) or not isinstance(tp, (int, str))):
        out.append((f"{field}.targetPort", f"must be a port name or number, got {tp!r}"))
    params = ep.get("params")
    if params is not None and (
        not isinstance(params, Mapping)
        or not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in params.values())
    ):
        out.append((f"{field}.params", "must map parameter names to lists of strings"))
    for f in ("relabelings", "metricRelabelings"):
        rules = ep.get(f) or []
        if not isinstance(rules, list):
            out.append((f"{field}.{f}", "must be a list of relabel configs"))
            continue
        for j, rc in enumerate(rules):
            try:
                relabel.validate(rc, ctx.version)
            except relabel.RelabelError as e:
                sub = f".{e.field}" if e.field else ""
                out.append((f"{field}.{f}[{j}]{sub}", e.message))
    used = set_auth_fields(ep)
    if len(used) > 1:
        out.append((field, f"{' and '.join(used)} are mutually exclusive; keep only one authentication method"))
    authz = ep.get("authorization")
    if isinstance(authz, Mapping) and str(authz.get("type") or "").strip().lower() == "basic":
        out.append((f"{field}.authorization.type", 'type "Basic" is not allowed here; use basicAuth instead'))
    if (ctx.spec.get("arbitraryFSAccessThroughSMs") or {}).get("deny"):
        if ep.get("bearerTokenFile"):
            out.append((
                f"{field}.bearerTokenFile",
                "reading files from the Prometheus filesystem is denied by the Prometheus "
                "spec.arbitraryFSAccessThroughSMs.deny; use bearerTokenSecret or authorization.credentials",
            ))
        tls = ep.get("tlsConfig") or {}
        for f in ("caFile", "certFile", "keyFile"):
            if isinstance(tls, Mapping) and tls.get(f):
                out.append((
                    f"{field}.tlsConfig.{f}",
                    "reading files from the Prometheus filesystem is denied by the Prometheus "
                    "spec.arbitraryFSAccessThroughSMs.deny; reference a Secret or ConfigMap (ca, cert, keySecret) instead",
                ))
    return out
