"""API errors as Kubernetes `Status` objects: what clients branch on (code and reason)."""

from __future__ import annotations

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error the server answers with a Status body; `reason` defaults from the code."""

    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict | None = None, headers: dict | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict:
        return status_object(self.code, self.reason, self.message, self.details)


def status_object(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure" if code >= 300 else "Success",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def success_status(kind: str, name: str, group: str, uid: str) -> dict:
    """What DELETE returns for most resources once the object is gone."""
    details = {"name": name, "kind": kind, "uid": uid}
    if group:
        details["group"] = group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


def not_found(resource: str, group: str, name: str) -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(404, f'{qualified} "{name}" not found',
                    details={"name": name, "group": group, "kind": resource})


def already_exists(resource: str, group: str, name: str) -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(409, f'{qualified} "{name}" already exists', reason="AlreadyExists",
                    details={"name": name, "group": group, "kind": resource})


def conflict(resource: str, group: str, name: str) -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(409, f'Operation cannot be fulfilled on {qualified} "{name}": the object '
                         "has been modified; please apply your changes to the latest version "
                         "and try again",
                    details={"name": name, "group": group, "kind": resource})


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid; `causes` are (field, message) pairs."""
    text = "; ".join(f"{field}: {msg}" for field, msg in causes)
    return ApiError(422, f'{kind} "{name}" is invalid: {text}',
                    details={"name": name, "group": group, "kind": kind,
                             "causes": [{"reason": "FieldValueInvalid", "message": msg,
                                         "field": field} for field, msg in causes]})


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def expired(message: str) -> ApiError:
    return ApiError(410, message, reason="Expired")
