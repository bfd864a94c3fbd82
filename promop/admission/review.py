"""AdmissionReview (admission.k8s.io/v1) in and out: the envelope every handler shares.

The apiserver sends `request` and expects the same apiVersion/kind back with
`response.uid` echoing the request's uid; a refusal carries a metav1.Status in
`response.status` (upstream's handlers fill `details.causes`, one per problem).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

API_VERSION = "admission.k8s.io/v1"


class ReviewError(ValueError):
    """The request body is not an AdmissionReview we can answer."""


def parse_review(body: bytes) -> dict:
    """The decoded AdmissionReview, or ReviewError saying what is wrong with it."""
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ReviewError(f"the body is not JSON: {exc}") from None
    if not isinstance(review, Mapping) or not isinstance(review.get("request"), Mapping):
        raise ReviewError("the body is not an AdmissionReview: it has no request")
    return dict(review)


def allowed(request: Mapping[str, Any], warnings: Sequence[str] = (), patch: Sequence[dict] | None = None) -> dict:
    """An allowing response; a JSONPatch (list of RFC 6902 operations) goes base64-encoded, as the API wants."""
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    if warnings:
        response["warnings"] = list(warnings)
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(list(patch)).encode()).decode()
    return response


def denied(request: Mapping[str, Any], message: str, causes: Sequence[tuple[str, str]] = (), code: int = 400,
           reason: str = "", warnings: Sequence[str] = ()) -> dict:
    """A refusing response: `message` is what kubectl shows after `denied the request: `. Like upstream's,
    it gives no reason by default: kubectl then prints the message whole (with reason Invalid it would
    print only the causes)."""
    status: dict[str, Any] = {"status": "Failure", "message": message, "code": code}
    if reason:
        status["reason"] = reason
    if causes:
        status["details"] = {"causes": [{"field": f, "message": m} for f, m in causes]}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": False, "status": status}
    if warnings:
        response["warnings"] = list(warnings)
    return response


def envelope(response: dict) -> dict:
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def request_object(request: Mapping[str, Any]) -> Any:
    """The object under review (for DELETE the apiserver sends only oldObject)."""
    obj = request.get("object")
    return obj if obj is not None else request.get("oldObject")
