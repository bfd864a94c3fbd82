"""Prometheus version comparisons: much of the generated config depends on the version.

Semantic versions as upstream parses them (blang/semver ParseTolerant): a leading `v`, a
missing patch (`2.45` = `2.45.0`), and pre-releases that sort *before* their release
(`v3.0.0-rc.0` < `v3.0.0`), so a pre-release gets a feature only where upstream's
minimum is itself that pre-release (e.g. `PrometheusText1.0.0` needs `3.0.0-rc.0`).
Build metadata (`+...`) is ignored.
"""

from __future__ import annotations

import re
from functools import lru_cache, total_ordering

from promop.render.model import DEFAULT_PROMETHEUS_VERSION

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]*)?$")
SUPPORTED_MAJORS = (2, 3)


class VersionError(ValueError):
    """spec.version is not a semantic version (or not Prometheus 2.x/3.x)."""


def _pre_key(pre: str | None) -> tuple:
    """Semver precedence of a pre-release: none sorts last; numeric ids before alphanumeric ones."""
    if not pre:
        return (1,)
    ids = []
    for part in pre.split("."):
        ids.append((0, int(part), "") if part.isdigit() else (1, 0, part))
    return (0, tuple(ids))


@total_ordering
class Version:
    """A parsed `vMAJOR.MINOR.PATCH[-PRERELEASE]`; compares with other Versions or strings."""

    __slots__ = ("parts", "pre", "text", "_key")

    def __init__(self, text: str | None):
        self.text = text or DEFAULT_PROMETHEUS_VERSION
        m = _VERSION.match(self.text.strip())
        if not m:
            raise VersionError(
                f"spec.version: {self.text!r} is not a Prometheus version; use a form like v2.42.0 or v3.13.2"
            )
        self.parts = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
        self.pre = m.group(4) or ""
        self._key = (self.parts, _pre_key(self.pre))

    @staticmethod
    def _coerce(other: "Version | str") -> tuple:
        return other._key if isinstance(other, Version) else _key_of(other)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Version, str)):
            return NotImplemented
        return self._key == self._coerce(other)

    def __lt__(self, other: "Version | str") -> bool:
        return self._key < self._coerce(other)

    def __hash__(self) -> int:
        return hash(self._key)

    @property
    def major(self) -> int:
        return self.parts[0]

    def at_least(self, minimum: str) -> bool:
        return self._key >= self._coerce(minimum)

    def __str__(self) -> str:
        base = "v%d.%d.%d" % self.parts
        return f"{base}-{self.pre}" if self.pre else base

    def __repr__(self) -> str:
        return f"Version({str(self)!r})"


@lru_cache(maxsize=512)
def _key_of(text: str) -> tuple:
    """The sort key of a version string (minimums are a few constants, compared very often)."""
    return Version(text)._key
