"""spec.tracingConfig -> the `tracing` section of the Prometheus config, as upstream 0.93 generates it.

TLS material referenced from Secrets/ConfigMaps goes into the tls-assets Secrets like every other
TLS config (tls_assets.py); a reference that cannot be read stops the Prometheus, because
upstream's reconcile fails on it too. Client type and compression are written lower-case: the
CRD accepts `GRPC`/`Gzip`, Prometheus reads only `grpc`/`gzip`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.quantity import QuantityError, approximate_float
from promop.render.context import GenContext
from promop.render.model import Problem
from promop.render.schema_check import InvalidPrometheus
from promop.render.store import Reject, Scope
from promop.render.tls_assets import tls_config

FIELD = "spec.tracingConfig"


def _sampling_fraction(scope: Scope, value: Any) -> float | None:
    """The fraction as the float Go's AsApproximateFloat64 gives; out of [0, 1] it is dropped (warned)."""
    field = f"{FIELD}.samplingFraction"
    try:
        fraction = approximate_float(value)
    except QuantityError as e:
        scope.warn(field, f"{e}; ignored, Prometheus samples no traces by default")
        return None
    if not 0 <= fraction <= 1:
        scope.warn(field, f"{value} is not a probability between 0 and 1; ignored, Prometheus samples no traces "
                          "by default")
        return None
    return int(fraction) if fraction.is_integer() else fraction


def _tracing(scope: Scope, cfg: Mapping[str, Any]) -> dict:
    out: dict = {"endpoint": cfg.get("endpoint")}
    if cfg.get("clientType") is not None:
        out["client_type"] = str(cfg["clientType"]).lower()
    if cfg.get("samplingFraction") is not None:
        fraction = _sampling_fraction(scope, cfg["samplingFraction"])
        if fraction is not None:
            out["sampling_fraction"] = fraction
    if cfg.get("insecure") is not None:
        out["insecure"] = bool(cfg["insecure"])
    if cfg.get("headers"):
        out["headers"] = {str(k): str(v) for k, v in sorted(cfg["headers"].items())}
    if cfg.get("compression") is not None:
        out["compression"] = str(cfg["compression"]).lower()
    if cfg.get("timeout") is not None:
        out["timeout"] = cfg["timeout"]
    if cfg.get("tlsConfig"):
        out["tls_config"] = tls_config(scope, cfg["tlsConfig"], f"{FIELD}.tlsConfig")
    return out


def tracing_section(ctx: GenContext, scope: Scope) -> dict:
    """{"tracing": {...}} to merge into the config's tail, or {} without spec.tracingConfig.

    Raises InvalidPrometheus for a TLS reference that cannot be read (missing Secret/key, not PEM)."""
    cfg = ctx.spec.get("tracingConfig")
    if cfg is None:
        return {}
    if not isinstance(cfg, Mapping) or not cfg.get("endpoint"):
        raise InvalidPrometheus([Problem("Prometheus", ctx.namespace, ctx.name, f"{FIELD}.endpoint",
                                         "tracing needs an endpoint (host:port of an OTLP collector)")])
    try:
        return {"tracing": _tracing(scope, cfg)}
    except Reject as e:
        raise InvalidPrometheus([Problem("Prometheus", ctx.namespace, ctx.name, e.field, e.message)]) from None
