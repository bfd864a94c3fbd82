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
        self.reason = reason if reason is not None else REASONS.get(code, "Unknown")
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
    if not reason:
        del body["reason"]  # as the apiserver's errors that are not StatusErrors
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


# field.Error types by the start of their message, as apimachinery words them
CAUSE_REASONS = (
    ("Required value", "FieldValueRequired"), ("Forbidden", "FieldValueForbidden"),
    ("Too long", "FieldValueTooLong"), ("Too many", "FieldValueTooMany"),
    ("Duplicate value", "FieldValueDuplicate"), ("Unsupported value", "FieldValueNotSupported"),
    ("Not found", "FieldValueNotFound"), ("Invalid value", "FieldValueInvalid"),
    ("Internal error", "InternalError"),
)


def cause_reason(message: str) -> str:
    return next((reason for prefix, reason in CAUSE_REASONS if message.startswith(prefix)),
                "FieldValueInvalid")


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid; `causes` are (field, message) pairs, each message starting as upstream's
    (`Required value`, `Invalid value: ...`, `Forbidden: ...`), which gives its reason. The
    message aggregates as apimachinery's: one cause alone, several in brackets."""
    parts = [f"{field}: {msg}" if field else msg for field, msg in causes]
    text = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details = {"name": name, "group": group, "kind": kind,
               "causes": [{"reason": cause_reason(msg), "message": msg, "field": field}
                          for field, msg in causes]}
    if not group:
        del details["group"]
    qualified = f"{kind}.{group}" if group else kind
    return ApiError(422, f'{qualified} "{name}" is invalid: {text}', details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def expired(message: str) -> ApiError:
    return ApiError(410, message, reason="Expired")
