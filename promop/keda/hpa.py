"""The HorizontalPodAutoscaler KEDA owns for a ScaledObject (§2.2, `controllers/keda/hpa.go`).

Why pure: the controller creates/updates it and the tests compare it field by field with KEDA's.
"""

from __future__ import annotations

from promop.keda.spec import PauseState, ScaledObject


def build_hpa(so_obj: dict, so: ScaledObject, pause: PauseState, scale_target: dict | None = None,
              keda_version: str = "2.20.2") -> dict:
    """The autoscaling/v2 HPA for `so` (its dict `so_obj` gives the uid for the owner reference).
    `scale_target` is the target object (for its apiVersion/kind as resolved); may be None."""
    raise NotImplementedError
