"""The `global` section (intervals, external labels, global limits) and `storage`.

The Prometheus object cannot be rejected, so invalid values here are dropped
with a warning and the default applies.
"""

from __future__ import annotations

from typing import Any

from promop.render import topology
from promop.render.context import GenContext
from promop.duration import DurationError, parse_duration, parse_size
from promop.render.relabel import valid_label_name
from promop.render.model import Problem
from promop.render.schema_check import InvalidPrometheus
from promop.render.store import Scope
from promop.render.tsdb import tsdb_problems, tsdb_settings

DEFAULT_RETENTION = "24h"
# spec field -> (global key, enforced field, minimum version)
GLOBAL_LIMITS = (
    ("bodySizeLimit", "body_size_limit", "enforcedBodySizeLimit", "2.45.0"),
    ("sampleLimit", "sample_limit", "enforcedSampleLimit", "2.45.0"),
    ("targetLimit", "target_limit", "enforcedTargetLimit", "2.45.0"),
    ("labelLimit", "label_limit", "enforcedLabelLimit", "2.45.0"),
    ("labelNameLengthLimit", "label_name_length_limit", "enforcedLabelNameLengthLimit", "2.45.0"),
    ("labelValueLengthLimit", "label_value_length_limit", "enforcedLabelValueLengthLimit", "2.45.0"),
    ("keepDroppedTargets", "keep_dropped_targets", "enforcedKeepDroppedTargets", "2.47.0"),
)


def _duration(scope: Scope, value: Any, field: str, default: str | None) -> str | None:
    if value is None:
        return default
    try:
        parse_duration(value)
        return value
    except DurationError as e:
        scope.warn(field, f"{e}; using {default or 'the Prometheus default'} instead")
        return default


DEFAULT_LOG_DIRECTORY = "/var/log/prometheus"
NAME_ESCAPING = {"AllowUTF8": "allow-utf-8", "Underscores": "underscores", "Dots": "dots", "Values": "values"}


def global_section(ctx: GenContext, scope: Scope) -> dict:
    spec = ctx.spec
    out: dict = {}
    interval = _duration(scope, spec.get("scrapeInterval"), "spec.scrapeInterval", "30s")
    out["scrape_interval"] = interval
    timeout = _duration(scope, spec.get("scrapeTimeout"), "spec.scrapeTimeout", None)
    if timeout is not None:
        if parse_duration(timeout) > parse_duration(interval):
            scope.warn("spec.scrapeTimeout", f"scrapeTimeout {timeout} is greater than scrapeInterval {interval}; ignored")
        else:
            out["scrape_timeout"] = timeout
    if spec.get("scrapeProtocols"):
        from promop.render.job import scrape_protocols

        scope.put(out, "scrape_protocols", scrape_protocols(scope, spec["scrapeProtocols"], "spec.scrapeProtocols"),
                  "2.49.0", "spec.scrapeProtocols")
    out["external_labels"] = external_labels(ctx, scope)
    for spec_key, key, enforced_key, minimum in GLOBAL_LIMITS:
        value = _capped(spec.get(spec_key), spec.get(enforced_key), size=spec_key == "bodySizeLimit")
        if value is not None:
            scope.put(out, key, value, minimum, f"spec.{spec_key}")
    _log_file(scope, spec, out, "scrapeFailureLogFile", "scrape_failure_log_file", "2.55.0")
    if spec.get("nameValidationScheme"):
        value = {"UTF8": "utf8", "Legacy": "legacy"}.get(spec["nameValidationScheme"])
        if value:
            scope.put(out, "metric_name_validation_scheme", value, "3.0.0", "spec.nameValidationScheme")
    if spec.get("nameEscapingScheme"):
        value = NAME_ESCAPING.get(spec["nameEscapingScheme"])
        if value:
            scope.put(out, "metric_name_escaping_scheme", value, "3.4.0", "spec.nameEscapingScheme")
    # Global histogram toggles, with the minimum versions the CRD documents.
    for spec_key, key, minimum in (("scrapeNativeHistograms", "scrape_native_histograms", "3.8.0"),
                                   ("scrapeClassicHistograms", "always_scrape_classic_histograms", "3.5.0"),
                                   ("convertClassicHistogramsToNHCB", "convert_classic_histograms_to_nhcb", "3.4.0")):
        if spec.get(spec_key) is not None:
            scope.put(out, key, bool(spec[spec_key]), minimum, f"spec.{spec_key}")
    out["evaluation_interval"] = _duration(scope, spec.get("evaluationInterval"), "spec.evaluationInterval", "30s")
    if spec.get("ruleQueryOffset"):
        offset = _duration(scope, spec["ruleQueryOffset"], "spec.ruleQueryOffset", None)
        if offset:
            scope.put(out, "rule_query_offset", offset, "2.53.0", "spec.ruleQueryOffset")
    _log_file(scope, spec, out, "queryLogFile", "query_log_file", "2.16.0")
    return out


