"""Service discoveries of a ScrapeConfig: CRD lists (`consulSDConfigs`) to Prometheus lists (`consul_sd_configs`).

Most fields are a plain rename (camelCase to snake_case, with the CRD's acronyms spelled out in
RENAMES); Secret-backed fields are read and inlined (SECRET_FIELDS); the HTTP client options go
through httpclient. Fields a Prometheus version does not know are dropped with a warning, as
upstream does (MIN_VERSIONS).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from promop.render.scrapeconfig import httpclient
from promop.render.store import Reject, Scope

# CRD list field -> Prometheus list key, in upstream's order of generation.
SD_LISTS = (
    ("kubernetesSDConfigs", "kubernetes_sd_configs"),
    ("consulSDConfigs", "consul_sd_configs"),
    ("httpSDConfigs", "http_sd_configs"),
    ("fileSDConfigs", "file_sd_configs"),
    ("staticConfigs", "static_configs"),
    ("dnsSDConfigs", "dns_sd_configs"),
    ("ec2SDConfigs", "ec2_sd_configs"),
    ("azureSDConfigs", "azure_sd_configs"),
    ("gceSDConfigs", "gce_sd_configs"),
    ("openstackSDConfigs", "openstack_sd_configs"),
    ("digitalOceanSDConfigs", "digitalocean_sd_configs"),
    ("kumaSDConfigs", "kuma_sd_configs"),
    ("eurekaSDConfigs", "eureka_sd_configs"),
    ("dockerSDConfigs", "docker_sd_configs"),
    ("linodeSDConfigs", "linode_sd_configs"),
    ("hetznerSDConfigs", "hetzner_sd_configs"),
    ("nomadSDConfigs", "nomad_sd_configs"),
    ("dockerSwarmSDConfigs", "dockerswarm_sd_configs"),
    ("puppetDBSDConfigs", "puppetdb_sd_configs"),
    ("lightSailSDConfigs", "lightsail_sd_configs"),
    ("ovhcloudSDConfigs", "ovhcloud_sd_configs"),
    ("scalewaySDConfigs", "scaleway_sd_configs"),
    ("ionosSDConfigs", "ionos_sd_configs"),
)

# Whole discoveries too new for the Prometheus are rejected before generation (selection_checks.py).
SD_MIN_VERSIONS: dict[str, str] = {}

# CRD field names that a mechanical camelCase -> snake_case gets wrong.
RENAMES = {
    "clientID": "client_id", "subscriptionID": "subscription_id", "tenantID": "tenant_id", "roleARN": "role_arn",
    "datacenterID": "datacenter_id", "domainID": "domain_id", "projectID": "project_id", "apiURL": "api_url",
    "applicationCredentialId": "application_credential_id", "userid": "userid", "apiServer": "api_server",
    "enableHTTP2": "enable_http2", "tokenRef": "token", "url": "url",
}

# (discovery list, field) read from a Secret and inlined.
SECRET_FIELDS = {
    ("consulSDConfigs", "tokenRef"), ("ec2SDConfigs", "accessKey"), ("ec2SDConfigs", "secretKey"),
    ("lightSailSDConfigs", "accessKey"), ("lightSailSDConfigs", "secretKey"), ("azureSDConfigs", "clientSecret"),
    ("openstackSDConfigs", "password"), ("openstackSDConfigs", "applicationCredentialSecret"),
    ("ovhcloudSDConfigs", "applicationSecret"), ("ovhcloudSDConfigs", "consumerKey"),
    ("scalewaySDConfigs", "secretKey"),
}

# Enum values upstream lowercases (the CRD takes `Node`, Prometheus wants `node`).
LOWERCASED = {
    ("kubernetesSDConfigs", "role"), ("dockerSwarmSDConfigs", "role"), ("hetznerSDConfigs", "role"),
    ("openstackSDConfigs", "role"), ("scalewaySDConfigs", "role"), ("consulSDConfigs", "scheme"),
    ("openstackSDConfigs", "availability"), ("eurekaSDConfigs", "scheme"),
    ("azureSDConfigs", "authenticationMethod"),
}
# Azure's authentication methods are spelled as Prometheus wants them.
KEEP_CASE = {("azureSDConfigs", "authenticationMethod")}

# (discovery list, field) -> minimum Prometheus version; older versions drop the field.
MIN_VERSIONS = {
    ("ec2SDConfigs", "filters"): "2.3.0",
    ("kubernetesSDConfigs", "selectors"): "2.17.0",
    ("lightSailSDConfigs", "endpoint"): "2.27.0",
    ("gceSDConfigs", "filter"): "2.0.0",
}
# HTTP client options upstream does not write for a discovery (dropped with a warning).
IGNORED_CLIENT_FIELDS = {"azureSDConfigs": ("tlsConfig", "followRedirects", "enableHTTP2")}
# List values upstream sorts (by name) before writing them.
SORTED_BY_NAME = {("dockerSDConfigs", "filters"), ("dockerSwarmSDConfigs", "filters")}
# Discoveries whose HTTP client options (TLS, proxy, ...) Prometheus reads only from this version.
HTTP_CLIENT_MIN_VERSIONS = {"ec2SDConfigs": "2.41.0", "lightSailSDConfigs": "2.41.0"}

DNS_TYPE_MIN_VERSIONS = {"MX": "2.38.0", "NS": "2.49.0"}

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    return RENAMES.get(name) or _CAMEL.sub("_", name).lower()


def sd_configs(scope: Scope, spec: Mapping[str, Any], job: dict, namespace: str) -> None:
    """Every service discovery `spec` sets, into `job` under its Prometheus key."""
    for crd_key, prom_key in SD_LISTS:
        items = spec.get(crd_key)
        if not items:
            continue
        field = f"spec.{crd_key}"
        minimum = SD_MIN_VERSIONS.get(crd_key)
        if minimum and not scope.version.at_least(minimum):
            scope.warn(field, f"ignored: {prom_key} needs Prometheus >= {minimum}, but spec.version is {scope.version}")
            continue
        if not isinstance(items, list):
            raise Reject(field, "must be a list")
        job[prom_key] = [one_sd(scope, crd_key, item, f"{field}[{i}]", namespace) for i, item in enumerate(items)]


def one_sd(scope: Scope, kind: str, item: Any, field: str, namespace: str) -> dict:
    if not isinstance(item, Mapping):
        raise Reject(field, "must be a mapping")
    if kind == "staticConfigs":
        return _static(item)
    out: dict = {}
    client_minimum = HTTP_CLIENT_MIN_VERSIONS.get(kind)
    has_client = any(k in item for k in httpclient.HTTP_CLIENT_FIELDS)
    if has_client and client_minimum and not scope.version.at_least(client_minimum):
        scope.warn(field, f"ignored: HTTP client options of {kind} need Prometheus >= {client_minimum}, "
                          f"but spec.version is {scope.version}")
    elif has_client:
        ignored = IGNORED_CLIENT_FIELDS.get(kind, ())
        for key in ignored:
            if item.get(key) is not None:
                scope.warn(f"{field}.{key}", f"ignored: {kind} does not use {key} (as upstream)")
        httpclient.http_client(scope, {k: v for k, v in item.items() if k not in ignored}, out, field)
    for key, value in item.items():
        if key in httpclient.HTTP_CLIENT_FIELDS or value is None:
            continue
        minimum = MIN_VERSIONS.get((kind, key))
        if minimum and not scope.version.at_least(minimum):
            scope.warn(f"{field}.{key}", f"ignored: needs Prometheus >= {minimum}, but spec.version is {scope.version}")
            continue
        out[snake(key)] = _value(scope, kind, key, value, f"{field}.{key}", namespace)
    _special(scope, kind, item, out, field)
    return out


def _value(scope: Scope, kind: str, key: str, value: Any, field: str, namespace: str) -> Any:
    if (kind, key) in SECRET_FIELDS:
        return scope.read("Secret", value, field) or ""
    if (kind, key) == ("ovhcloudSDConfigs", "service") and isinstance(value, str):
        return _CAMEL.sub("_", value).lower()  # DedicatedServer -> dedicated_server
    if (kind, key) in LOWERCASED and (kind, key) not in KEEP_CASE and isinstance(value, str):
        return value.lower()
    if kind == "kubernetesSDConfigs":
        if key == "namespaces":
            return _k8s_namespaces(value, namespace)
        if key == "selectors":
            return [{k: (v.lower() if k == "role" else v) for k, v in s.items()} for s in value]
    if isinstance(value, Mapping):
        if key in ("nodeMeta", "params"):
            return dict(value)
        return {snake(k): v for k, v in value.items()}
    if (kind, key) in SORTED_BY_NAME and isinstance(value, list):
        value = sorted(value, key=lambda f: str(f.get("name")) if isinstance(f, Mapping) else "")
    if isinstance(value, list):
        return [({snake(k): v for k, v in v_.items()} if isinstance(v_, Mapping) else v_) for v_ in value]
    return value


def _k8s_namespaces(value: Mapping[str, Any], namespace: str) -> dict:
    out: dict = {}
    if value.get("names"):
        out["names"] = list(value["names"])
    if value.get("ownNamespace") is not None:
        out["own_namespace"] = bool(value["ownNamespace"])
    return out


def _special(scope: Scope, kind: str, item: Mapping[str, Any], out: dict, field: str) -> None:
    """Rules beyond renaming: Prometheus' own refusals, and fields that apply to some roles only."""
    if kind == "kubernetesSDConfigs":
        role = out.get("role")
        if "attach_metadata" in out:
            if role not in ("pod", "endpoints", "endpointslice") or not scope.version.at_least("2.35.0"):
                scope.warn(f"{field}.attachMetadata", f"ignored: attachMetadata is not supported for role {role!r} "
                                                      f"with Prometheus {scope.version}")
                del out["attach_metadata"]
    minimum = DNS_TYPE_MIN_VERSIONS.get(out.get("type")) if kind == "dnsSDConfigs" else None
    if minimum and not scope.version.at_least(minimum):
        scope.warn(f"{field}.type", f"ignored: DNS record type {out['type']} needs Prometheus >= {minimum}, "
                                    f"but spec.version is {scope.version}")
        del out["type"]


def _static(item: Mapping[str, Any]) -> dict:
    # upstream always writes labels, `{}` when none
    return {"targets": list(item.get("targets") or ()), "labels": dict(item.get("labels") or {})}
