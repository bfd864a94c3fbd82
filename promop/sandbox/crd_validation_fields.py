"""apimachinery's field errors as text: paths (`a.b[0].c[key]`) and `Invalid value: ...` bodies.

The CRD checks (crd_validation, crd_validation_schema) word their causes exactly as
k8s.io/apimachinery/pkg/util/validation/field does, so a client reading the Status sees what a
real apiserver says.
"""

from __future__ import annotations

import json
from typing import Any

Cause = tuple[str, str]


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def show(value: Any) -> str:
    """A value as field.Invalid prints it: strings quoted, numbers and bools bare, else Go-ish."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def invalid(path: str, value: Any, detail: str) -> Cause:
    return path, f"Invalid value: {show(value)}: {detail}"


def required(path: str, detail: str = "") -> Cause:
    return path, f"Required value: {detail}" if detail else "Required value"


def forbidden(path: str, detail: str) -> Cause:
    return path, f"Forbidden: {detail}"


def not_supported(path: str, value: Any, supported: list[str]) -> Cause:
    return path, (f"Unsupported value: {show(value)}: supported values: "
                  + ", ".join(json.dumps(s) for s in supported))
