"""The checks upstream's resource selector makes on a ScrapeConfig before generation.

Upstream rejects the whole object (condition InvalidConfiguration) when a discovery or a field
needs a newer Prometheus, or when a discovery is inconsistent (a DNS record type other than SRV
without a port, Azure OAuth without credentials, ...). These are rejections, not silent drops:
each returns (field, message) pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from promop import fieldselector, labelselector
from promop.render import relabel
from promop.render.scrapeconfig import gourl
from promop.render.versions import Version

# A whole discovery upstream refuses below this Prometheus version.
SD_MIN_VERSIONS = {
    "httpSDConfigs": "2.28.0", "digitalOceanSDConfigs": "2.20.0", "linodeSDConfigs": "2.28.0",
    "dockerSwarmSDConfigs": "2.20.0", "puppetDBSDConfigs": "2.31.0",
    "lightSailSDConfigs": "2.27.0", "ovhcloudSDConfigs": "2.40.0", "scalewaySDConfigs": "2.26.0",
    "ionosSDConfigs": "2.36.0",
}
# (discovery, field) upstream refuses below this version.
FIELD_MIN_VERSIONS = {
    ("consulSDConfigs", "pathPrefix"): "2.45.0", ("consulSDConfigs", "namespace"): "2.28.0",
    ("consulSDConfigs", "filter"): "3.0.0", ("consulSDConfigs", "healthFilter"): "3.11.2",
    ("dockerSDConfigs", "matchFirstNetwork"): "2.54.1", ("hetznerSDConfigs", "labelSelector"): "3.5.0",
    ("azureSDConfigs", "resourceGroup"): "2.35.0", ("kumaSDConfigs", "clientID"): "2.50.0",
}
# (discovery, field, value) upstream refuses below this version.
VALUE_MIN_VERSIONS = {
    ("azureSDConfigs", "authenticationMethod", "SDK"): "2.52.0",
    ("azureSDConfigs", "authenticationMethod", "WorkloadIdentity"): "3.11.0",
    ("openstackSDConfigs", "role", "LoadBalancer"): "3.2.0",
    ("kubernetesSDConfigs", "role", "EndpointSlice"): "2.21.0",
}
# URL fields upstream's selector runs through Go's url.Parse (kuma `server` also needs a scheme and host).
URL_FIELDS = {"httpSDConfigs": "url", "dockerSDConfigs": "host", "dockerSwarmSDConfigs": "host",
              "puppetDBSDConfigs": "url", "kumaSDConfigs": "server"}
# The selector roles each Kubernetes discovery role accepts.
K8S_SELECTOR_ROLES = {
    "pod": {"pod"}, "service": {"service"}, "node": {"node"}, "ingress": {"ingress"},
    "endpoints": {"pod", "service", "endpoints"}, "endpointslice": {"pod", "service", "endpointslice"},
}


def selection_problems(spec: Mapping[str, Any], version: Version) -> list[tuple[str, str]]:
    """Every reason upstream's selector would reject this ScrapeConfig spec."""
    out: list[tuple[str, str]] = []
    for kind, minimum in SD_MIN_VERSIONS.items():
        if spec.get(kind) and not version.at_least(minimum):
            out.append((f"spec.{kind}", f"needs Prometheus >= {minimum}, but spec.version is {version}"))
    for kind in sorted(k for k, v in spec.items() if k.endswith("SDConfigs") and isinstance(v, list)):
        for i, item in enumerate(spec[kind]):
            if isinstance(item, Mapping):
                out += _item_problems(kind, item, f"spec.{kind}[{i}]", version)
    for i, static in enumerate(spec.get("staticConfigs") or ()):
        for name in (static.get("labels") or {}) if isinstance(static, Mapping) else ():
            if not relabel.valid_label_name(name, version):
                out.append((f"spec.staticConfigs[{i}].labels", f"{name!r} is not a valid label name for Prometheus {version}"))
    return out


