"""Admission checks that answer 422 Invalid: names, metadata, StatefulSet immutability (CRDs: crd_validation)."""

from __future__ import annotations

import re

from promop.sandbox.errors import invalid
from promop.sandbox.resources import ResourceType

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

ANNOTATIONS_MAX = 262144  # total bytes of keys and values, as apimachinery's validation

# StatefulSet spec fields an update may change; anything else is forbidden (apps/v1 validation)
STATEFULSET_MUTABLE = {"replicas", "template", "updateStrategy",
                       "persistentVolumeClaimRetentionPolicy", "minReadySeconds", "ordinals"}


_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric character "
                  "(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                  "(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
              "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
              "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character (e.g. "
                "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def path_segment_problems(name: str) -> list[str]:
    """apimachinery IsValidPathSegmentName: the only rule a name must follow to be a URL path
    segment, and all the RBAC kinds (and core/v1 Events) ask of theirs, so `:` is fine."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in "/%" if c in name]


def subdomain_problems(name: str) -> list[str]:
    """NameIsDNSSubdomain: what most kinds (and every custom resource) ask of their names."""
    problems = ["must be no more than 253 characters"] if len(name) > 253 else []
    return problems + ([] if _DNS_SUBDOMAIN.match(name) else [_SUBDOMAIN_MSG])


def label_problems(name: str) -> list[str]:
    """NameIsDNSLabel: Namespaces."""
    problems = ["must be no more than 63 characters"] if len(name) > 63 else []
    return problems + ([] if _DNS_LABEL.match(name) else [_LABEL_MSG])


def dns1035_problems(name: str) -> list[str]:
    """NameIsDNS1035Label: Services (their names become DNS names and env variables)."""
    problems = ["must be no more than 63 characters"] if len(name) > 63 else []
    return problems + ([] if _DNS1035_LABEL.match(name) else [_DNS1035_MSG])


def _apiservice_problems(obj: dict) -> list[str]:
    """kube-aggregator: a path segment, and exactly `spec.version + "." + spec.group`."""
    name, spec = obj["metadata"]["name"], obj.get("spec") or {}
    required = f"{spec.get('version', '')}.{spec.get('group', '')}"
    problems = path_segment_problems(name)
    if not problems and name != required:
        problems.append(f'must be `spec.version+"."+spec.group`: "{required}"')
    return problems


_RBAC = "rbac.authorization.k8s.io"
# kube-apiserver's name validator per built-in kind, where it is not NameIsDNSSubdomain
_NAME_RULES = {
    ("", "namespaces"): lambda obj: label_problems(obj["metadata"]["name"]),
    ("", "services"): lambda obj: dns1035_problems(obj["metadata"]["name"]),
    ("", "events"): lambda obj: path_segment_problems(obj["metadata"]["name"]),  # core/v1 only
    (_RBAC, "roles"): lambda obj: path_segment_problems(obj["metadata"]["name"]),
    (_RBAC, "rolebindings"): lambda obj: path_segment_problems(obj["metadata"]["name"]),
    (_RBAC, "clusterroles"): lambda obj: path_segment_problems(obj["metadata"]["name"]),
    (_RBAC, "clusterrolebindings"): lambda obj: path_segment_problems(obj["metadata"]["name"]),
    ("apiregistration.k8s.io", "apiservices"): _apiservice_problems,
}


def name_problems(rt: ResourceType, obj: dict) -> list[str]:
    """What kube-apiserver would say about `obj`'s (non-empty) name for its kind."""
    rule = _NAME_RULES.get(rt.key)
    return rule(obj) if rule else subdomain_problems(obj["metadata"]["name"])



def qualified_key_problem(key: str) -> str | None:
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
    else:
        causes += [("metadata.name", f'Invalid value: "{name}": {problem}')
                   for problem in name_problems(rt, obj)]
    for key, value in (meta.get("labels") or {}).items():
        problem = qualified_key_problem(key)
        if problem:
            causes.append((f"metadata.labels", f'Invalid value: "{key}": {problem}'))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append((f"metadata.labels", f'Invalid value: "{value}": a valid label value '
                           "must be 63 characters or less and consist of alphanumerics, '-', "
                           "'_' or '.', starting and ending with an alphanumeric"))
    annotations = meta.get("annotations") or {}
    for key in annotations:
        problem = qualified_key_problem(key)
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

