"""Admission checks that answer 422 Invalid: names, metadata, StatefulSet immutability (CRDs: crd_validation)."""

from __future__ import annotations

import re

from promop.sandbox.errors import invalid
from promop.sandbox.resources import ResourceType

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# kinds whose names must be DNS-1123 labels rather than subdomains
_LABEL_NAMED = {("", "namespaces"), ("", "services")}

ANNOTATIONS_MAX = 262144  # total bytes of keys and values, as apimachinery's validation

# StatefulSet spec fields an update may change; anything else is forbidden (apps/v1 validation)
STATEFULSET_MUTABLE = {"replicas", "template", "updateStrategy",
                       "persistentVolumeClaimRetentionPolicy", "minReadySeconds", "ordinals"}


def _qualified_key_problem(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "prefix part must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (at most 63 characters)")
    return None


def check_metadata(rt: ResourceType, obj: dict) -> None:
    meta = obj["metadata"]
    name = meta.get("name") or ""
    causes: list[tuple[str, str]] = []
    if not name:
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    elif rt.key in _LABEL_NAMED:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            causes.append(("metadata.name", f'Invalid value: "{name}": a lowercase RFC 1123 '
                           "label must consist of lower case alphanumeric characters or '-', "
                           "and must start and end with an alphanumeric character"))
    elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        causes.append(("metadata.name", f'Invalid value: "{name}": a lowercase RFC 1123 '
                       "subdomain must consist of lower case alphanumeric characters, '-' or "
                       "'.', and must start and end with an alphanumeric character"))
    for key, value in (meta.get("labels") or {}).items():
        problem = _qualified_key_problem(key)
        if problem:
            causes.append((f"metadata.labels", f'Invalid value: "{key}": {problem}'))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append((f"metadata.labels", f'Invalid value: "{value}": a valid label value '
                           "must be 63 characters or less and consist of alphanumerics, '-', "
                           "'_' or '.', starting and ending with an alphanumeric"))
    annotations = meta.get("annotations") or {}
    for key in annotations:
        problem = _qualified_key_problem(key)
        if problem:
            causes.append(("metadata.annotations", f'Invalid value: "{key}": {problem}'))
    size = sum(len(k) + len(str(v)) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX:
        causes.append(("metadata.annotations", f"Too long: must have at most {ANNOTATIONS_MAX} "
                       f"bytes (has {size}; big objects need server-side apply)"))
    for ref in meta.get("ownerReferences") or []:
        for required in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(required):
                causes.append((f"metadata.ownerReferences.{required}", "Required value"))
    if causes:
        raise invalid(rt.kind, rt.group, name, causes)


def check_statefulset_update(old: dict, new: dict) -> None:
    """apps/v1: 'updates to statefulset spec for fields other than ... are forbidden'."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    changed = sorted(k for k in set(old_spec) | set(new_spec)
                     if k not in STATEFULSET_MUTABLE and old_spec.get(k) != new_spec.get(k))
    if changed:
        raise invalid("StatefulSet", "apps", new["metadata"]["name"], [(
            "spec", "Forbidden: updates to statefulset spec for fields other than 'replicas', "
            "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' "
            f"and 'minReadySeconds' are forbidden (changed: {', '.join(changed)})")])

