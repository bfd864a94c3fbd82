"""How the apiserver words a schema violation: the Violation record, values quoted as it quotes
them, and kubectl's field paths. Shared by the jsonschema checks and the CEL rule walk."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Violation:
    """One reason the apiserver would refuse the object."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def show(value: Any) -> str:
    """A value as the apiserver quotes it (JSON; objects and lists as their type)."""
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + '..."'


def format_path(parts: list[Any], schema: dict) -> str:
    """kubectl's field path: `.name` for properties, `[i]` for items, `[key]` for map keys."""
    out: list[str] = []
    sub: Any = schema
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
            sub = sub.get("items") if isinstance(sub, dict) else None
            continue
        props = sub.get("properties") if isinstance(sub, dict) else None
        if isinstance(props, dict) and part in props:
            out.append(f".{part}" if out else part)
            sub = props[part]
        elif isinstance(sub, dict) and isinstance(sub.get("additionalProperties"), dict):
            out.append(f"[{part}]")
            sub = sub["additionalProperties"]
        else:
            out.append(f".{part}" if out else part)
            sub = None
    return "".join(out)
