"""The parts of a scrape job that ServiceMonitor and PodMonitor endpoints share.

Key order follows upstream's generator (YAML MapSlice), so that our config
diffs cleanly against upstream's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from promop.quantity import QuantityError, approximate_float
from promop.render import auth, relabel, topology
from promop.render.context import GenContext
from promop.render.emit import Frozen
from promop.duration import DurationError, parse_size
from promop.render.store import Reject, Scope
from promop.render.tls_assets import tls_config

# spec field -> (config key, enforced spec field on the Prometheus, minimum version)
LIMITS = (
    ("sampleLimit", "sample_limit", "enforcedSampleLimit", None),
    ("targetLimit", "target_limit", "enforcedTargetLimit", "2.21.0"),
    ("labelLimit", "label_limit", "enforcedLabelLimit", "2.27.0"),
    ("labelNameLengthLimit", "label_name_length_limit", "enforcedLabelNameLengthLimit", "2.27.0"),
    ("labelValueLengthLimit", "label_value_length_limit", "enforcedLabelValueLengthLimit", "2.27.0"),
    ("keepDroppedTargets", "keep_dropped_targets", "enforcedKeepDroppedTargets", "2.47.0"),
)


def scrape_class(ctx: GenContext, spec: Mapping[str, Any]) -> dict:
    """The monitor's scrape class (by name, else the default one, else none)."""
    name = spec.get("scrapeClass")
    if name:
        cls = ctx.scrape_classes.get(name)
        if cls is None:
            known = ", ".join(sorted(n for n in ctx.scrape_classes if n)) or "none defined"
            raise Reject("spec.scrapeClass", f"scrape class {name!r} is not defined in the Prometheus spec.scrapeClasses ({known})")
        return cls
    return ctx.default_class or {}


def job_head(ctx: GenContext, scope: Scope, job_name: str, ep: Mapping[str, Any], field: str) -> dict:
    """job_name, honor_labels, honor_timestamps, track_timestamps_staleness."""
    spec = ctx.spec
    job: dict = {"job_name": job_name}
    job["honor_labels"] = bool(ep.get("honorLabels")) and not spec.get("overrideHonorLabels")
    user_ts = ep.get("honorTimestamps")
    override_ts = bool(spec.get("overrideHonorTimestamps"))
    if user_ts is not None or override_ts:
        scope.put(job, "honor_timestamps", bool(user_ts) and not override_ts, "2.9.0", f"{field}.honorTimestamps")
    if ep.get("trackTimestampsStaleness") is not None:
        scope.put(job, "track_timestamps_staleness", bool(ep["trackTimestampsStaleness"]), "2.48.0", f"{field}.trackTimestampsStaleness")
    return job


def http_part(
    ctx: GenContext, scope: Scope, ep: Mapping[str, Any], job: dict, field: str, cls: Mapping[str, Any],
    safe_tls: bool = False, tls_field: str = "tlsConfig",
) -> None:
    """Interval, timeout, path, params, scheme, HTTP options, proxy, oauth2, TLS and credentials."""
    if ep.get("interval"):
        job["scrape_interval"] = ep["interval"]
    if ep.get("scrapeTimeout"):
        job["scrape_timeout"] = ep["scrapeTimeout"]
    if ep.get("path"):
        job["metrics_path"] = ep["path"]
    if ep.get("params"):
        job["params"] = {k: list(v) for k, v in ep["params"].items()}
    if ep.get("scheme"):
        job["scheme"] = str(ep["scheme"]).lower()
    if ep.get("followRedirects") is not None:
        scope.put(job, "follow_redirects", bool(ep["followRedirects"]), "2.26.0", f"{field}.followRedirects")
    if ep.get("enableHttp2") is not None:
        scope.put(job, "enable_http2", bool(ep["enableHttp2"]), "2.35.0", f"{field}.enableHttp2")
    auth.proxy(scope, ep, job, field)
    if ep.get("oauth2"):
        auth.check_exclusive(ep, field)
        scope.put(job, "oauth2", auth.oauth2(scope, ep["oauth2"], f"{field}.oauth2"), "2.27.0", f"{field}.oauth2")
    ep_tls = ep.get(tls_field)
    if safe_tls and isinstance(ep_tls, Mapping):  # SafeTLSConfig (PodMonitor): no file paths of its own
        ep_tls = {k: v for k, v in ep_tls.items() if k not in ("caFile", "certFile", "keyFile")}
    tls = merged_tls(ep_tls, cls.get("tlsConfig"))
    if tls:
        out = tls_config(scope, tls, f"{field}.{tls_field}")
        if out:
            job["tls_config"] = out
    auth.credentials(scope, ep, job, field, cls.get("authorization"))


