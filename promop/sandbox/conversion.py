"""CRD version conversion, as kube-apiserver does it between a served version and storage.

With `spec.conversion.strategy: None` (the default) only apiVersion changes, which
is what the sandbox always did. With `Webhook`, the sandbox keeps custom resources
in the storage version: a write in another served version is converted to storage
by a ConversionReview (apiextensions.k8s.io/v1) to the CRD's
`spec.conversion.webhook.clientConfig`, and a read in another version (get, list)
is converted back the same way. A failed conversion answers 500 with the
apiserver's wording (`conversion webhook for <group>/<version>, Kind=<kind> failed: ...`).
Watch events are converted too; an event whose conversion fails is sent with only its
apiVersion changed (the apiserver would end the stream with an error).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from promop.sandbox.errors import ApiError
from promop.sandbox.resources import ResourceType
from promop.sandbox.webhook_call import CallError, ServiceAddresses, post

CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
DEFAULT_TIMEOUT = 10  # seconds; conversion webhooks have no timeoutSeconds field in v1


class Conversion:
    def __init__(self, store, services: ServiceAddresses) -> None:
        self.store = store
        self.services = services

    def _webhook(self, rt: ResourceType) -> Mapping[str, Any] | None:
        if rt.builtin or not rt.crd_name:
            return None
        crd = self.store.get(CRDS, "", rt.crd_name) or {}
        conversion = (crd.get("spec") or {}).get("conversion") or {}
        if conversion.get("strategy") != "Webhook":
            return None
        return conversion.get("webhook") or {}

    def uses_webhook(self, rt: ResourceType) -> bool:
        return self._webhook(rt) is not None

    def convert(self, rt: ResourceType, obj: dict, version: str) -> dict:
        """`obj` (of rt's resource, any version) in `version` of rt's group."""
        target = f"{rt.group}/{version}"
        if obj.get("apiVersion") == target or obj.get("kind") != rt.kind:
            return obj
        webhook = self._webhook(rt)
        if webhook is None:
            return dict(obj, apiVersion=target)
        source = obj.get("apiVersion", "")
        where = f"conversion webhook for {source}, Kind={rt.kind} failed"
        try:
            if "v1" not in (webhook.get("conversionReviewVersions") or []):
                raise CallError("the webhook does not accept v1 ConversionReview")
            uid = str(uuid.uuid4())
            review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                      "request": {"uid": uid, "desiredAPIVersion": target, "objects": [obj]}}
            answer = post(webhook.get("clientConfig") or {}, self.services, review, DEFAULT_TIMEOUT)
            response = answer.get("response") if isinstance(answer, Mapping) else None
            if not isinstance(response, Mapping) or response.get("uid") != uid:
                raise CallError(f"expected response.uid={uid!r}")
            result = response.get("result") or {}
            if result.get("status") != "Success":
                raise CallError(result.get("message") or "conversion failed without a message")
            converted = response.get("convertedObjects") or []
            if len(converted) != 1 or not isinstance(converted[0], dict):
                raise CallError(f"returned {len(converted)} objects, expected 1")
            out = converted[0]
            if out.get("apiVersion") != target:
                raise CallError(f"invalid converted object: apiVersion {out.get('apiVersion')!r}, "
                                f"expected {target!r}")
        except CallError as exc:
            raise ApiError(500, f"{where}: {exc}", reason="InternalError") from None
        meta = dict(out.get("metadata") or {})
        # the apiserver allows a webhook to change labels and annotations only
        original = obj.get("metadata") or {}
        for key in original:
            if key not in ("labels", "annotations"):
                meta[key] = original[key]
        return dict(out, metadata=meta)

    def to_storage(self, rt: ResourceType, obj: dict) -> dict:
        return self.convert(rt, obj, rt.storage_version) if self.uses_webhook(rt) else obj

    def to_served(self, rt: ResourceType, obj: dict) -> dict:
        """What a client reading through `rt` sees (unchanged unless a conversion webhook applies)."""
        if obj.get("apiVersion") == rt.api_version or not self.uses_webhook(rt):
            return obj
        return self.convert(rt, obj, rt.version)

    def present(self, rt: ResourceType, obj: dict) -> dict:
        """`obj` as a read through `rt` returns it: converted by the webhook, else only relabelled."""
        if obj.get("apiVersion") == rt.api_version or obj.get("kind") != rt.kind:
            return obj
        return self.to_served(rt, obj) if self.uses_webhook(rt) else dict(obj, apiVersion=rt.api_version)

    def watched(self, rt: ResourceType, obj: dict) -> dict:
        """A watch event's object in rt's version (called with the store's lock held: never raises)."""
        try:
            return self.to_served(rt, obj)
        except ApiError:
            return dict(obj, apiVersion=rt.api_version)