def log_file_path(path: str) -> str:
    """Upstream's rule: a bare file name lives in DEFAULT_LOG_DIRECTORY (an emptyDir the StatefulSet
    mounts); any other path is used as given (the user mounts its directory)."""
    return f"{DEFAULT_LOG_DIRECTORY}/{path}" if path and "/" not in path else path


def _log_file(scope: Scope, spec: Any, out: dict, spec_key: str, key: str, minimum: str) -> None:
    path = spec.get(spec_key)
    if not path:
        return
    scope.put(out, key, log_file_path(str(path)), minimum, f"spec.{spec_key}")


def _capped(user: Any, enforced: Any, size: bool) -> Any:
    if enforced is None:
        return user
    if user is None:
        return enforced
    conv = parse_size if size else int
    try:
        return enforced if conv(enforced) and (not conv(user) or conv(user) > conv(enforced)) else user
    except (DurationError, TypeError, ValueError):
        return user


def external_labels(ctx: GenContext, scope: Scope) -> dict:
    """`prometheus: <ns>/<name>`, `prometheus_replica: $(POD_NAME)`, then the user's, sorted by key."""
    spec = ctx.spec
    reserved: dict[str, str] = {}
    prom_label = spec.get("prometheusExternalLabelName")
    prom_label = "prometheus" if prom_label is None else prom_label
    if prom_label:
        reserved[prom_label] = f"{ctx.namespace}/{ctx.name}"
    replica_label = replica_label_name(ctx)
    if replica_label:
        reserved[replica_label] = "$(POD_NAME)"
    zones = topology.for_context(ctx)
    if zones is not None and zones.external_label:
        reserved[zones.external_label] = f"$({topology.ZONE_ENV})"
    labels = dict(reserved)
    for key, value in (spec.get("externalLabels") or {}).items():
        if key in reserved:
            scope.warn(f"spec.externalLabels.{key}", f"label {key} is reserved by the operator; the user value is ignored")
            continue
        if not valid_label_name(key, ctx.version):
            scope.warn(f"spec.externalLabels.{key}",
                       f"{key!r} is not a valid label name for Prometheus {ctx.version}, which would refuse the config; ignored")
            continue
        labels[key] = str(value)
    return dict(sorted(labels.items()))


def replica_label_name(ctx: GenContext) -> str:
    name = ctx.spec.get("replicaExternalLabelName")
    return "prometheus_replica" if name is None else name


def runtime_section(ctx: GenContext, scope: Scope) -> dict | None:
    gogc = (ctx.spec.get("runtime") or {}).get("goGC")
    if gogc is None:
        return None
    if not ctx.version.at_least("2.53.0"):
        return None  # older Prometheus reads GOGC from its environment (render/statefulset.py sets it), as upstream
    return {"gogc": gogc}


def storage_section(ctx: GenContext, scope: Scope) -> dict | None:
    spec = ctx.spec
    storage: dict = {}
    max_exemplars = (spec.get("exemplars") or {}).get("maxSize")
    if max_exemplars is not None:
        scope.put(storage, "exemplars", {"max_exemplars": max_exemplars}, "2.29.0", "spec.exemplars.maxSize")
    problems = tsdb_problems(spec)
    if problems:
        raise InvalidPrometheus([Problem("Prometheus", ctx.namespace, ctx.name, f, m) for f, m in problems])
    tsdb = tsdb_settings(spec, scope)
    if ctx.version.at_least("3.11.0"):
        retention: dict = {}
        if spec.get("retention"):
            retention["time"] = spec["retention"]
        if spec.get("retentionSize"):
            retention["size"] = spec["retentionSize"]
        tsdb["retention"] = retention or {"time": DEFAULT_RETENTION}
    if tsdb:
        storage["tsdb"] = tsdb
    return storage or None
