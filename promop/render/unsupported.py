"""Warnings for spec fields promop does not implement, so nothing is silently ignored.

STUB with the real signature; the implementation follows.
"""

from __future__ import annotations

from promop.render.model import Problem


def unsupported_fields(obj: dict) -> list[Problem]:
    return []
