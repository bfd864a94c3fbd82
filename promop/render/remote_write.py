"""The `remote_write` and `remote_read` sections, keys and version gates as upstream's
GenerateRemoteWriteConfig / generateRemoteReadConfig; an entry with a bad reference is
dropped with a warning."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from promop.render import auth, cloudauth, relabel
from promop.render.context import GenContext
from promop.duration import DurationError, parse_duration
from promop.render.store import Reject, Scope
from promop.render.tls_assets import tls_config

# Prometheus refuses a config that sets these (config.reservedHeaders).
_RESERVED_HEADERS = frozenset({
    "authorization", "host", "content-encoding", "content-length", "content-type", "user-agent", "connection",
    "keep-alive", "proxy-authenticate", "proxy-authorization", "www-authenticate", "retry-after",
    "x-prometheus-remote-write-version",
})

# CRD queueConfig field -> (config key, minimum version, is a duration). Upstream emits the
# integers only when non-zero and retry_on_http_429 only when true.
_QUEUE = (
    ("capacity", "capacity", None, False),
    ("minShards", "min_shards", "2.6.0", False),
    ("maxShards", "max_shards", None, False),
    ("maxSamplesPerSend", "max_samples_per_send", None, False),
    ("batchSendDeadline", "batch_send_deadline", None, True),
    ("maxRetries", "max_retries", None, False),  # only before 2.11.0 (MAX_RETRIES_BEFORE)
    ("minBackoff", "min_backoff", None, True),
    ("maxBackoff", "max_backoff", None, True),
    ("retryOnRateLimit", "retry_on_http_429", "2.26.0", False),
    ("sampleAgeLimit", "sample_age_limit", "2.50.0", True),
)
_QUEUE_SKIP_FALSY = {"capacity", "minShards", "maxShards", "maxSamplesPerSend", "maxRetries", "retryOnRateLimit"}
MAX_RETRIES_BEFORE = "2.11.0"  # Prometheus 2.11 removed max_retries (upstream WithMaximumVersion)


def remote_write_section(ctx: GenContext, scope: Scope) -> list[dict]:
    out = []
    for i, rw in enumerate(ctx.spec.get("remoteWrite") or ()):
        field = f"spec.remoteWrite[{i}]"
        try:
            out.append(_remote_write(ctx, scope, rw, field))
        except Reject as e:
            scope.warn(e.field, f"{e.message}; this remote write is ignored")
    return out


def _duration(value: Any, field: str) -> Any:
    try:
        parse_duration(value)
    except DurationError as e:
        raise Reject(field, str(e)) from None
    return value


def _remote_write(ctx: GenContext, scope: Scope, rw: Mapping[str, Any], field: str) -> dict:
    if not isinstance(rw, Mapping) or not rw.get("url"):
        raise Reject(f"{field}.url", "a remote write needs a url")
    parsed = urlsplit(str(rw["url"]))
    if parsed.scheme not in ("http", "https") or not parsed.netloc or any(c.isspace() for c in parsed.netloc):
        raise Reject(f"{field}.url", f"{rw['url']!r} is not an http(s) URL")
    out: dict = {"url": rw["url"]}
    if rw.get("remoteTimeout"):  # upstream has no default: Prometheus' own (30s) applies
        out["remote_timeout"] = _duration(rw["remoteTimeout"], f"{field}.remoteTimeout")
    if rw.get("headers"):
        for name in rw["headers"]:
            if str(name).lower() in _RESERVED_HEADERS:
                raise Reject(f"{field}.headers.{name}", f"header {name} is reserved by Prometheus; set credentials "
                             "with basicAuth, authorization or oauth2 instead")
        scope.put(out, "headers", dict(sorted(rw["headers"].items())), "2.15.0", f"{field}.headers")
    if rw.get("name"):
        scope.put(out, "name", rw["name"], "2.15.0", f"{field}.name")
    if rw.get("messageVersion"):
        message = {"V1.0": "prometheus.WriteRequest", "V2.0": "io.prometheus.write.v2.Request"}.get(rw["messageVersion"])
        if message:
            scope.put(out, "protobuf_message", message, "2.54.0", f"{field}.messageVersion")
    if rw.get("sendExemplars") is not None:
        scope.put(out, "send_exemplars", bool(rw["sendExemplars"]), "2.27.0", f"{field}.sendExemplars")
    if rw.get("sendNativeHistograms") is not None:
        scope.put(out, "send_native_histograms", bool(rw["sendNativeHistograms"]), "2.40.0", f"{field}.sendNativeHistograms")
    if rw.get("writeRelabelConfigs"):
        out["write_relabel_configs"] = relabel.checked(rw["writeRelabelConfigs"], ctx.version, f"{field}.writeRelabelConfigs")
    cloudauth.check_methods(rw, field, cloudauth.REMOTE_WRITE_METHODS)
    auth.check_exclusive(rw, field)
    _client_auth(scope, rw, out, field)
    cloudauth.remote_write_cloud_auth(scope, rw, out, field)
    if rw.get("followRedirects") is not None:
        scope.put(out, "follow_redirects", bool(rw["followRedirects"]), "2.26.0", f"{field}.followRedirects")
    if rw.get("enableHTTP2") is not None:
        scope.put(out, "enable_http2", bool(rw["enableHTTP2"]), "2.35.0", f"{field}.enableHTTP2")
    queue = rw.get("queueConfig")
    if queue:
        q: dict = {}
        for crd_key, key, minimum, is_duration in _QUEUE:
            if queue.get(crd_key) is None or (crd_key in _QUEUE_SKIP_FALSY and not queue[crd_key]):
                continue
            value = _duration(queue[crd_key], f"{field}.queueConfig.{crd_key}") if is_duration else queue[crd_key]
            if crd_key == "maxRetries" and scope.version.at_least(MAX_RETRIES_BEFORE):
                scope.warn(f"{field}.queueConfig.maxRetries", f"ignored: max_retries was removed in Prometheus "
                                                               f"{MAX_RETRIES_BEFORE}; spec.version is {scope.version}")
                continue
            scope.put(q, key, value, minimum, f"{field}.queueConfig.{crd_key}")
        out["queue_config"] = q
    meta = rw.get("metadataConfig")
    if meta is not None:  # upstream writes metadata_config even for an empty metadataConfig: {}
        # upstream always writes send, and false for v2 messages (they carry the metadata themselves)
        v2 = out.get("protobuf_message") == "io.prometheus.write.v2.Request"
        m: dict = {"send": bool(meta.get("send", False)) and not v2}
        if meta.get("sendInterval"):
            m["send_interval"] = _duration(meta["sendInterval"], f"{field}.metadataConfig.sendInterval")
        if meta.get("maxSamplesPerSend") is not None:
            scope.put(m, "max_samples_per_send", meta["maxSamplesPerSend"], "2.29.0", f"{field}.metadataConfig.maxSamplesPerSend")
        scope.put(out, "metadata_config", m, "2.23.0", f"{field}.metadataConfig")
    if rw.get("roundRobinDNS") is not None:
        scope.put(out, "round_robin_dns", bool(rw["roundRobinDNS"]), "3.1.0", f"{field}.roundRobinDNS")
    return out


def _client_auth(scope: Scope, src: Mapping[str, Any], out: dict, field: str) -> None:
    """Credentials, TLS and proxy in upstream's key order (basic_auth, bearer_token, bearer_token_file,
    oauth2, tls_config, authorization, proxy keys)."""
    if src.get("basicAuth"):
        out["basic_auth"] = auth.basic_auth(scope, src["basicAuth"], f"{field}.basicAuth")
    if src.get("bearerToken"):
        out["bearer_token"] = src["bearerToken"]  # deprecated upstream, still honoured
    if src.get("bearerTokenFile"):
        out["bearer_token_file"] = src["bearerTokenFile"]
    if src.get("oauth2"):
        scope.put(out, "oauth2", auth.oauth2(scope, src["oauth2"], f"{field}.oauth2"), "2.27.0", f"{field}.oauth2")
    if src.get("tlsConfig"):
        out["tls_config"] = tls_config(scope, src["tlsConfig"], f"{field}.tlsConfig")
    if src.get("authorization"):
        scope.put(out, "authorization", auth.authorization(scope, src["authorization"], f"{field}.authorization"),
                  "2.26.0", f"{field}.authorization")
    auth.proxy(scope, src, out, field)


def remote_read_section(ctx: GenContext, scope: Scope) -> list[dict]:
    out = []
    for i, rr in enumerate(ctx.spec.get("remoteRead") or ()):
        field = f"spec.remoteRead[{i}]"
        try:
            out.append(_remote_read(ctx, scope, rr, field))
        except Reject as e:
            scope.warn(e.field, f"{e.message}; this remote read is ignored")
    return out


def _remote_read(ctx: GenContext, scope: Scope, rr: Mapping[str, Any], field: str) -> dict:
    if not isinstance(rr, Mapping) or not rr.get("url"):
        raise Reject(f"{field}.url", "a remote read needs a url")
    parsed = urlsplit(str(rr["url"]))
    if parsed.scheme not in ("http", "https") or not parsed.netloc or any(c.isspace() for c in parsed.netloc):
        raise Reject(f"{field}.url", f"{rr['url']!r} is not an http(s) URL")
    out: dict = {"url": rr["url"]}
    if rr.get("remoteTimeout"):
        out["remote_timeout"] = _duration(rr["remoteTimeout"], f"{field}.remoteTimeout")
    if rr.get("headers"):
        for name in rr["headers"]:
            if str(name).lower() in _RESERVED_HEADERS:
                raise Reject(f"{field}.headers.{name}", f"header {name} is reserved by Prometheus; set credentials "
                             "with basicAuth, authorization or oauth2 instead")
        scope.put(out, "headers", dict(sorted(rr["headers"].items())), "2.26.0", f"{field}.headers")
    if rr.get("name"):
        scope.put(out, "name", rr["name"], "2.15.0", f"{field}.name")
    if rr.get("requiredMatchers"):
        out["required_matchers"] = dict(sorted(rr["requiredMatchers"].items()))
    if rr.get("readRecent"):
        out["read_recent"] = True
    auth.check_exclusive(rr, field)
    _client_auth(scope, rr, out, field)
    if rr.get("followRedirects") is not None:
        scope.put(out, "follow_redirects", bool(rr["followRedirects"]), "2.26.0", f"{field}.followRedirects")
    if rr.get("filterExternalLabels") is not None:
        scope.put(out, "filter_external_labels", bool(rr["filterExternalLabels"]), "2.34.0",
                  f"{field}.filterExternalLabels")
    return out
