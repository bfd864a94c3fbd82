"""Command-line flags from (name, value) pairs plus a spec's additionalArgs, as upstream's BuildArgs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class ManagedArgumentError(ValueError):
    """An additionalArgs entry names a flag the operator already sets."""


def _flag(name: str, value: Any) -> str:
    return f"--{name}" if value in (None, "") else f"--{name}={value}"


def build_args(managed: Sequence[tuple[str, Any]], additional: Sequence[Mapping[str, Any]] | None,
               field: str) -> list[str]:
    """`--name=value` for each managed pair, then each additional argument; an additional argument
    that repeats a managed flag (with or without `no-`) is refused as upstream does."""
    names = {name.removeprefix("no-") for name, _ in managed}
    clashes = [str(a.get("name", "")) for a in additional or []
               if str(a.get("name", "")).lstrip("-").removeprefix("no-") in names]
    if clashes:
        raise ManagedArgumentError(f"{field}: can't set arguments which are already managed by the operator: "
                                   f"{', '.join(clashes)}; remove them from additionalArgs")
    out = [_flag(name, value) for name, value in managed]
    out += [_flag(str(a.get("name", "")).lstrip("-"), a.get("value")) for a in additional or [] if a.get("name")]
    return out
