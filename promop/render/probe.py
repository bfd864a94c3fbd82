"""Probe objects (monitoring.coreos.com/v1) to scrape jobs, as upstream's generateProbeConfig.

A Probe scrapes a prober (usually the blackbox exporter, `spec.prober.url`) once per
target, passing the target as the `target` URL parameter: targets are either a static
list (`spec.targets.staticConfig`, which wins when both are set) or the Ingresses a
selector picks (`spec.targets.ingress`, role `ingress` discovery). One Probe gives one
job, `probe/<namespace>/<name>`. Sharding hashes `__param_target` (the probed target),
not `__address__` (which is always the prober).
"""

from __future__ import annotations

import copy
import ipaddress
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from promop.duration import DurationError, parse_duration
from promop.render import auth, relabel
from promop.render.auth import set_auth_fields
from promop.render.context import GenContext
from promop.render.job import enforced_namespace_rules, http_part, job_tail, scrape_class
from promop.render.model import Problem, obj_meta
from promop.render.scrape import k8s_sd_config
from promop.render.store import Scope
from promop.schema import SchemaNotFound, crd_schema
from promop.schema.walk import apply_defaults

KIND = "Probe"
KIND_PLURAL = "probes"
_INT_LIMITS = (
    "sampleLimit", "targetLimit", "labelLimit", "labelNameLengthLimit", "labelValueLengthLimit",
    "keepDroppedTargets", "nativeHistogramBucketLimit",
)
_DNS_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
# the Go net/url host characters (RFC 3986 reg-name plus ':' and brackets for ports and IPv6)
_URL_HOST = re.compile(r"^[A-Za-z0-9.\-_~!$&'()*+,;=:\[\]%]*$")


def with_crd_defaults(obj: Mapping[str, Any]) -> dict:
    """A copy of a Probe read from a file with its CRD's defaults set, as the apiserver stores it on
    `kubectl apply` (e.g. `spec.prober.path: /probe`); the generator itself takes objects as given."""
    out = copy.deepcopy(dict(obj))
    try:
        schema = crd_schema(KIND, "v1", "monitoring.coreos.com")
    except SchemaNotFound:
        return out
    apply_defaults(out, schema)
    return out


# --- validation -------------------------------------------------------------------------


def valid_prober_url(url: str) -> bool:
    """upstream's prober URL check: a host (DNS name or IP, IPv6 allowed) with an optional port,
    and no scheme (`http://...` is refused: the scheme goes in `spec.prober.scheme`)."""
    if "://" in url or "/" in url:
        return False
    if url.startswith("["):  # [ipv6]:port
        host, sep, port = url[1:].partition("]")
        if not _is_ip(host):
            return False
        return sep == "]" and (port == "" or (port.startswith(":") and _is_port(port[1:])))
    if _is_ip(url):  # a bare IPv6 address contains ':' itself
        return True
    host, _, port = url.partition(":")
    if ":" in port:
        return False
    if port or url.endswith(":"):
        if not _is_port(port):
            return False
    return _is_ip(host) or _is_dns_name(host)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_port(text: str) -> bool:
    return text.isdigit() and 0 < int(text) < 65536


def _is_dns_name(text: str) -> bool:
    labels = text.rstrip(".").split(".")
    return bool(text) and len(text) <= 253 and all(_DNS_LABEL.match(label) for label in labels)


def validate_probe(ctx: GenContext, kind: str, obj: Mapping[str, Any]) -> list[Problem]:
    """Every problem found in a Probe without reading Secrets (empty when it is valid)."""
    ns, name = obj_meta(obj)
    out: list[Problem] = []

    def bad(field: str, message: str) -> None:
        out.append(Problem(KIND, ns, name, field, message))

    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        bad("spec", "must be a mapping")
        return out
    enforced = ctx.spec.get("enforcedNamespaceLabel")
    if enforced and not relabel.valid_label_name(enforced, ctx.version):
        bad("spec", f"the Prometheus spec.enforcedNamespaceLabel {enforced!r} is not a valid label name for "
                    f"Prometheus {ctx.version}; fix the Prometheus")
        return out
    for field, message in _spec_problems(ctx, spec):
        bad(field, message)
    return out


