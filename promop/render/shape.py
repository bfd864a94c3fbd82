"""Type checks of monitor objects against the CRD's shapes, before any deeper validation.

Objects read from files (the CLI) or created without the CRD schema can hold a
list where a mapping belongs; these checks turn that into a rejection naming
the field instead of an exception that would stop the whole render.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STR, BOOL, INT = "string", "boolean", "integer"
INT_OR_STR = "integer or string"


def _list(item: Any) -> tuple:
    return ("list", item)


def _map(values: Any) -> tuple:
    return ("map", values)  # free keys, each value of shape `values`


KEY_SELECTOR = {"name": STR, "key": STR, "optional": BOOL}
SECRET_OR_CONFIGMAP = {"secret": KEY_SELECTOR, "configMap": KEY_SELECTOR}
TLS = {
    "ca": SECRET_OR_CONFIGMAP, "cert": SECRET_OR_CONFIGMAP, "keySecret": KEY_SELECTOR, "caFile": STR,
    "certFile": STR, "keyFile": STR, "serverName": STR, "insecureSkipVerify": BOOL, "minVersion": STR,
    "maxVersion": STR,
}
PROXY = {"proxyUrl": STR, "noProxy": STR, "proxyFromEnvironment": BOOL, "proxyConnectHeader": _map(_list(KEY_SELECTOR))}
RELABEL = {
    "sourceLabels": _list(STR), "separator": STR, "targetLabel": STR, "regex": STR, "modulus": INT,
    "replacement": STR, "action": STR,
}
ENDPOINT = {
    "port": STR, "targetPort": INT_OR_STR, "portNumber": INT, "path": STR, "scheme": STR,
    "params": _map(_list(STR)), "interval": STR, "scrapeTimeout": STR, "honorLabels": BOOL,
    "honorTimestamps": BOOL, "trackTimestampsStaleness": BOOL, "tlsConfig": TLS, "bearerTokenFile": STR,
    "bearerTokenSecret": KEY_SELECTOR, "authorization": {"type": STR, "credentials": KEY_SELECTOR, "credentialsFile": STR},
    "basicAuth": {"username": KEY_SELECTOR, "password": KEY_SELECTOR},
    "oauth2": {"clientId": SECRET_OR_CONFIGMAP, "clientSecret": KEY_SELECTOR, "tokenUrl": STR, "scopes": _list(STR),
               "endpointParams": _map(STR), "tlsConfig": TLS, **PROXY},
    **PROXY, "relabelings": _list(RELABEL), "metricRelabelings": _list(RELABEL), "filterRunning": BOOL,
    "followRedirects": BOOL, "enableHttp2": BOOL,
}
SELECTOR = {
    "matchLabels": _map(STR),
    "matchExpressions": _list({"key": STR, "operator": STR, "values": _list(STR)}),
}
MONITOR_SPEC = {
    "selector": SELECTOR, "namespaceSelector": {"any": BOOL, "matchNames": _list(STR)}, "jobLabel": STR,
    "targetLabels": _list(STR), "podTargetLabels": _list(STR), "scrapeClass": STR, "selectorMechanism": STR,
    "serviceDiscoveryRole": STR, "attachMetadata": {"node": BOOL}, "scrapeProtocols": _list(STR),
    "fallbackScrapeProtocol": STR, "bodySizeLimit": STR, "sampleLimit": INT, "targetLimit": INT, "labelLimit": INT,
    "labelNameLengthLimit": INT, "labelValueLengthLimit": INT, "keepDroppedTargets": INT,
    "nativeHistogramBucketLimit": INT, "scrapeClassicHistograms": BOOL, "convertClassicHistogramsToNHCB": BOOL,
    "endpoints": _list(ENDPOINT), "podMetricsEndpoints": _list(ENDPOINT),
}


def _type_ok(value: Any, want: str) -> bool:
    if want == STR:
        return isinstance(value, str)
    if want == BOOL:
        return isinstance(value, bool)
    if want == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _shape_ok(value: Any, shape: Any) -> bool:
    """True when shape_problems would find nothing: the same walk without building a path per field
    (nearly every object is well-typed; at 10,000 ServiceMonitors the paths were most of the cost)."""
    if value is None:
        return True
    if type(shape) is str:
        return _type_ok(value, shape)
    if type(shape) is tuple:
        kind, inner = shape
        if kind == "list":
            if not isinstance(value, list):
                return False
            items = value
        elif type(value) is dict or isinstance(value, Mapping):
            items = value.values()
        else:
            return False
        for item in items:  # a loop, not all(<generator>): this runs for every field of every monitor
            if not _shape_ok(item, inner):
                return False
        return True
    if type(value) is not dict and not isinstance(value, Mapping):
        return False
    get = shape.get
    for key, v in value.items():  # the object's few fields, not the shape's many
        sub = get(key)
        if sub is not None and not _shape_ok(v, sub):
            return False
    return True


def shape_problems(value: Any, shape: Any, path: str) -> list[tuple[str, str]]:
    """(field, message) for every value of the wrong type; None values count as unset.

    Unknown keys are not reported here (unsupported.py warns about those).
    """
    if _shape_ok(value, shape):
        return []
    return _problems(value, shape, path)


def _problems(value: Any, shape: Any, path: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if isinstance(shape, str):
        return [] if _type_ok(value, shape) else [(path, f"must be a {shape}, got {value!r}")]
    if isinstance(shape, tuple):
        kind, inner = shape
        if kind == "list":
            if not isinstance(value, list):
                return [(path, f"must be a list, got {value!r}")]
            return [p for i, item in enumerate(value) for p in _problems(item, inner, f"{path}[{i}]")]
        if not isinstance(value, Mapping):
            return [(path, f"must be a mapping, got {value!r}")]
        return [p for k, v in value.items() for p in _problems(v, inner, f"{path}.{k}")]
    if not isinstance(value, Mapping):
        return [(path, f"must be a mapping, got {value!r}")]
    out: list[tuple[str, str]] = []
    for key, sub in shape.items():
        if key in value:
            out += _problems(value[key], sub, f"{path}.{key}")
    return out


_BASIC_AUTH = {"username": KEY_SELECTOR, "password": KEY_SELECTOR}
_AUTHZ = {"type": STR, "credentials": KEY_SELECTOR, "credentialsFile": STR}
_ALERTMANAGER = {
    "namespace": STR, "name": STR, "port": INT_OR_STR, "scheme": STR, "pathPrefix": STR, "tlsConfig": TLS,
    "bearerTokenFile": STR, "basicAuth": _BASIC_AUTH, "authorization": _AUTHZ, "apiVersion": STR, "timeout": STR,
    "enableHttp2": BOOL, "relabelings": _list(RELABEL), "alertRelabelings": _list(RELABEL), **PROXY,
}
_REMOTE_WRITE = {
    "url": STR, "name": STR, "remoteTimeout": STR, "headers": _map(STR), "writeRelabelConfigs": _list(RELABEL),
    "basicAuth": _BASIC_AUTH, "bearerTokenFile": STR, "authorization": _AUTHZ, "oauth2": ENDPOINT["oauth2"],
    **PROXY, "tlsConfig": TLS, "followRedirects": BOOL, "enableHTTP2": BOOL, "sendExemplars": BOOL,
    "sendNativeHistograms": BOOL, "messageVersion": STR, "roundRobinDNS": BOOL,
    "queueConfig": {"capacity": INT, "minShards": INT, "maxShards": INT, "maxSamplesPerSend": INT,
                    "batchSendDeadline": STR, "maxRetries": INT, "minBackoff": STR, "maxBackoff": STR,
                    "retryOnRateLimit": BOOL, "sampleAgeLimit": STR},
    "metadataConfig": {"send": BOOL, "sendInterval": STR, "maxSamplesPerSend": INT},
}
# The Prometheus spec fields config generation reads (selectors are checked by parse_selector).
PROMETHEUS_CONFIG_SPEC = {
    "scrapeInterval": STR, "scrapeTimeout": STR, "evaluationInterval": STR, "externalLabels": _map(STR),
    "prometheusExternalLabelName": STR, "replicaExternalLabelName": STR, "scrapeProtocols": _list(STR),
    "ignoreNamespaceSelectors": BOOL, "overrideHonorLabels": BOOL, "overrideHonorTimestamps": BOOL,
    "enforcedNamespaceLabel": STR,
    "excludedFromEnforcement": _list({"group": STR, "resource": STR, "namespace": STR, "name": STR}),
    **{f: INT for f in ("enforcedSampleLimit", "enforcedTargetLimit", "enforcedLabelLimit",
                        "enforcedLabelNameLengthLimit", "enforcedLabelValueLengthLimit", "enforcedKeepDroppedTargets",
                        "sampleLimit", "targetLimit", "labelLimit", "labelNameLengthLimit", "labelValueLengthLimit",
                        "keepDroppedTargets", "shards")},
    "enforcedBodySizeLimit": STR, "bodySizeLimit": STR,
    "scrapeClasses": _list({"name": STR, "default": BOOL, "tlsConfig": TLS, "authorization": _AUTHZ,
                            "relabelings": _list(RELABEL), "metricRelabelings": _list(RELABEL),
                            "attachMetadata": {"node": BOOL}, "fallbackScrapeProtocol": STR}),
    "serviceDiscoveryRole": STR,
    "apiserverConfig": {"host": STR, "basicAuth": _BASIC_AUTH, "bearerToken": STR, "bearerTokenFile": STR,
                        "authorization": _AUTHZ, "tlsConfig": TLS},
    "arbitraryFSAccessThroughSMs": {"deny": BOOL},
    "additionalScrapeConfigs": KEY_SELECTOR, "additionalAlertRelabelConfigs": KEY_SELECTOR,
    "additionalAlertManagerConfigs": KEY_SELECTOR,
    "alerting": {"alertmanagers": _list(_ALERTMANAGER)}, "remoteWrite": _list(_REMOTE_WRITE),
    "tsdb": {"outOfOrderTimeWindow": STR}, "exemplars": {"maxSize": INT}, "ruleQueryOffset": STR,
    "runtime": {"goGC": INT}, "queryLogFile": STR, "scrapeFailureLogFile": STR, "podTargetLabels": _list(STR),
    "retention": STR, "retentionSize": STR, "scrapeClassicHistograms": BOOL, "convertClassicHistogramsToNHCB": BOOL,
}


def sanitized_prometheus(prometheus: Mapping[str, Any]) -> tuple[dict, list[tuple[str, str]]]:
    """The Prometheus with every config field of the wrong shape removed, and why.

    The Prometheus cannot be rejected like a monitor, so a malformed field is
    ignored (with a warning) and the rest still renders.
    """
    spec = prometheus.get("spec")
    if not isinstance(spec, Mapping):
        return {**prometheus, "spec": {}}, ([("spec", "must be a mapping; ignored")] if spec is not None else [])
    problems: list[tuple[str, str]] = []
    clean = dict(spec)
    for key, shape in PROMETHEUS_CONFIG_SPEC.items():
        found = shape_problems(spec.get(key), shape, f"spec.{key}")
        if found:
            problems += [(f, f"{m}; spec.{key} is ignored") for f, m in found]
            del clean[key]
    return ({**prometheus, "spec": clean} if problems else dict(prometheus)), problems