def _item_problems(kind: str, item: Mapping[str, Any], field: str, version: Version) -> list[tuple[str, str]]:
    out = []
    for (k, key), minimum in FIELD_MIN_VERSIONS.items():
        if k == kind and item.get(key) is not None and not version.at_least(minimum):
            out.append((f"{field}.{key}", f"needs Prometheus >= {minimum}, but spec.version is {version}"))
    for (k, key, value), minimum in VALUE_MIN_VERSIONS.items():
        if k == kind and item.get(key) == value and not version.at_least(minimum):
            out.append((f"{field}.{key}", f"{key} {value} needs Prometheus >= {minimum}, but spec.version is {version}"))
    raw = item.get(URL_FIELDS.get(kind, ""))
    if kind in URL_FIELDS and (isinstance(raw, str) or kind in ("puppetDBSDConfigs", "kumaSDConfigs")):
        out += [(f"{field}.{URL_FIELDS[kind]}", m) for m in _url(kind, raw if isinstance(raw, str) else "")]
    check = _CHECKS.get(kind)
    if check is not None:
        out += [(f"{field}{sub}", message) for sub, message in check(item)]
    return out


def _url(kind: str, raw: str) -> list[str]:
    """url.Parse's error; PuppetDB also wants http(s) with a host, Kuma a scheme and a host."""
    try:
        url = gourl.parse(raw)
    except gourl.URLError as e:
        return [f"{e}; fix the URL"]
    if kind == "puppetDBSDConfigs" and url.scheme not in ("http", "https"):
        return [f"URL scheme must be 'http' or 'https', not {url.scheme!r}"]
    if kind == "puppetDBSDConfigs" and not url.host:
        return [f"host is missing in URL {raw!r}"]
    if kind == "kumaSDConfigs" and not (url.scheme and url.host):
        return [f"must not be empty and have a scheme and a host: {raw!r}"]
    return []


def _kubernetes(item: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    if item.get("apiServer") and (item.get("namespaces") or {}).get("ownNamespace"):
        out.append(("", "apiServer and namespaces.ownNamespace cannot be used together"))
    role = str(item.get("role") or "").lower()
    allowed = K8S_SELECTOR_ROLES.get(role, set())
    for j, sel in enumerate(item.get("selectors") or ()):
        sel = sel if isinstance(sel, Mapping) else {}
        if str(sel.get("role") or "").lower() not in allowed:
            out.append((f".selectors[{j}].role", f"role {item.get('role')} supports only "
                                                 f"{', '.join(sorted(allowed)) or 'no'} selectors"))
        out += [(f".selectors[{j}].{key}", m) for key, m in _selector_strings(sel)]
    return out


def _selector_strings(sel: Mapping[str, Any]) -> list[tuple[str, str]]:
    """apimachinery's labels.Parse and fields.ParseSelector, as upstream's selector runs them."""
    out = []
    for key, parse in (("label", labelselector.parse), ("field", fieldselector.parse_field_selector)):
        if isinstance(sel.get(key), str):
            try:
                parse(sel[key])
            except labelselector.SelectorError as e:
                out.append((key, f"{sel[key]!r} is not a valid {key} selector: {e}"))
    return out


def _dns(item: Mapping[str, Any]) -> list[tuple[str, str]]:
    if item.get("type") not in (None, "SRV") and item.get("port") is None:
        return [(".port", f"a port is required for DNS record type {item['type']}")]
    return []


def _azure(item: Mapping[str, Any]) -> list[tuple[str, str]]:
    if item.get("authenticationMethod") in ("ManagedIdentity", "SDK", "WorkloadIdentity"):
        return []
    missing = [f for f in ("tenantID", "clientID", "clientSecret") if not item.get(f)]
    if missing:
        return [("", f"OAuth authentication (the default) needs {', '.join(missing)}")]
    return []


_CHECKS = {"kubernetesSDConfigs": _kubernetes, "dnsSDConfigs": _dns, "azureSDConfigs": _azure}
