"""Reading referenced Secret/ConfigMap keys, and recording what each object read.

A Scope belongs to one object being rendered (a monitor, or the Prometheus
itself). It records every key it read (so RenderCache can tell whether a
cached fragment is still valid), the TLS asset files it needs, and warnings.
A missing, non-optional reference raises Reject, which rejects the object.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from promop.render.model import Problem
from promop.render.versions import Version

CERTS_DIR = "/etc/prometheus/certs"


class Reject(Exception):
    """The object being rendered is invalid; `field` is the path inside it."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class Store:
    """Referenced Secret and ConfigMap contents, keyed by (namespace, name)."""

    def __init__(
        self,
        secrets: Mapping[tuple[str, str], dict] | None = None,
        configmaps: Mapping[tuple[str, str], dict] | None = None,
    ):
        self.secrets = secrets or {}
        self.configmaps = configmaps or {}

    def exists(self, kind: str, namespace: str, name: str) -> bool:
        objs = self.secrets if kind == "Secret" else self.configmaps
        return (namespace, name) in objs

    def get(self, kind: str, namespace: str, name: str, key: str) -> str | None:
        """The decoded value of one key, or None when the object or key is missing."""
        if kind == "Secret":
            obj = self.secrets.get((namespace, name))
            if obj is None:
                return None
            string_data = obj.get("stringData") or {}
            if key in string_data:
                return str(string_data[key])
            raw = (obj.get("data") or {}).get(key)
            if raw is None:
                return None
            try:
                return base64.b64decode(raw, validate=True).decode("utf-8")
            except (binascii.Error, ValueError, UnicodeDecodeError):
                return None
        obj = self.configmaps.get((namespace, name))
        if obj is None:
            return None
        data = obj.get("data") or {}
        if key in data:
            return str(data[key])
        raw = (obj.get("binaryData") or {}).get(key)
        if raw is None:
            return None
        try:
            return base64.b64decode(raw).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            return None


class Scope:
    """Reads and side outputs of rendering one object (kind, namespace, name)."""

    def __init__(self, store: Store, kind: str, namespace: str, name: str, version: Version):
        self.store = store
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.version = version
        self.reads: dict[tuple[str, str, str, str], str | None] = {}
        self.assets: dict[str, str] = {}
        self.warnings: list[Problem] = []

    def warn(self, field: str, message: str) -> None:
        self.warnings.append(Problem(self.kind, self.namespace, self.name, field, message))

    def read(self, kind: str, ref: Any, field: str) -> str | None:
        """Value of a SecretKeySelector/ConfigMapKeySelector `{name, key, optional}` in our namespace.

        Raises Reject if the object or key is missing and the reference is not optional.
        """
        if not isinstance(ref, Mapping) or not ref.get("key"):
            raise Reject(field, f"must reference a {kind} key with name and key")
        name, key = ref.get("name") or "", str(ref["key"])
        if not name:
            raise Reject(f"{field}.name", f"the {kind} name is empty; set the name of a {kind} in namespace {self.namespace!r}")
        value = self.store.get(kind, self.namespace, name, key)
        self.reads[(kind, self.namespace, name, key)] = value
        if value is None and not ref.get("optional"):
            if not self.store.exists(kind, self.namespace, name):
                raise Reject(field, f"{kind} {self.namespace}/{name} not found; create it or fix the reference")
            raise Reject(field, f"key {key!r} not found in {kind} {self.namespace}/{name}")
        return value

    def read_secret_or_configmap(self, ref: Any, field: str) -> tuple[str, str, str, str | None]:
        """A SecretOrConfigMap `{secret: {...}}` / `{configMap: {...}}`: (kind, name, key, value)."""
        if not isinstance(ref, Mapping):
            raise Reject(field, "must be a mapping with `secret` or `configMap`")
        if ref.get("secret") and ref.get("configMap"):
            raise Reject(field, "set either secret or configMap, not both")
        if ref.get("secret"):
            kind, sel, sub = "Secret", ref["secret"], "secret"
        elif ref.get("configMap"):
            kind, sel, sub = "ConfigMap", ref["configMap"], "configMap"
        else:
            raise Reject(field, "must set `secret` or `configMap`")
        value = self.read(kind, sel, f"{field}.{sub}")
        return kind, sel.get("name") or "", str(sel["key"]), value

    def asset(self, kind: str, name: str, key: str, value: str | None) -> str:
        """Record a TLS asset file and return the path Prometheus reads it from."""
        filename = f"{0 if kind == 'Secret' else 1}_{self.namespace}_{name}_{key}"
        if value is not None:
            self.assets[filename] = value
        return f"{CERTS_DIR}/{filename}"

    def put(self, out: dict, key: str, value: Any, minimum: str | None, field: str) -> None:
        """out[key] = value if spec.version supports it, else drop it with a warning."""
        if minimum and not self.version.at_least(minimum):
            self.warn(field, f"ignored: {key} needs Prometheus >= {minimum}, but spec.version is {self.version}")
            return
        out[key] = value
