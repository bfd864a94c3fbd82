"""TriggerAuthentication / ClusterTriggerAuthentication into a trigger's authParams (§1.6).

Why pure: the controller reads Secrets, ConfigMaps and the target's container env through its own
informers; the rules of what becomes which parameter (and what a missing reference does) are the
same for the scale loop, the metrics endpoint and `promop keda explain`. A missing object or key is
only a warning, as in KEDA: the parameter is left out and the scaler then says what it misses
(e.g. "bearer token is required when bearer auth is enabled").
"""

from __future__ import annotations

import base64
import binascii
from typing import Callable

SecretReader = Callable[[str, str], "dict | None"]          # (namespace, name) -> Secret object or None
ConfigMapReader = Callable[[str, str], "dict | None"]       # (namespace, name) -> ConfigMap object or None
EnvReader = Callable[[str, "str | None"], "str | None"]     # (env var name, container name or None) -> value
UNSUPPORTED_SOURCES = ("podIdentity", "hashiCorpVault", "azureKeyVault", "gcpSecretManager", "awsSecretManager",
                       "boundServiceAccountToken", "oauth2", "filePath")


def auth_namespace(kind: str, object_namespace: str, cluster_object_namespace: str) -> str:
    """Where an authentication's secrets are read: the ScaledObject's namespace for a TriggerAuthentication,
    KEDA_CLUSTER_OBJECT_NAMESPACE (default: the operator's namespace) for a ClusterTriggerAuthentication."""
    return cluster_object_namespace if kind == "ClusterTriggerAuthentication" else object_namespace


def pod_identity_provider(auth_spec: dict | None) -> str:
    """spec.podIdentity.provider, "none" when unset (the prometheus trigger refuses it with authModes)."""
    return ((auth_spec or {}).get("podIdentity") or {}).get("provider") or "none"


def _secret_value(secret: dict | None, key: str) -> str | None:
    if not secret:
        return None
    if key in (secret.get("stringData") or {}):
        return str(secret["stringData"][key])
    raw = (secret.get("data") or {}).get(key)
    if raw is None:
        return None
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None


def resolve_auth_params(auth_spec: dict | None, namespace: str, read_secret: SecretReader, read_env: EnvReader,
                        read_config_map: ConfigMapReader | None = None,
                        warnings: list[str] | None = None) -> dict[str, str]:
    """The authParams of one authentication spec (`spec` of a (Cluster)TriggerAuthentication): `env`,
    then `configMapTargetRef`, then `secretTargetRef` (KEDA's order; a later source overwrites an earlier
    parameter). `namespace` is auth_namespace(...). Problems are appended to `warnings` (never raised)."""
    spec = auth_spec or {}
    warn = warnings.append if warnings is not None else (lambda _msg: None)
    params: dict[str, str] = {}
    for item in spec.get("env") or []:
        value = read_env(item.get("name", ""), item.get("containerName") or None)
        if value is None:
            warn(f"env {item.get('name')!r} for parameter {item.get('parameter')!r} not found in the scale target's "
                 "container; set it in the pod template or fix the TriggerAuthentication")
            continue
        params[item.get("parameter", "")] = value
    for item in spec.get("configMapTargetRef") or []:
        cm = read_config_map(namespace, item.get("name", "")) if read_config_map else None
        value = ((cm or {}).get("data") or {}).get(item.get("key", ""))
        if value is None:
            warn(f"configMap {namespace}/{item.get('name')} key {item.get('key')!r} for parameter "
                 f"{item.get('parameter')!r} not found")
            continue
        params[item.get("parameter", "")] = str(value)
    for item in spec.get("secretTargetRef") or []:
        value = _secret_value(read_secret(namespace, item.get("name", "")), item.get("key", ""))
        if value is None:
            warn(f"secret {namespace}/{item.get('name')} key {item.get('key')!r} for parameter "
                 f"{item.get('parameter')!r} not found")
            continue
        params[item.get("parameter", "")] = value
    for source in UNSUPPORTED_SOURCES:
        if spec.get(source) and not (source == "podIdentity" and pod_identity_provider(spec) == "none"):
            warn(f"{source} is not supported by promop; use secretTargetRef, configMapTargetRef or env")
    return params
