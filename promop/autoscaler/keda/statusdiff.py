"""Status writes as JSON merge patches of what changed, and only when something did (KEDA patches
status only on change: at 10,000 ScaledObjects an unconditional write per poll is 333 writes/s)."""

from __future__ import annotations

from typing import Any


def merge_diff(old: dict, new: dict) -> dict:
    """The RFC 7386 patch that turns `old` into `new` (a removed key is null; lists are replaced)."""
    patch: dict[str, Any] = {}
    for key in old.keys() | new.keys():
        if key not in new:
            patch[key] = None
        elif key not in old:
            patch[key] = new[key]
        elif old[key] != new[key]:
            a, b = old[key], new[key]
            patch[key] = merge_diff(a, b) if isinstance(a, dict) and isinstance(b, dict) else b
    return patch
