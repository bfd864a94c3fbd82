"""render(): every object the operator writes for one Alertmanager, and references() it needs read first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.alertmanager.base import user_secret_name
from promop.render.alertmanager.cache import AMRenderCache
from promop.render.alertmanager.common import AMScope, Fatal, Store
from promop.render.alertmanager.config import build_config
from promop.render.alertmanager.model import AMRenderInputs, AMRenderResult
from promop.render.alertmanager.secrets import (cluster_tls_secret, generated_secret, tls_asset_secrets,
                                                web_config_secret)
from promop.render.alertmanager.selection import select_configs
from promop.render.alertmanager.statefulset import (build_service, build_statefulset, compute_input_hash,
                                                    conflicting_additional_args, version_of)
from promop.render.alertmanager.webtls import CLUSTER_TLS_SINCE, WEB_TLS_SINCE, cluster_tls, tls_references, web_tls
from promop.render.model import ObjectRef, Problem, obj_meta


def render(inputs: AMRenderInputs, cache: AMRenderCache | None = None) -> AMRenderResult:
    """Pure: equal inputs give equal outputs, with or without `cache` (one per Alertmanager)."""
    am = inputs.alertmanager
    spec = am.get("spec") or {}
    ns, name = obj_meta(am)
    options = inputs.options
    cfg = build_config(am, inputs.alertmanager_configs, inputs.namespaces, Store(inputs.secrets, inputs.configmaps),
                       cache=cache)
    warnings = list(cfg.warnings)
    for field, message in (("spec.baseImage", 'field "spec.baseImage" is deprecated, field "spec.image" should be used instead'),
                           ("spec.tag", 'field "spec.tag" is deprecated, field "spec.image" should be used instead'),
                           ("spec.sha", 'field "spec.sha" is deprecated, field "spec.image" should be used instead')):
        if spec.get(field.split(".")[1]):
            warnings.append(Problem("Alertmanager", ns, name, field, message))
    fatal = cfg.fatal
    v = version_of(spec)
    web = cluster = None
    scope = AMScope(Store(inputs.secrets, inputs.configmaps), "Alertmanager", ns, name, cfg.version or v)
    try:
        web = web_tls(scope, spec)
        cluster = cluster_tls(scope, spec)
    except Fatal as exc:
        fatal = fatal or exc
    warnings += scope.warnings  # optional TLS references that are missing (webtls._optional)
    conflicts = conflicting_additional_args(am, options)
    if conflicts and fatal is None:
        fatal = Fatal("spec.additionalArgs", f"argument {conflicts[0]!r} is managed by the operator; remove it")
    tls = tls_asset_secrets(am, options, cfg.assets)
    tls_names = [s["metadata"]["name"] for s in tls]
    input_hash = compute_input_hash(am, options, tls_names)
    generated = None
    if fatal is None:
        generated = generated_secret(am, options, cfg.text, cfg.extra_data)
    return AMRenderResult(
        config=cfg.config if fatal is None else None,
        config_text=cfg.text if fatal is None else "",
        generated_secret=generated,
        tls_secrets=tls,
        web_config_secret=web_config_secret(am, options, web.section if web else None)
        if v.at_least(WEB_TLS_SINCE) else None,
        cluster_tls_secret=cluster_tls_secret(am, options, cluster.section if cluster else None)
        if v.at_least(CLUSTER_TLS_SINCE) and spec.get("clusterTLS") else None,
        service=None if spec.get("serviceName") else build_service(am, options),
        statefulset=build_statefulset(am, options, tls_names, input_hash, web=web, cluster=cluster),
        selection=cfg.selection,
        rejected=cfg.rejected,
        warnings=warnings,
        fatal=fatal,
        unmanaged=cfg.unmanaged,
        input_hash=input_hash,
    )


_SECRET_KEYS = frozenset({"apiKey", "apiSecret", "apiURL", "webhookUrl", "webhookURL", "urlSecret", "routingKey",
                          "serviceKey", "userKey", "token", "tokenID", "botToken", "authPassword", "authSecret",
                          "credentials", "username", "password", "clientSecret", "bearerTokenSecret", "keySecret",
                          "accessKey", "secretKey", "slackApiUrl", "opsGenieApiUrl", "opsGenieApiKey", "apiKey",
                          "webhookURL", "secret"})


def _walk(value: Any, namespace: str, out: set[ObjectRef], key: str = "") -> None:
    if isinstance(value, Mapping):
        if isinstance(value.get("name"), str) and "key" in value and key:
            if key == "configMap":
                out.add(ObjectRef("ConfigMap", namespace, value["name"]))
                return
            if key in _SECRET_KEYS or key == "secret":
                out.add(ObjectRef("Secret", namespace, value["name"]))
                return
        if key == "proxyConnectHeader":
            for refs in value.values():
                for r in refs if isinstance(refs, list) else ():
                    _walk(r, namespace, out, "secret")
            return
        for k, v in value.items():
            _walk(v, namespace, out, k)
    elif isinstance(value, list):
        for item in value:
            _walk(item, namespace, out, key)


def _refs_of(obj: Mapping[str, Any], namespace: str) -> frozenset[ObjectRef]:
    found: set[ObjectRef] = set()
    _walk(obj.get("spec") or {}, namespace, found)
    return frozenset(found)


def references(inputs: AMRenderInputs, cache: AMRenderCache | None = None) -> set[ObjectRef]:
    """Secrets and ConfigMaps a render of `inputs` may read: fetch these into inputs.secrets/configmaps.
    With the render's cache, each unchanged object's references are memoised (same result)."""
    am = inputs.alertmanager
    ns, _ = obj_meta(am)
    out: set[ObjectRef] = {ObjectRef("Secret", ns, user_secret_name(am))}
    spec = am.get("spec") or {}
    out |= {ObjectRef(kind, ns, name) for kind, name in tls_references(spec)}
    _walk(spec.get("alertmanagerConfiguration") or {}, ns, out)
    global_name = (spec.get("alertmanagerConfiguration") or {}).get("name")
    chosen = {(d.namespace, d.name) for d in select_configs(am, inputs.alertmanager_configs, inputs.namespaces)
              if d.selected}
    for amc in inputs.alertmanager_configs:
        key = obj_meta(amc)
        if key in chosen or (global_name and key == (ns, global_name)):
            if cache is None:
                _walk(amc.get("spec") or {}, key[0], out)
            else:
                out |= cache.references(amc, lambda a=amc, n=key[0]: _refs_of(a, n))
    return out
