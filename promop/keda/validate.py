"""KEDA's admission webhook for ScaledObjects (§1.7, `scaledobject_webhook.go`): errors and warnings.

Why pure: promop's admission webhook and the controller's own checks (a condition and an event when
an object the webhook would have refused got in anyway) use the same rules and texts.
"""

from __future__ import annotations


def validate_scaled_object(obj: dict, other_scaled_objects: list[dict], hpas: list[dict]) -> tuple[list[str], list[str]]:
    """(errors, warnings) for `obj` given the other ScaledObjects and the HPAs of its namespace."""
    raise NotImplementedError
