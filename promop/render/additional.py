"""User-supplied raw config from Secret keys: additionalScrapeConfigs and alerting extras.

Upstream fails the whole reconcile when such a Secret is missing, and passes
broken YAML on to Prometheus; here a bad item is dropped with a warning and
everything else still renders.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from promop.render import relabel
from promop.render.context import GenContext
from promop.render.store import Reject, Scope


def load_list(scope: Scope, ref: Mapping[str, Any] | None, field: str) -> list:
    """The YAML list stored under a Secret key (empty with a warning when unusable)."""
    if not ref:
        return []
    try:
        text = scope.read("Secret", ref, field)
    except Reject as e:
        scope.warn(e.field, f"{e.message}; ignored")
        return []
    if not text:
        return []
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        scope.warn(field, f"Secret key does not hold valid YAML ({str(e).splitlines()[0]}); ignored")
        return []
    if data is None:
        return []
    if not isinstance(data, list):
        scope.warn(field, "Secret key must hold a YAML list; ignored")
        return []
    return data


def _relabels_ok(scope: Scope, ctx: GenContext, rules: Any, field: str) -> bool:
    if rules is None:
        return True
    if not isinstance(rules, list):
        scope.warn(field, "must be a list of relabel configs; item ignored")
        return False
    for i, rc in enumerate(rules):
        try:
            relabel.validate(rc, ctx.version, snake=True)
        except relabel.RelabelError as e:
            scope.warn(f"{field}[{i}].{e.field}" if e.field else f"{field}[{i}]", f"{e.message}; item ignored")
            return False
    return True


def additional_scrape_configs(ctx: GenContext, scope: Scope, taken: set[str]) -> list[dict]:
    """Jobs from spec.additionalScrapeConfigs, with sharding rules when shards > 1.

    Jobs without a job_name, with a name already used, or with invalid relabel
    rules are dropped with a warning (Prometheus would refuse the whole config).
    """
    field = "spec.additionalScrapeConfigs"
    jobs = []
    for i, job in enumerate(load_list(scope, ctx.spec.get("additionalScrapeConfigs"), field)):
        at = f"{field}[{i}]"
        if not isinstance(job, Mapping) or not isinstance(job.get("job_name"), str) or not job["job_name"]:
            scope.warn(at, "each additional scrape config needs a job_name; item ignored")
            continue
        if job["job_name"] in taken:
            scope.warn(f"{at}.job_name", f"job_name {job['job_name']!r} is already used; item ignored")
            continue
        if not (_relabels_ok(scope, ctx, job.get("relabel_configs"), f"{at}.relabel_configs")
                and _relabels_ok(scope, ctx, job.get("metric_relabel_configs"), f"{at}.metric_relabel_configs")):
            continue
        taken.add(job["job_name"])
        jobs.append(_sharded(ctx, dict(job)))
    return jobs


def _sharded(ctx: GenContext, job: dict) -> dict:
    """Move relabel_configs to the end and add the sharding rules unless the job has its own hashmod."""
    if ctx.shards <= 1:
        return job
    rules = list(job.pop("relabel_configs", None) or [])
    if not any(str(r.get("action", "")).lower() == "hashmod" for r in rules if isinstance(r, Mapping)):
        rules += relabel.sharding_relabels(ctx.shards, ctx.options.shard_retention_policy)
    job["relabel_configs"] = rules
    return job


def additional_alert_relabel_configs(ctx: GenContext, scope: Scope) -> list:
    field = "spec.additionalAlertRelabelConfigs"
    items = load_list(scope, ctx.spec.get("additionalAlertRelabelConfigs"), field)
    return items if _relabels_ok(scope, ctx, items, field) else []


def additional_alertmanager_configs(ctx: GenContext, scope: Scope) -> list:
    field = "spec.additionalAlertManagerConfigs"
    out = []
    for i, item in enumerate(load_list(scope, ctx.spec.get("additionalAlertManagerConfigs"), field)):
        if not isinstance(item, Mapping):
            scope.warn(f"{field}[{i}]", "must be a mapping; item ignored")
            continue
        out.append(item)
    return out
