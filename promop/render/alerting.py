"""The `alerting` section: Alertmanager endpoints discovered through Kubernetes, and alert relabeling."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from promop.render import auth, cloudauth, relabel
from promop.render.additional import additional_alert_relabel_configs, additional_alertmanager_configs
from promop.render.context import GenContext
from promop.duration import DurationError, parse_duration
from promop.render.globals import replica_label_name
from promop.render.store import Reject, Scope
from promop.render.tls_assets import tls_config


def alerting_section(ctx: GenContext, scope: Scope) -> dict | None:
    """None when there is nothing to alert to, as upstream."""
    spec_alerting = ctx.spec.get("alerting")
    extra_relabels = additional_alert_relabel_configs(ctx, scope)
    extra_ams = additional_alertmanager_configs(ctx, scope)
    if not spec_alerting and not extra_relabels and not extra_ams:
        return None
    replica = replica_label_name(ctx)
    relabels: list = []
    if replica:
        relabels.append({"action": "labeldrop", "regex": re.escape(replica)})
    relabels += extra_relabels
    ams = []
    for i, am in enumerate((spec_alerting or {}).get("alertmanagers") or ()):
        field = f"spec.alerting.alertmanagers[{i}]"
        try:
            ams.append(_alertmanager(ctx, scope, am, field))
        except Reject as e:
            scope.warn(e.field, f"{e.message}; this Alertmanager endpoint is ignored")
    ams += extra_ams
    return {"alert_relabel_configs": relabels, "alertmanagers": ams}


def _alertmanager(ctx: GenContext, scope: Scope, am: Mapping[str, Any], field: str) -> dict:
    if not isinstance(am, Mapping) or not am.get("name"):
        raise Reject(field, "an Alertmanager endpoint needs a name (of its Service)")
    out: dict = {}
    if am.get("scheme"):
        out["scheme"] = str(am["scheme"]).lower()
    if am.get("pathPrefix"):
        out["path_prefix"] = am["pathPrefix"]
    if am.get("timeout"):
        try:
            parse_duration(am["timeout"])
        except DurationError as e:
            raise Reject(f"{field}.timeout", str(e)) from None
        out["timeout"] = am["timeout"]
    if am.get("enableHttp2") is not None:
        scope.put(out, "enable_http2", bool(am["enableHttp2"]), "2.35.0", f"{field}.enableHttp2")
    if am.get("tlsConfig"):
        out["tls_config"] = tls_config(scope, am["tlsConfig"], f"{field}.tlsConfig")
    auth.proxy(scope, am, out, field)
    wanted = ctx.spec.get("serviceDiscoveryRole")
    role = (
        "endpointslice"
        if wanted == "EndpointSlice" and ctx.options.endpointslice_supported and ctx.version.at_least("2.21.0")
        else "endpoints"
    )
    sd = {"role": role, "namespaces": {"names": [am.get("namespace") or ctx.namespace]}}
    sd.update(copy.deepcopy(ctx.apiserver_sd))
    out["kubernetes_sd_configs"] = [sd]
    cloudauth.check_methods(am, field, cloudauth.ALERTMANAGER_METHODS)
    auth.credentials(scope, am, out, field)
    if "basic_auth" in out:  # upstream: Alertmanager basic auth needs 2.26 (AlertmanagerBasicAuth_Invalid_Prom_Version.golden)
        scope.put(out, "basic_auth", out.pop("basic_auth"), "2.26.0", f"{field}.basicAuth")
    cloudauth.alertmanager_sigv4(scope, am, out, field)
    version = am.get("apiVersion")
    if version and str(version).lower() not in ("v1", "v2"):
        raise Reject(f"{field}.apiVersion", f"{version!r} is not an Alertmanager API version; use v2")
    if version:
        if str(version).lower() == "v1" and ctx.version.major >= 3:
            scope.warn(f"{field}.apiVersion", "Alertmanager API v1 is not supported by Prometheus 3; using v2")
        else:
            out["api_version"] = str(version).lower()
    meta = "__meta_kubernetes_endpointslice" if role == "endpointslice" else "__meta_kubernetes_endpoint"
    rules: list = [{"action": "keep", "source_labels": ["__meta_kubernetes_service_name"], "regex": am["name"]}]
    port = am.get("port")
    if isinstance(port, int) and not isinstance(port, bool):
        if port:  # upstream: no keep rule for port 0
            rules.append({"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": port})
    elif port:
        rules.append({"action": "keep", "source_labels": [f"{meta}_port_name"], "regex": port})
    rules += relabel.checked(am.get("relabelings") or [], ctx.version, f"{field}.relabelings")
    out["relabel_configs"] = rules
    if am.get("alertRelabelings"):
        alert_rules = relabel.checked(am["alertRelabelings"], ctx.version, f"{field}.alertRelabelings")
        scope.put(out, "alert_relabel_configs", alert_rules, "2.51.0", f"{field}.alertRelabelings")
    return out
