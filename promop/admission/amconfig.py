"""AlertmanagerConfig validation, as upstream's `/admission-alertmanagerconfigs/validate`.

The webhook runs the Alertmanager renderer's own conversion and sanitising
(promop.render.alertmanager.amconfig) on the one object, so it refuses what the
operator would reject later. What the webhook cannot know is left to the operator:
referenced Secrets/ConfigMaps are not read (a reference is taken as present, as
upstream's webhook does), the `global` section of the Alertmanager's base config is
assumed to provide SMTP defaults, and the Alertmanager version is the default one.
A v1beta1 object is converted to v1alpha1 first (conversion.py): one set of checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.admission import conversion, review
from promop.render.alertmanager import amconfig
from promop.render.alertmanager.common import DEFAULT_ALERTMANAGER_VERSION, AMScope, AMVersion, Reject, Store
from promop.render.alertmanager.receivers import ReceiverContext
from promop.render.alertmanager.sanitize import Sanitizer


class _AnyReference(Store):
    """A store in which every referenced Secret/ConfigMap exists: the webhook checks the object's own shape."""

    def exists(self, kind: str, namespace: str, name: str) -> bool:
        return True

    def get(self, kind: str, namespace: str, name: str, key: str) -> str | None:
        return None


# What a referenced key "holds" for the webhook: its value is the operator's to check (it reads the Secret),
# so it must pass every value check (a URL, a non-empty token). TLS material is left unread (None).
PLACEHOLDER = "https://referenced-secret.invalid/"


class _AdmissionScope(AMScope):
    def read(self, kind: str, ref: Any, field: str) -> str | None:
        if not isinstance(ref, Mapping) or not ref.get("key"):
            raise Reject(field, f"must reference a {kind} key with name and key")
        if not ref.get("name"):
            raise Reject(f"{field}.name", f"the {kind} name is empty; set the name of a {kind} in namespace "
                                          f"{self.namespace!r}")
        return None if "tlsConfig" in field else PLACEHOLDER


class _GlobalDefaults(ReceiverContext):
    def global_has(self, key: str) -> bool:
        return True


def problems(obj: Mapping[str, Any], warnings: list[str] | None = None) -> list[tuple[str, str]]:
    """(field, message) of the first problem the renderer would reject this AlertmanagerConfig for; [] if none.
    What the renderer would only warn about (e.g. a field the default Alertmanager version drops) is
    appended to `warnings`."""
    warned: list[str] = [] if warnings is None else warnings
    version_name = conversion.version_of(obj.get("apiVersion") or f"{conversion.GROUP}/v1alpha1")
    alpha = conversion.convert(obj, f"{conversion.GROUP}/v1alpha1") if version_name == "v1beta1" else obj
    meta = alpha.get("metadata") or {}
    ns, name = meta.get("namespace", ""), meta.get("name", "")
    version = AMVersion(DEFAULT_ALERTMANAGER_VERSION)
    scope = _AdmissionScope(_AnyReference(), "AlertmanagerConfig", ns, name, version)
    try:
        frag = amconfig.convert(alpha, scope, _GlobalDefaults(None), ns)
        amconfig.sanitize_fragment(frag, Sanitizer(version, lambda fld, msg: warned.append(f"{fld}: {msg}"), Reject))
    except Reject as exc:
        fld = exc.field
        if version_name == "v1beta1" and fld.startswith("spec.muteTimeIntervals"):
            fld = "spec.timeIntervals" + fld[len("spec.muteTimeIntervals"):]
        return [(fld, exc.message)]
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:
        return [("spec", f"malformed object ({type(exc).__name__}: {exc}); check it against the CRD schema")]
    warned.extend(f"{p.field}: {p.message}" for p in scope.warnings)
    return []


def validate(request: Mapping[str, Any]) -> dict:
    obj = review.request_object(request)
    if not isinstance(obj, Mapping):
        return review.denied(request, "the request carries no AlertmanagerConfig object", reason="BadRequest")
    warnings: list[str] = []
    try:
        found = problems(obj, warnings)
    except conversion.ConversionError as exc:
        return review.denied(request, str(exc), reason="BadRequest")
    if not found:
        return review.allowed(request, warnings)
    meta = obj.get("metadata") or {}
    message = f"AlertmanagerConfig {meta.get('namespace', '')}/{meta.get('name', '')} is invalid: " + "; ".join(
        f"{f}: {m}" for f, m in found)
    return review.denied(request, message, found, warnings=warnings)
