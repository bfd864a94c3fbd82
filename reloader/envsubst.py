"""Kubernetes-style `$(VAR)` expansion over bytes, streamed chunk by chunk.

Streaming keeps memory flat for large configs: only the tail after the last `$`
of a chunk (a possibly unfinished reference) is carried over to the next one.
Unset variables are left literally, as upstream does with
TolerateEnvVarExpansionErrors.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

REFERENCE = re.compile(rb"\$\(([a-zA-Z_0-9]+)\)")
_UNFINISHED = re.compile(rb"\$(?:\([a-zA-Z_0-9]*)?")
ORDINAL_VAR = "STATEFULSET_ORDINAL_NUMBER"


@dataclass
class Expansion:
    """Outcome of one expansion: which variables were unset and how often."""

    missing: dict[str, int] = field(default_factory=dict)

    @property
    def error_count(self) -> int:
        return sum(self.missing.values())


def ordinal_from(value: str | None) -> str | None:
    """The StatefulSet ordinal is the digits after the last '-' of the pod name."""
    if not value or "-" not in value:
        return None
    tail = value.rsplit("-", 1)[1]
    return tail if tail.isdigit() else None


def environment(ordinal_var: str | None, base: Mapping[bytes, bytes] | None = None) -> dict[bytes, bytes]:
    """The variables available to `$(VAR)`, including the derived ordinal."""
    env = dict(os.environb if base is None else base)
    if ordinal_var:
        raw = env.get(ordinal_var.encode())
        ordinal = ordinal_from(raw.decode("utf-8", "replace") if raw is not None else None)
        if ordinal is not None:
            env[ORDINAL_VAR.encode()] = ordinal.encode()
    return env


def expand_chunks(
    chunks: Iterable[bytes], env: Mapping[bytes, bytes], result: Expansion
) -> Iterator[bytes]:
    """Yield the expanded stream; unset names are recorded in `result`."""

    def replace(match: re.Match[bytes]) -> bytes:
        name = match.group(1)
        value = env.get(name)
        if value is None:
            key = name.decode("ascii")
            result.missing[key] = result.missing.get(key, 0) + 1
            return match.group(0)
        return value

    carry = b""
    for chunk in chunks:
        data = carry + chunk if carry else chunk
        carry = b""
        cut = data.rfind(b"$")
        if cut >= 0 and _UNFINISHED.fullmatch(data, cut):
            data, carry = data[:cut], data[cut:]
        if data:
            yield REFERENCE.sub(replace, data)
    if carry:
        yield REFERENCE.sub(replace, carry)


def expand(data: bytes, env: Mapping[bytes, bytes]) -> tuple[bytes, Expansion]:
    """Whole-buffer convenience wrapper around expand_chunks."""
    result = Expansion()
    return b"".join(expand_chunks([data], env, result)), result
