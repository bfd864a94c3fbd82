"""Prometheus version comparisons: much of the generated config depends on the version."""

from __future__ import annotations

import re
from functools import total_ordering

from promop.render.model import DEFAULT_PROMETHEUS_VERSION

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$")


class VersionError(ValueError):
    """spec.version is not a semantic version."""


@total_ordering
class Version:
    """A parsed `vMAJOR.MINOR.PATCH`; compares with other Versions or strings."""

    __slots__ = ("parts", "text")

    def __init__(self, text: str | None):
        self.text = text or DEFAULT_PROMETHEUS_VERSION
        m = _VERSION.match(self.text.strip())
        if not m:
            raise VersionError(
                f"spec.version: {self.text!r} is not a Prometheus version; use a form like v2.42.0 or v3.13.2"
            )
        self.parts = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))

    @staticmethod
    def _coerce(other: "Version | str") -> tuple[int, int, int]:
        return (other if isinstance(other, Version) else Version(other)).parts

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Version, str)):
            return NotImplemented
        return self.parts == self._coerce(other)

    def __lt__(self, other: "Version | str") -> bool:
        return self.parts < self._coerce(other)

    def __hash__(self) -> int:
        return hash(self.parts)

    def at_least(self, minimum: str) -> bool:
        return self.parts >= self._coerce(minimum)

    def __str__(self) -> str:
        return "v%d.%d.%d" % self.parts

    def __repr__(self) -> str:
        return f"Version({str(self)!r})"
