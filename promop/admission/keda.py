"""KEDA's ScaledObject admission webhook (`/validate-keda-sh-v1alpha1-scaledobject`, KEDA's path).

The rules and their texts are promop.keda.validate's (KEDA's scaledobject_webhook.go): bounds,
fallback, the scalingModifiers formula, trigger names, and the ownership rules that need the
namespace's other ScaledObjects and HPAs, read live through `lister` (None: a webhook without API
access checks everything but ownership, and says so in a warning).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from promop.admission import review
from promop.keda.spec import KedaSpecError
from promop.keda.validate import validate_scaled_object

# namespace -> (ScaledObjects, HPAs) of that namespace
Lister = Callable[[str], "tuple[list[dict], list[dict]]"]
PATH = "/validate-keda-sh-v1alpha1-scaledobject"


def validate(request: Mapping[str, Any], lister: Lister | None = None) -> dict:
    if request.get("operation") == "DELETE":
        return review.allowed(request)
    obj = review.request_object(request)
    if not isinstance(obj, Mapping):
        return review.denied(request, "the request carries no ScaledObject")
    obj = dict(obj)
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or request.get("namespace") or "default"
    extra_warnings: list[str] = []
    others: list[dict] = []
    hpas: list[dict] = []
    if lister is None:
        extra_warnings.append("the webhook has no API access: a second ScaledObject or a foreign HPA on the same "
                              "target is not checked")
    else:
        try:
            others, hpas = lister(namespace)
        except Exception as exc:  # noqa: BLE001 - the API down: check what we can, say what we could not
            extra_warnings.append(f"could not list the namespace's ScaledObjects and HPAs ({exc}); ownership not "
                                  "checked")
        others = [o for o in others if (o.get("metadata") or {}).get("name") != meta.get("name")]
    try:
        errors, warnings = validate_scaled_object(obj, others, hpas)
    except KedaSpecError as exc:
        errors, warnings = [str(exc)], []
    if errors:
        return review.denied(request, "; ".join(errors), warnings=[*warnings, *extra_warnings])
    return review.allowed(request, warnings=[*warnings, *extra_warnings])


def kube_lister(client: Any) -> Lister:
    """Live LISTs (a review is rare; a cache of every ScaledObject and HPA is not worth its memory)."""
    from promop.kube.resources import Resource

    scaledobjects = Resource("keda.sh", "v1alpha1", "scaledobjects", kind="ScaledObject")
    hpas = Resource("autoscaling", "v2", "horizontalpodautoscalers", kind="HorizontalPodAutoscaler")

    def lister(namespace: str) -> tuple[list[dict], list[dict]]:
        return (client.list(scaledobjects, namespace)["items"], client.list(hpas, namespace)["items"])

    return lister
