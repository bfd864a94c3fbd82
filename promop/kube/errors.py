"""Kubernetes API errors as exceptions that callers can catch by meaning.

The apiserver answers failures with a `Status` object whose `reason` is more
precise than the HTTP code (a 409 is either `Conflict` or `AlreadyExists`, a
410 is `Expired` or `Gone`). `error_from_response` maps both onto one class
hierarchy so reconcilers write `except NotFound` rather than comparing codes.
"""

from __future__ import annotations

import json
from typing import Any, Mapping


class ApiError(Exception):
    """A failed Kubernetes API call.

    `status` is the HTTP code (0 when no response arrived), `reason` the
    Status reason (e.g. `NotFound`), `message` the server's explanation,
    `body` the decoded Status (or None), and `retry_after` the seconds the
    server asked us to wait (429/503 Retry-After), if any.
    """

    default_status = 0

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str = "",
        body: dict | None = None,
        retry_after: float | None = None,
        method: str = "",
        path: str = "",
    ) -> None:
        self.status = self.default_status if status is None else status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after
        self.method = method
        self.path = path
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"{self.method} {self.path}: " if self.method else ""
        code = f"{self.status} {self.reason}".strip() if self.status else self.reason
        hint = _HINTS.get(type(self).__name__, "")
        text = f"{where}{code}: {self.message}" if code else f"{where}{self.message}"
        return f"{text} ({hint})" if hint else text


class ApiUnreachable(ApiError):
    """No HTTP response: connection refused, reset, TLS failure or timeout."""

    default_status = 0


class RequestTimeout(ApiUnreachable):
    """A call did not complete within the `timeout` its caller gave it."""


class WatchIdleTimeout(ApiUnreachable):
    """A watch stream sent nothing for longer than its idle timeout."""


class BadRequest(ApiError):
    default_status = 400


class Unauthorized(ApiError):
    default_status = 401


class Forbidden(ApiError):
    default_status = 403


class NotFound(ApiError):
    default_status = 404


class MethodNotAllowed(ApiError):
    default_status = 405


class Conflict(ApiError):
    default_status = 409


class AlreadyExists(Conflict):
    pass


class Gone(ApiError):
    """410: the resourceVersion or continue token is too old; relist."""

    default_status = 410


class Invalid(ApiError):
    default_status = 422


class TooManyRequests(ApiError):
    default_status = 429


class ServerError(ApiError):
    """5xx: the apiserver (or something in front of it) failed."""

    default_status = 500


_HINTS = {
    "ApiUnreachable": "check the server address in the kubeconfig and that the apiserver is up",
    "WatchIdleTimeout": "the connection looks dead; re-watch",
    "Unauthorized": "check the credentials in the kubeconfig or the service-account token",
    "Forbidden": "grant the missing permission in the operator's RBAC",
    "Conflict": "re-read the object and retry the write",
    "Gone": "the resourceVersion is too old; relist",
    "Invalid": "fix the object's fields named above",
    "TooManyRequests": "the apiserver is throttling; back off",
}

_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_class(status: int, reason: str = "") -> type[ApiError]:
    """The exception class for an HTTP status and a Status reason."""
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return ApiError


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form only)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def error_from_status(
    status_obj: Mapping[str, Any] | None,
    *,
    status: int | None = None,
    method: str = "",
    path: str = "",
    retry_after: float | None = None,
) -> ApiError:
    """An exception from a decoded `Status` (a response body or watch ERROR event)."""
    body = dict(status_obj) if isinstance(status_obj, Mapping) else None
    code = status if status is not None else int((body or {}).get("code") or 0)
    reason = str((body or {}).get("reason") or "")
    message = str((body or {}).get("message") or "") or "no message from the server"
    if retry_after is None and body:
        retry_after = (body.get("details") or {}).get("retryAfterSeconds")
    cls = error_class(code, reason)
    return cls(
        message, status=code, reason=reason, body=body, retry_after=retry_after, method=method, path=path
    )


def error_from_response(
    status: int, data: bytes, *, headers: Mapping[str, str] | None = None, method: str = "", path: str = ""
) -> ApiError:
    """An exception for a non-2xx HTTP response with raw body `data`."""
    try:
        body = json.loads(data) if data else None
    except ValueError:
        body = None
    if not isinstance(body, dict) or body.get("kind") != "Status":
        text = data[:500].decode("utf-8", "replace").strip() if data else ""
        body = {"kind": "Status", "code": status, "reason": "", "message": text or f"HTTP {status}"}
    retry_after = parse_retry_after((headers or {}).get("Retry-After"))
    return error_from_status(body, status=status, method=method, path=path, retry_after=retry_after)
