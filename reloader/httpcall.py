"""A minimal HTTP client for reload calls (stdlib http.client).

`requests` costs ~2 ms per call in Python overhead, as much as a whole
Prometheus reload of a small config; this keeps the sidecar's own share of the
reload latency small. TLS is not verified (as upstream), no keep-alive.
"""
from __future__ import annotations

import base64
import http.client
import ssl
from urllib.parse import urlsplit

_UNVERIFIED = ssl._create_unverified_context()  # noqa: SLF001 - deliberate, like upstream's InsecureSkipVerify


class HttpCallError(Exception):
    """The request could not be completed (connection refused, timeout, bad URL)."""


def call(method: str, url: str, timeout: float, limit: int = 1 << 20) -> tuple[int, bytes]:
    """Send one request; return (status, body up to `limit` bytes)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpCallError(f"invalid URL {url!r}: expected http(s)://host[:port]/path")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout, context=_UNVERIFIED)
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        headers = {"Connection": "close", "User-Agent": "promop-config-reloader"}
        if parts.username:
            token = base64.b64encode(f"{parts.username}:{parts.password or ''}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        conn.request(method, path, body=b"" if method == "POST" else None, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read(limit)
    except (OSError, http.client.HTTPException) as exc:
        raise HttpCallError(f"{method} {redacted(url)} failed: {exc!r}") from exc
    finally:
        conn.close()


def redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")).geturl()