def merged_tls(ep_tls: Mapping[str, Any] | None, class_tls: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The endpoint's TLS config wins; the scrape class fills CA/cert/key files it lacks."""
    if not class_tls:
        return ep_tls
    if not ep_tls:
        return class_tls
    merged = dict(ep_tls)
    for ref, file in (("ca", "caFile"), ("cert", "certFile"), ("keySecret", "keyFile")):
        if not merged.get(ref) and not merged.get(file) and class_tls.get(file):
            merged[file] = class_tls[file]
    return merged


def enforced_namespace_rules(ctx: GenContext, kind_plural: str, namespace: str, name: str) -> list[dict]:
    """`{target_label: <enforcedNamespaceLabel>, replacement: <ns>}` unless the object is excluded."""
    label = ctx.spec.get("enforcedNamespaceLabel")
    if not label:
        return []
    for ref in ctx.spec.get("excludedFromEnforcement") or ():
        if (
            ref.get("resource") == kind_plural
            and (ref.get("group") or "monitoring.coreos.com") == "monitoring.coreos.com"
            and ref.get("namespace") == namespace
            and (not ref.get("name") or ref.get("name") == name)
        ):
            return []
    return [{"target_label": label, "replacement": namespace}]


def job_tail(
    ctx: GenContext,
    scope: Scope,
    job: dict,
    spec: Mapping[str, Any],
    ep: Mapping[str, Any],
    field: str,
    cls: Mapping[str, Any],
    enforced: list[dict],
) -> None:
    """Limits, protocol/histogram options, body size limit and metric_relabel_configs."""
    for spec_key, cfg_key, enforced_key, minimum in LIMITS:
        value = _limit(ctx, spec.get(spec_key), ctx.spec.get(enforced_key))
        if value is not None:
            scope.put(job, cfg_key, value, minimum, f"spec.{spec_key}")
    if spec.get("scrapeNativeHistograms") is not None:
        scope.put(job, "scrape_native_histograms", bool(spec["scrapeNativeHistograms"]), "3.8.0", "spec.scrapeNativeHistograms")
    if spec.get("nativeHistogramBucketLimit") is not None:
        scope.put(job, "native_histogram_bucket_limit", spec["nativeHistogramBucketLimit"], "2.45.0", "spec.nativeHistogramBucketLimit")
    if spec.get("nativeHistogramMinBucketFactor") is not None:
        factor = _quantity_number(spec["nativeHistogramMinBucketFactor"], "spec.nativeHistogramMinBucketFactor")
        scope.put(job, "native_histogram_min_bucket_factor", factor, "2.50.0", "spec.nativeHistogramMinBucketFactor")
    if spec.get("scrapeClassicHistograms") is not None:
        # renamed in Prometheus 3 (upstream keys on the major version, so 3.0.0 pre-releases get the new name)
        if ctx.version.major >= 3:
            job["always_scrape_classic_histograms"] = bool(spec["scrapeClassicHistograms"])
        else:
            scope.put(job, "scrape_classic_histograms", bool(spec["scrapeClassicHistograms"]), "2.45.0",
                      "spec.scrapeClassicHistograms")
    if spec.get("convertClassicHistogramsToNHCB") is not None:
        scope.put(job, "convert_classic_histograms_to_nhcb", bool(spec["convertClassicHistogramsToNHCB"]), "3.0.0", "spec.convertClassicHistogramsToNHCB")
    if spec.get("scrapeProtocols"):
        scope.put(job, "scrape_protocols", scrape_protocols(scope, spec["scrapeProtocols"], "spec.scrapeProtocols"),
                  "2.49.0", "spec.scrapeProtocols")
    fallback = spec.get("fallbackScrapeProtocol") or cls.get("fallbackScrapeProtocol")
    if fallback:
        scope.put(job, "fallback_scrape_protocol", fallback, "3.0.0", "spec.fallbackScrapeProtocol")
    body = _body_size_limit(spec.get("bodySizeLimit"), ctx.spec.get("enforcedBodySizeLimit"), ctx)
    if body is not None:
        scope.put(job, "body_size_limit", body, "2.28.0", "spec.bodySizeLimit")
    metric = [
        *relabel.to_prometheus_list(cls.get("metricRelabelings")),
        *relabel.to_prometheus_list(ep.get("metricRelabelings")),
        *(dict(r) for r in enforced),
    ]
    if metric:
        job["metric_relabel_configs"] = metric


def scrape_protocols(scope: Scope, protocols: Any, field: str) -> list:
    """The protocols this Prometheus knows: PrometheusText1.0.0 needs 3.0.0-rc.0 (dropped with a warning)."""
    out = []
    for i, protocol in enumerate(protocols):
        if protocol == "PrometheusText1.0.0" and not scope.version.at_least("3.0.0-rc.0"):
            scope.warn(f"{field}[{i}]", f"ignored: {protocol} needs Prometheus >= 3.0.0-rc.0, but spec.version is "
                                        f"{scope.version}")
            continue
        out.append(protocol)
    return out


def _limit(ctx: GenContext, user: Any, enforced: Any) -> int | None:
    """Upstream's getLimit: the user's limit capped by the enforced one."""
    if not enforced:
        return user
    if not user:
        return None if ctx.version.at_least("2.45.0") else enforced
    return min(user, enforced)


def _body_size_limit(user: Any, enforced: Any, ctx: GenContext) -> str | None:
    if enforced is None:
        return user
    if user is None:
        return None if ctx.version.at_least("2.45.0") else enforced
    try:
        if parse_size(enforced) and (not parse_size(user) or parse_size(user) > parse_size(enforced)):
            return enforced
    except DurationError:
        return user
    return user


def endpoint_label(port: Any, target_port: Any) -> str | None:
    """The `endpoint` label: the port name, else targetPort as upstream prints it (an int-or-string's
    String(), so 0 gives "0"), else none."""
    if port:
        return str(port)
    if target_port is not None and str(target_port) != "":
        return str(target_port)
    return None


def relabel_tail(
    ctx: GenContext, endpoint: Any, cls: Mapping[str, Any], ep: Mapping[str, Any], enforced: list[dict]
) -> list[dict]:
    """The end of every monitor job's relabel_configs: `endpoint` label, scrape-class and user
    relabelings, the enforced namespace label, then sharding."""
    rules: list[dict] = []
    if endpoint is not None:
        rules.append(_endpoint_rule(str(endpoint)))
    rules += relabel.to_prometheus_list(cls.get("relabelings"))
    rules += relabel.to_prometheus_list(ep.get("relabelings"))
    rules += [dict(r) for r in enforced]
    if not ctx.daemonset:  # an agent DaemonSet scrapes its own node's pods: no shards
        zones = topology.for_context(ctx)
        if zones is None:
            rules += _sharding(ctx.shards, bool(ctx.options.shard_retention_policy))
        else:
            rules += relabel.sharding_relabels(ctx.shards, ctx.options.shard_retention_policy, zones)
    return rules


# Rules most monitor jobs share, built once and emitted once per indentation (emit.Frozen).
@functools.lru_cache(maxsize=4096)
def _endpoint_rule(endpoint: str) -> Frozen:
    return Frozen({"target_label": "endpoint", "replacement": endpoint})


@functools.lru_cache(maxsize=64)
def _sharding(shards: int, retention: bool) -> tuple[Frozen, ...]:
    return tuple(Frozen(rule) for rule in relabel.sharding_relabels(shards, retention))


def _quantity_number(value: Any, field: str) -> float:
    """A resource.Quantity field as the number Prometheus reads (upstream writes
    `AsApproximateFloat64()`: `12.124`, never the string `'12.124'`, which Prometheus refuses)."""
    try:
        return approximate_float(value)
    except QuantityError as exc:
        raise Reject(field, f"{exc}") from None
