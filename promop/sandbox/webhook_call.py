"""Calling a webhook as kube-apiserver does: a `clientConfig` (url or service) with its caBundle.

`url` is called as written (https only). A `service` reference is resolved through
`ServiceAddresses`, which tests fill (`sandbox.webhook_services.register(namespace, name,
port, "127.0.0.1:8443")`) since the sandbox runs no pods; the server certificate is then
verified for `<name>.<namespace>.svc`, the name the real apiserver checks.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import ssl
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit


class CallError(Exception):
    """The webhook could not be called or answered badly; the message is the apiserver's wording."""


class ServiceAddresses:
    """(namespace, name, port) of a Service -> "host:port" the sandbox connects to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._addresses: dict[tuple[str, str, int], str] = {}

    def register(self, namespace: str, name: str, port: int, address: str) -> None:
        with self._lock:
            self._addresses[(namespace, name, int(port))] = address

    def resolve(self, namespace: str, name: str, port: int) -> str | None:
        with self._lock:
            return self._addresses.get((namespace, name, int(port)))


def _target(config: Mapping[str, Any], services: ServiceAddresses) -> tuple[str, int, str, str]:
    """(host, port, path, TLS server name) of a clientConfig."""
    if config.get("url"):
        parts = urlsplit(str(config["url"]))
        if parts.scheme != "https":
            raise CallError(f'webhook url {config["url"]!r} must use the https scheme')
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        return parts.hostname or "", parts.port or 443, path, parts.hostname or ""
    service = config.get("service") or {}
    namespace, name, port = service.get("namespace", ""), service.get("name", ""), int(service.get("port") or 443)
    address = services.resolve(namespace, name, port)
    if address is None:
        raise CallError(f'service "{name}" not found')  # what the apiserver says with no endpoints
    host, _, p = address.rpartition(":")
    return host, int(p), service.get("path") or "/", f"{name}.{namespace}.svc"


def _context(config: Mapping[str, Any]) -> ssl.SSLContext:
    bundle = config.get("caBundle")
    if not bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(bundle, validate=True).decode()
        return ssl.create_default_context(cadata=pem)
    except (binascii.Error, ValueError, ssl.SSLError) as exc:
        raise CallError(f"invalid caBundle: {exc}") from None


class _Connection(http.client.HTTPSConnection):
    """HTTPS to an address, verifying the certificate for another name (a Service's DNS name)."""

    def __init__(self, host: str, port: int, server_name: str, **kw: Any) -> None:
        super().__init__(host, port, **kw)
        self.server_name = server_name
        self.tls_context: ssl.SSLContext = kw["context"]

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self.tls_context.wrap_socket(self.sock, server_hostname=self.server_name)


def post(config: Mapping[str, Any], services: ServiceAddresses, body: dict, timeout: float) -> dict:
    """POST `body` as JSON and return the decoded answer; CallError with the reason otherwise."""
    host, port, path, server_name = _target(config, services)
    ctx = _context(config)
    conn = _Connection(host, port, server_name, timeout=timeout, context=ctx)
    try:
        conn.request("POST", path, json.dumps(body).encode(),
                     {"Content-Type": "application/json", "Accept": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
    except TimeoutError:
        raise CallError("context deadline exceeded") from None
    except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
        raise CallError(f'Post "https://{server_name}:{port}{path}": {exc}') from None
    finally:
        conn.close()
    if resp.status != 200:
        raise CallError(f"the server responded with status {resp.status}: {data[:200].decode(errors='replace')}")
    try:
        return json.loads(data)
    except ValueError as exc:
        raise CallError(f"the response is not JSON: {exc}") from None
