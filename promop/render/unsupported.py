"""Warnings for spec fields promop does not implement, so nothing is silently ignored.

SUPPORTED is the one place that says what the renderer reads, per kind, as a
tree: a field name maps to ALL (the whole subtree is used) or to a nested dict
of its supported sub-fields (applied to each item when the value is a list).
Anything present in an object but absent here produces a warning naming the
field. To support a new field, add it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.model import Problem, obj_meta

ALL: Mapping[str, Any] = {}  # sentinel: the whole subtree is supported
_ALL_MARK = id(ALL)

_SELECTOR = ALL
_SAFE_AUTH = {"type": ALL, "credentials": ALL}
_BASIC_AUTH = {"username": ALL, "password": ALL}
_OAUTH2 = ALL  # clientId, clientSecret, tokenUrl, scopes, endpointParams (auth.py)
_PROXY = {"proxyUrl": ALL, "noProxy": ALL, "proxyFromEnvironment": ALL, "proxyConnectHeader": ALL}
_TLS = {
    "ca": ALL, "cert": ALL, "keySecret": ALL, "caFile": ALL, "certFile": ALL, "keyFile": ALL,
    "serverName": ALL, "insecureSkipVerify": ALL, "minVersion": ALL, "maxVersion": ALL,
}
_RELABELINGS = ALL  # validated field by field by the config half

_ENDPOINT = {
    "port": ALL, "targetPort": ALL, "path": ALL, "scheme": ALL, "params": ALL, "interval": ALL,
    "scrapeTimeout": ALL, "honorLabels": ALL, "honorTimestamps": ALL, "trackTimestampsStaleness": ALL,
    "tlsConfig": _TLS, "bearerTokenFile": ALL, "bearerTokenSecret": ALL, "authorization": _SAFE_AUTH,
    "basicAuth": _BASIC_AUTH, "oauth2": _OAUTH2, **_PROXY, "relabelings": _RELABELINGS,
    "metricRelabelings": _RELABELINGS, "filterRunning": ALL, "followRedirects": ALL, "enableHttp2": ALL,
}
_SAFE_TLS = {k: v for k, v in _TLS.items() if not k.endswith("File")}
_POD_ENDPOINT = {**{k: (_SAFE_TLS if k == "tlsConfig" else v) for k, v in _ENDPOINT.items() if k != "bearerTokenFile"},
                 "portNumber": ALL}
_MONITOR_COMMON = {
    "jobLabel": ALL, "selector": _SELECTOR, "namespaceSelector": ALL, "sampleLimit": ALL, "targetLimit": ALL,
    "labelLimit": ALL, "labelNameLengthLimit": ALL, "labelValueLengthLimit": ALL, "keepDroppedTargets": ALL,
    "bodySizeLimit": ALL, "attachMetadata": ALL, "scrapeClass": ALL, "scrapeProtocols": ALL,
    "fallbackScrapeProtocol": ALL, "selectorMechanism": ALL, "scrapeClassicHistograms": ALL,
    "nativeHistogramBucketLimit": ALL, "nativeHistogramMinBucketFactor": ALL, "convertClassicHistogramsToNHCB": ALL,
    "scrapeNativeHistograms": ALL,
}

_ALERTMANAGER_ENDPOINT = {
    "namespace": ALL, "name": ALL, "port": ALL, "scheme": ALL, "pathPrefix": ALL, "tlsConfig": _TLS,
    "bearerTokenFile": ALL, "basicAuth": _BASIC_AUTH, "authorization": _SAFE_AUTH, "apiVersion": ALL,
    "timeout": ALL, "enableHttp2": ALL, "relabelings": _RELABELINGS, "alertRelabelings": _RELABELINGS, **_PROXY,
    "sigv4": ALL,  # promop/render/cloudauth.py
}
_REMOTE_WRITE = {
    "url": ALL, "name": ALL, "remoteTimeout": ALL, "headers": ALL, "writeRelabelConfigs": _RELABELINGS,
    "basicAuth": _BASIC_AUTH, "bearerTokenFile": ALL, "authorization": ALL, "oauth2": _OAUTH2, **_PROXY,
    "tlsConfig": _TLS,
    "queueConfig": ALL, "followRedirects": ALL, "enableHTTP2": ALL, "sendExemplars": ALL,
    "sendNativeHistograms": ALL, "metadataConfig": ALL, "messageVersion": ALL, "roundRobinDNS": ALL,
    "bearerToken": ALL,
    "sigv4": ALL, "azureAd": ALL,  # promop/render/cloudauth.py
}
_REMOTE_READ = {
    "url": ALL, "name": ALL, "remoteTimeout": ALL, "headers": ALL, "requiredMatchers": ALL, "readRecent": ALL,
    "filterExternalLabels": ALL, "basicAuth": _BASIC_AUTH, "bearerToken": ALL, "bearerTokenFile": ALL,
    "authorization": ALL, "oauth2": _OAUTH2, **_PROXY, "tlsConfig": _TLS, "followRedirects": ALL,
}

SUPPORTED: dict[str, Mapping[str, Any]] = {
    "ServiceMonitor": {**_MONITOR_COMMON, "endpoints": _ENDPOINT, "targetLabels": ALL, "podTargetLabels": ALL,
                       "serviceDiscoveryRole": ALL},
    "PodMonitor": {**_MONITOR_COMMON, "podMetricsEndpoints": _POD_ENDPOINT, "podTargetLabels": ALL},
    "PrometheusRule": {"groups": ALL},
    "Prometheus": {
        # selection and config (promop/render/config.py, globals.py, scrape.py, ...)
        "serviceMonitorSelector": ALL, "serviceMonitorNamespaceSelector": ALL, "podMonitorSelector": ALL,
        "podMonitorNamespaceSelector": ALL, "ruleSelector": ALL, "ruleNamespaceSelector": ALL,
        "probeSelector": ALL, "probeNamespaceSelector": ALL,  # Probes: promop/render/probe.py
        "scrapeInterval": ALL, "scrapeTimeout": ALL, "evaluationInterval": ALL, "externalLabels": ALL,
        "prometheusExternalLabelName": ALL, "replicaExternalLabelName": ALL, "scrapeProtocols": ALL,
        "ignoreNamespaceSelectors": ALL, "overrideHonorLabels": ALL, "overrideHonorTimestamps": ALL,
        "enforcedNamespaceLabel": ALL, "excludedFromEnforcement": ALL, "prometheusRulesExcludedFromEnforce": ALL,
        "enforcedSampleLimit": ALL, "enforcedTargetLimit": ALL, "enforcedLabelLimit": ALL,
        "enforcedLabelNameLengthLimit": ALL, "enforcedLabelValueLengthLimit": ALL,
        "enforcedKeepDroppedTargets": ALL, "enforcedBodySizeLimit": ALL, "sampleLimit": ALL, "targetLimit": ALL,
        "labelLimit": ALL, "labelNameLengthLimit": ALL, "labelValueLengthLimit": ALL, "keepDroppedTargets": ALL,
        "bodySizeLimit": ALL, "scrapeClasses": ALL, "serviceDiscoveryRole": ALL, "apiserverConfig": ALL,
        "arbitraryFSAccessThroughSMs": ALL, "podTargetLabels": ALL, "additionalScrapeConfigs": ALL, "additionalAlertRelabelConfigs": ALL,
        "additionalAlertManagerConfigs": ALL, "alerting": {"alertmanagers": _ALERTMANAGER_ENDPOINT},
        "remoteWrite": _REMOTE_WRITE, "remoteRead": _REMOTE_READ, "nameValidationScheme": ALL,
        "nameEscapingScheme": ALL, "scrapeNativeHistograms": ALL, "tsdb": ALL, "exemplars": ALL, "ruleQueryOffset": ALL, "runtime": ALL,
        "queryLogFile": ALL, "scrapeFailureLogFile": ALL, "scrapeClassicHistograms": ALL,
        "convertClassicHistogramsToNHCB": ALL, "otlp": ALL, "tracingConfig": ALL,  # otlp.py, tracing.py, tsdb.py
        # StatefulSet and rules (promop/render/statefulset.py, rules.py)
        "version": ALL, "image": ALL, "baseImage": ALL, "tag": ALL, "sha": ALL, "replicas": ALL, "shards": ALL,
        "shardingStrategy": ALL,  # promop/render/topology.py
        "serviceName": ALL, "portName": ALL, "listenLocal": ALL, "routePrefix": ALL, "externalUrl": ALL,
        "logLevel": ALL, "logFormat": ALL, "retention": ALL, "retentionSize": ALL, "enableAdminAPI": ALL,
        "enableFeatures": ALL, "enableRemoteWriteReceiver": ALL, "query": ALL, "walCompression": ALL,
        "remoteWriteReceiverMessageVersions": ALL,
        "additionalArgs": ALL, "reloadStrategy": ALL, "secrets": ALL, "configMaps": ALL, "volumes": ALL,
        "volumeMounts": ALL, "storage": ALL, "containers": ALL, "initContainers": ALL, "podMetadata": ALL,
        "resources": ALL, "imagePullPolicy": ALL, "imagePullSecrets": ALL, "serviceAccountName": ALL,
        "nodeSelector": ALL, "priorityClassName": ALL, "tolerations": ALL, "affinity": ALL,
        "topologySpreadConstraints": ALL, "securityContext": ALL, "dnsConfig": ALL,
        "dnsPolicy": ALL, "enableServiceLinks": ALL, "hostUsers": ALL, "schedulerName": ALL, "hostAliases": ALL,
        "hostNetwork": ALL, "automountServiceAccountToken": ALL, "terminationGracePeriodSeconds": ALL,
        "web": ALL,  # promop/render/webconfig.py
        "minReadySeconds": ALL, "persistentVolumeClaimRetentionPolicy": ALL, "maximumStartupDurationSeconds": ALL,
        "podManagementPolicy": ALL, "updateStrategy": ALL, "rules": {"alert": ALL}, "enableOTLPReceiver": ALL,
        "allowOverlappingBlocks": ALL, "disableCompaction": ALL,
        # the Thanos sidecar (promop/render/thanos/sidecar.py); upstream too reads only these TLS fields
        "thanos": {**{k: ALL for k in (
            "additionalArgs", "baseImage", "blockSize", "getConfigInterval", "getConfigTimeout", "grpcListenLocal",
            "httpListenLocal", "image", "listenLocal", "logFormat", "logLevel", "minTime", "objectStorageConfig",
            "objectStorageConfigFile", "readyTimeout", "resources", "sha", "tag", "tracingConfig",
            "tracingConfigFile", "version", "volumeMounts")},
            "grpcServerTlsConfig": {k: ALL for k in ("caFile", "certFile", "keyFile", "minVersion", "cipherSuites",
                                                     "curves")}},
        # operator behaviour (promop/operator)
        "paused": ALL, "shardRetentionPolicy": ALL,  # promop/operator/shard_retention.py
    },
}

# Why some well-known fields are ignored, to make the warning actionable.
REASONS = {
    ("Prometheus", "scrapeConfigSelector"): "ScrapeConfig objects are not supported",
    ("Prometheus", "scrapeConfigNamespaceSelector"): "ScrapeConfig objects are not supported",
}


# ScrapeConfig (promop/render/scrapeconfig) is implemented: its selectors are read, not ignored.
for _field in ("scrapeConfigSelector", "scrapeConfigNamespaceSelector"):
    SUPPORTED["Prometheus"][_field] = ALL  # type: ignore[index]
    REASONS.pop(("Prometheus", _field), None)


_LEAVES = frozenset({str, int, float, bool})


def _walk(value: Any, tree: Mapping[str, Any], path: str, out: list[str]) -> None:
    if id(tree) == _ALL_MARK:
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, tree, f"{path}[{i}]", out)
        return
    if not isinstance(value, Mapping):
        return
    for key, sub in value.items():
        if sub is None:
            continue
        if key not in tree:
            out.append(f"{path}.{key}")
        elif type(sub) not in _LEAVES:  # a scalar has no fields of its own: no call, no path for it
            _walk(sub, tree[key], f"{path}.{key}", out)


def unsupported_fields(obj: dict) -> list[Problem]:
    """One warning per spec field set in `obj` that promop does not implement or overrides."""
    kind = obj.get("kind", "")
    tree = SUPPORTED.get(kind)
    spec = obj.get("spec")
    if tree is None or not isinstance(spec, Mapping):
        return []
    namespace, name = obj_meta(obj)
    paths: list[str] = []
    _walk(spec, tree, "spec", paths)
    problems = []
    if kind == "Prometheus":
        from promop.render.statefulset import conflicting_additional_args  # avoids an import cycle at load

        for arg in conflicting_additional_args(spec):
            problems.append(Problem(kind, namespace, name, "spec.additionalArgs",
                                    f"--{arg.lstrip('-')} is managed by the operator; this additional argument "
                                    "is ignored"))
    for path in paths:
        top = path.split(".")[1].split("[")[0]
        reason = REASONS.get((kind, top), "not supported by promop")
        problems.append(Problem(kind, namespace, name, path, f"{reason}; the field is ignored"))
    return problems