def _spec_problems(ctx: GenContext, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    cls_name = spec.get("scrapeClass")
    if cls_name and cls_name not in ctx.scrape_classes:
        known = ", ".join(sorted(n for n in ctx.scrape_classes if n)) or "none defined"
        out.append(("spec.scrapeClass", f"scrape class {cls_name!r} is not defined in the Prometheus "
                                        f"spec.scrapeClasses ({known})"))
    prober = spec.get("prober") or {}
    url = prober.get("url") if isinstance(prober, Mapping) else None
    if url and not valid_prober_url(str(url)):
        out.append(("spec.prober.url", f"{url!r} is not a host[:port]: give the prober's address without a scheme "
                                       "(e.g. blackbox-exporter.monitoring.svc:19115) and put http/https in "
                                       "spec.prober.scheme"))
    if isinstance(prober, Mapping):
        out += _proxy_url_problems(prober)
    out += _duration_problems(ctx, spec)
    targets = spec.get("targets") or {}
    static = targets.get("staticConfig") if isinstance(targets, Mapping) else None
    if isinstance(static, Mapping):
        for label in sorted((static.get("labels") or {})):
            if not relabel.valid_label_name(label, ctx.version):
                out.append((f"spec.targets.staticConfig.labels.{label}",
                            f"{label!r} is not a valid label name for Prometheus {ctx.version}"))
        out += _relabel_problems(ctx, static.get("relabelingConfigs"), "spec.targets.staticConfig.relabelingConfigs")
    ingress = targets.get("ingress") if isinstance(targets, Mapping) else None
    if isinstance(ingress, Mapping):
        out += _relabel_problems(ctx, ingress.get("relabelingConfigs"), "spec.targets.ingress.relabelingConfigs")
    out += _relabel_problems(ctx, spec.get("metricRelabelings"), "spec.metricRelabelings")
    for f in _INT_LIMITS:
        v = spec.get(f)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            out.append((f"spec.{f}", f"must be a non-negative integer, got {v!r}"))
    used = set_auth_fields(spec)
    if len(used) > 1:
        out.append(("spec", f"{' and '.join(used)} are mutually exclusive; keep only one authentication method"))
    authz = spec.get("authorization")
    if isinstance(authz, Mapping) and str(authz.get("type") or "").strip().lower() == "basic":
        out.append(("spec.authorization.type", 'type "Basic" is not allowed here; use basicAuth instead'))
    return out


def _proxy_url_problems(prober: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A proxy URL Go's url.Parse refuses (e.g. `${dev}` in the host) makes upstream reject the Probe."""
    proxy = prober.get("proxyUrl")
    if not proxy:
        return []
    try:
        host = urlsplit(str(proxy)).netloc.rpartition("@")[2]
    except ValueError:
        host = None
    if host is None or not _URL_HOST.match(host):
        return [("spec.prober.proxyUrl", f"{proxy!r} is not a valid URL (its host has characters a URL host "
                                         "cannot have); give e.g. http://proxy.example.com:3128")]
    return []


def _duration_problems(ctx: GenContext, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    parsed = {}
    for f in ("interval", "scrapeTimeout"):
        if spec.get(f):
            try:
                parsed[f] = parse_duration(spec[f])
            except DurationError as e:
                out.append((f"spec.{f}", str(e)))
    if "scrapeTimeout" in parsed:
        interval_text = spec.get("interval") if parsed.get("interval") else ctx.scrape_interval()
        try:
            interval = parse_duration(interval_text)
        except DurationError:
            interval = None
        if interval is not None and parsed["scrapeTimeout"] > interval:
            out.append(("spec.scrapeTimeout", f"scrapeTimeout {spec['scrapeTimeout']} is greater than the scrape "
                                              f"interval {interval_text}; lower the timeout or raise the interval"))
    return out


def _relabel_problems(ctx: GenContext, rules: Any, field: str) -> list[tuple[str, str]]:
    if rules is None:
        return []
    if not isinstance(rules, list):
        return [(field, "must be a list of relabel configs")]
    out = []
    for j, rc in enumerate(rules):
        try:
            relabel.validate(rc, ctx.version)
        except relabel.RelabelError as e:
            sub = f".{e.field}" if e.field else ""
            out.append((f"{field}[{j}]{sub}", e.message))
    return out


# --- generation -------------------------------------------------------------------------


def probe_jobs(ctx: GenContext, probe: Mapping[str, Any], scope: Scope) -> list[dict]:
    """The one scrape job of a (validated) Probe; raises Reject (a missing Secret, a bad proxy)."""
    namespace, name = obj_meta(probe)
    spec = probe.get("spec") or {}
    prober = spec.get("prober") or {}
    cls = scrape_class(ctx, spec)
    enforced = enforced_namespace_rules(ctx, KIND_PLURAL, namespace, name)
    job: dict = {"job_name": f"probe/{namespace}/{name}"}
    override = bool(ctx.spec.get("overrideHonorTimestamps"))
    scope.put(job, "honor_timestamps", not override, "2.9.0", "spec")
    # http_part reads the HTTP fields a Probe shares with monitor endpoints (interval, timeout,
    # redirects, HTTP/2, oauth2, TLS, credentials); `params` has another shape here
    http_part(ctx, scope, {k: v for k, v in spec.items() if k != "params"}, job, "spec", cls, safe_tls=True)
    job["metrics_path"] = prober.get("path", "")
    if prober.get("scheme"):
        job["scheme"] = str(prober["scheme"]).lower()
    params = _params(spec)
    if params:
        job["params"] = params
    auth.proxy(scope, prober, job, "spec.prober")
    rules = [{"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"}]
    if spec.get("jobName"):
        rules.append({"target_label": "job", "replacement": spec["jobName"]})
    targets = spec.get("targets") or {}
    if targets.get("staticConfig") is not None:
        rules += _static_targets(job, namespace, targets["staticConfig"], prober, cls, enforced)
    elif targets.get("ingress") is not None:
        rules += _ingress_targets(ctx, scope, job, namespace, targets["ingress"], prober, cls, enforced)
    rules += _sharding(ctx)
    job["relabel_configs"] = rules
    job_tail(ctx, scope, job, spec, spec, "spec", cls, enforced)
    return [job]


def _params(spec: Mapping[str, Any]) -> dict[str, list[str]]:
    """`module` first (spec.module wins over a `module` entry of spec.params), then the params."""
    out: dict[str, list[str]] = {}
    if spec.get("module"):
        out["module"] = [spec["module"]]
    for p in spec.get("params") or ():
        if p.get("name") == "module" and spec.get("module"):
            continue
        out[p["name"]] = list(p.get("values") or ())
    return out


def _prober_rules(prober: Mapping[str, Any]) -> list[dict]:
    return [
        {"source_labels": ["__param_target"], "target_label": "instance"},
        {"target_label": "__address__", "replacement": prober.get("url") or ""},
    ]


def _static_targets(
    job: dict, namespace: str, static: Mapping[str, Any], prober: Mapping[str, Any], cls: Mapping[str, Any],
    enforced: list[dict],
) -> list[dict]:
    labels = dict(static.get("labels") or {})
    labels.setdefault("namespace", namespace)
    job["static_configs"] = [{"targets": list(static.get("static") or ()), "labels": labels}]
    return [
        {"source_labels": ["__address__"], "target_label": "__param_target"},
        *_prober_rules(prober),
        *relabel.to_prometheus_list(cls.get("relabelings")),
        *relabel.to_prometheus_list(static.get("relabelingConfigs")),
        *(dict(r) for r in enforced),
    ]


def _ingress_targets(
    ctx: GenContext, scope: Scope, job: dict, namespace: str, ingress: Mapping[str, Any],
    prober: Mapping[str, Any], cls: Mapping[str, Any], enforced: list[dict],
) -> list[dict]:
    job["kubernetes_sd_configs"] = [k8s_sd_config(ctx, scope, "ingress", namespace, ingress, {})]
    return [
        *relabel.selector_relabels(ingress.get("selector"), "__meta_kubernetes_ingress"),
        {
            "source_labels": ["__meta_kubernetes_ingress_scheme", "__address__", "__meta_kubernetes_ingress_path"],
            "separator": ";", "regex": "(.+);(.+);(.+)", "target_label": "__param_target",
            "replacement": "${1}://${2}${3}", "action": "replace",
        },
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_ingress_name"], "target_label": "ingress"},
        {
            "source_labels": ["__address__"], "separator": ";", "regex": "(.*)",
            "target_label": "__tmp_ingress_address", "replacement": "$1", "action": "replace",
        },
        *_prober_rules(prober),
        *relabel.to_prometheus_list(cls.get("relabelings")),
        *relabel.to_prometheus_list(ingress.get("relabelingConfigs")),
        *(dict(r) for r in enforced),
    ]


def _sharding(ctx: GenContext) -> list[dict]:
    """The monitors' sharding rules, hashing the probed target instead of the prober's address."""
    rules = relabel.sharding_relabels(ctx.shards, ctx.options.shard_retention_policy)
    for rule in rules:
        if rule.get("source_labels") == ["__address__", "__tmp_hash"]:
            rule["source_labels"] = ["__param_target", "__tmp_hash"]
    return rules
