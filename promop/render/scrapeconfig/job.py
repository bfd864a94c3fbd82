"""One ScrapeConfig to one scrape job `scrapeConfig/<namespace>/<name>`, in upstream's key order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render import auth, relabel
from promop.render.context import GenContext
from promop.render.job import enforced_namespace_rules, job_tail, merged_tls, scrape_class, scrape_protocols
from promop.render.model import obj_meta
from promop.render.scrapeconfig import httpclient
from promop.render.scrapeconfig.sd import sd_configs
from promop.render.store import Scope
from promop.render.tls_assets import tls_config

KIND = "ScrapeConfig"
KIND_PLURAL = "scrapeconfigs"


def scrape_config_jobs(ctx: GenContext, sc: Mapping[str, Any], scope: Scope) -> list[dict]:
    """The job of a ScrapeConfig (a list, like the monitors' generators); raises Reject."""
    namespace, name = obj_meta(sc)
    spec = sc.get("spec") or {}
    cls = scrape_class(ctx, spec)
    enforced = enforced_namespace_rules(ctx, KIND_PLURAL, namespace, name)
    job: dict = {"job_name": f"scrapeConfig/{namespace}/{name}"}
    _head(ctx, scope, spec, job)
    _http(ctx, scope, spec, job, cls)
    sd_configs(scope, spec, job, namespace)
    job["relabel_configs"] = _relabels(ctx, scope, spec, cls)
    tail_spec = {k: v for k, v in spec.items() if k not in ("scrapeProtocols", "metricRelabelings")}
    job_tail(ctx, scope, job, tail_spec, {"metricRelabelings": _checked(scope, spec, "metricRelabelings")},
             "spec", cls, enforced)
    if spec.get("scrapeProtocols"):
        scope.put(job, "scrape_protocols", scrape_protocols(scope, spec["scrapeProtocols"], "spec.scrapeProtocols"),
                  "2.49.0", "spec.scrapeProtocols")
    _name_schemes(scope, spec, job)
    return [job]


def _head(ctx: GenContext, scope: Scope, spec: Mapping[str, Any], job: dict) -> None:
    if spec.get("honorTimestamps") is not None:
        job["honor_timestamps"] = bool(spec["honorTimestamps"]) and not ctx.spec.get("overrideHonorTimestamps")
    if spec.get("trackTimestampsStaleness") is not None:
        scope.put(job, "track_timestamps_staleness", bool(spec["trackTimestampsStaleness"]), "2.48.0",
                  "spec.trackTimestampsStaleness")
    if spec.get("honorLabels") is not None:
        job["honor_labels"] = bool(spec["honorLabels"]) and not ctx.spec.get("overrideHonorLabels")
    for crd_key, prom_key in (("scrapeInterval", "scrape_interval"), ("scrapeTimeout", "scrape_timeout"),
                              ("metricsPath", "metrics_path")):
        if spec.get(crd_key):
            job[prom_key] = spec[crd_key]
    if spec.get("params"):
        job["params"] = {k: list(v) for k, v in spec["params"].items()}
    if spec.get("scheme"):
        job["scheme"] = str(spec["scheme"]).lower()
    if spec.get("enableCompression") is not None:
        scope.put(job, "enable_compression", bool(spec["enableCompression"]), "2.49.0", "spec.enableCompression")
    if spec.get("enableHTTP2") is not None:
        scope.put(job, "enable_http2", bool(spec["enableHTTP2"]), "2.35.0", "spec.enableHTTP2")


def _http(ctx: GenContext, scope: Scope, spec: Mapping[str, Any], job: dict, cls: Mapping[str, Any]) -> None:
    """Proxy, credentials (the scrape class's authorization when none is set) and TLS."""
    auth.proxy(scope, spec, job, "spec")
    httpclient.credentials(scope, spec, job, "spec")
    if not any(spec.get(f) for f in ("basicAuth", "authorization", "oauth2")) and cls.get("authorization"):
        job["authorization"] = auth.authorization(scope, cls["authorization"], "scrapeClass.authorization")
    tls = merged_tls(spec.get("tlsConfig"), cls.get("tlsConfig"))
    if tls:
        out = tls_config(scope, tls, "spec.tlsConfig")
        if out:
            job["tls_config"] = out


def _checked(scope: Scope, spec: Mapping[str, Any], key: str) -> list[dict]:
    """Relabelings validated as Prometheus would (a bad one rejects this ScrapeConfig alone), in CRD form."""
    rcs = spec.get(key)
    if rcs is None:
        return []
    relabel.checked(rcs, scope.version, f"spec.{key}")
    return list(rcs)


def _relabels(ctx: GenContext, scope: Scope, spec: Mapping[str, Any], cls: Mapping[str, Any]) -> list[dict]:
    rules: list[dict] = [{"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"}]
    if spec.get("jobName"):
        rules.append({"target_label": "job", "action": "replace", "replacement": spec["jobName"]})
    rules += relabel.to_prometheus_list(cls.get("relabelings"))
    user = _checked(scope, spec, "relabelings")
    rules += relabel.to_prometheus_list(user)
    # unlike monitors, upstream enforces the namespace label on a ScrapeConfig's samples only
    # (metric_relabel_configs): its targets need not be in Kubernetes at all
    # upstream shards a ScrapeConfig's targets only over several shards, and never twice
    if ctx.shards > 1 and not any(str(r.get("action") or "").lower() == "hashmod" for r in user):
        rules += relabel.sharding_relabels(ctx.shards, ctx.options.shard_retention_policy)
    return rules


def _name_schemes(scope: Scope, spec: Mapping[str, Any], job: dict) -> None:
    if spec.get("nameValidationScheme"):
        scope.put(job, "metric_name_validation_scheme", str(spec["nameValidationScheme"]).lower(), "3.0.0",
                  "spec.nameValidationScheme")
    if spec.get("nameEscapingScheme"):
        scope.put(job, "metric_name_escaping_scheme", _escaping(spec["nameEscapingScheme"]), "3.4.0",
                  "spec.nameEscapingScheme")


def _escaping(value: str) -> str:
    return {"AllowUTF8": "allow-utf-8", "Underscores": "underscores", "Dots": "dots", "Values": "values"}.get(
        value, str(value).lower())


