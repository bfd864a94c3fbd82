"""CustomResourceDefinition admission, as apiextensions-apiserver does it before serving a CRD.

Defaulting first (spec.names.singular from the kind, listKind as Kind+"List", conversion
strategy None), then validation of names, group, scope, versions, subresources, printer
columns and each version's schema (crd_validation_schema). A refused CRD is a 422 Invalid whose
message and causes name the fields as the real apiserver does. Like the apiserver (which keeps
one internal schema when all versions carry the same), a schema, subresources or printer
columns shared by every version are reported under `spec.validation.openAPIV3Schema`,
`spec.subresources` and `spec.additionalPrinterColumns`; otherwise under `spec.versions[i]`.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from promop.sandbox.crd_validation_fields import Cause, child, index, invalid, not_supported, required
from promop.sandbox.crd_validation_schema import check_schema
from promop.sandbox.errors import invalid as invalid_error

DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = re.compile(rf"^{DNS1123_LABEL}(\.{DNS1123_LABEL})*$")
DNS1035_ERROR = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                 "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                 "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_ERROR = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                   "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                   "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]
COLUMN_FORMATS = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"]


def check_crd(crd: dict, old: dict | None = None) -> None:
    """Default `crd` in place as the apiserver does, then raise 422 Invalid if it would refuse it
    (as a create, or as an update of `old`)."""
    default_crd(crd)
    causes = crd_causes(crd)
    if old is not None:
        causes += update_causes(crd, old)
    if causes:
        raise invalid_error("CustomResourceDefinition", "apiextensions.k8s.io",
                            (crd.get("metadata") or {}).get("name", ""), causes)


def default_crd(crd: dict) -> None:
    """apiextensions/v1 SetDefaults: singular = lowercase kind, listKind = Kind+"List", conversion None."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        if not names.get("singular"):
            names["singular"] = names["kind"].lower()
        if not names.get("listKind"):
            names["listKind"] = names["kind"] + "List"
    conversion = spec.setdefault("conversion", {"strategy": "None"})
    if isinstance(conversion, dict):
        conversion.setdefault("strategy", "None")


def crd_causes(crd: dict) -> list[Cause]:
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    causes = _name(crd, spec, names)
    causes += _group(spec.get("group"))
    causes += _scope(spec.get("scope"))
    causes += _versions(spec.get("versions"))
    causes += _names(names)
    causes += _conversion(spec.get("conversion"))
    return causes


def update_causes(crd: dict, old: dict) -> list[Cause]:
    """ValidateCustomResourceDefinitionSpecUpdate: group and plural name the resource, so never
    change; scope and kind decide storage, so never change once the CRD is Established."""
    spec, old_spec = crd.get("spec") or {}, old.get("spec") or {}
    established = any(c.get("type") == "Established" and c.get("status") == "True"
                      for c in (old.get("status") or {}).get("conditions") or [])
    fields = [("spec.scope", ("scope",)), ("spec.names.kind", ("names", "kind"))] if established else []
    fields += [("spec.group", ("group",)), ("spec.names.plural", ("names", "plural"))]
    return [invalid(path, _dig(spec, where), "field is immutable") for path, where in fields
            if _dig(spec, where) != _dig(old_spec, where)]


def _name(crd: dict, spec: dict, names: dict) -> list[Cause]:
    name = (crd.get("metadata") or {}).get("name") or ""
    causes: list[Cause] = []
    if not DNS1123_SUBDOMAIN.match(name) or len(name) > 253:
        causes.append(invalid("metadata.name", name, SUBDOMAIN_ERROR))
    if name != f"{names.get('plural', '')}.{spec.get('group', '')}":
        causes.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    return causes


def _group(group: Any) -> list[Cause]:
    if not group:
        return [required("spec.group")]
    if not isinstance(group, str) or not DNS1123_SUBDOMAIN.match(group) or len(group) > 253:
        return [invalid("spec.group", group, SUBDOMAIN_ERROR)]
    if "." not in group:
        return [invalid("spec.group", group, "should be a domain with at least one dot")]
    return []


def _label(path: str, value: Any, mixed_case: bool = False) -> list[Cause]:
    text = value.lower() if mixed_case and isinstance(value, str) else value
    if isinstance(text, str) and DNS1035.match(text) and len(text) <= 63:
        return []
    return [invalid(path, value, ("may have mixed case, but should otherwise match: " if mixed_case else "")
                    + DNS1035_ERROR)]


def _names(names: dict) -> list[Cause]:
    """ValidateCustomResourceDefinitionNames: plural/singular/shortNames/categories are DNS-1035
    labels, kind/listKind the same in mixed case, kind and listKind different."""
    causes = [required(f"spec.names.{field}") for field in ("plural", "singular", "kind", "listKind")
              if not names.get(field)]
    for field in ("plural", "singular"):
        if names.get(field):
            causes += _label(f"spec.names.{field}", names[field])
    for field in ("kind", "listKind"):
        if names.get(field):
            causes += _label(f"spec.names.{field}", names[field], mixed_case=True)
    for field in ("shortNames", "categories"):
        for i, value in enumerate(names.get(field) or []):
            causes += _label(index(f"spec.names.{field}", i), value)
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        causes.append(invalid("spec.names.listKind", names["listKind"], "kind and listKind may not be the same"))
    return causes


def _scope(scope: Any) -> list[Cause]:
    if not scope:
        return [required("spec.scope")]
    if scope not in ("Cluster", "Namespaced"):
        return [not_supported("spec.scope", scope, ["Cluster", "Namespaced"])]
    return []


def _versions(versions: Any) -> list[Cause]:
    if not isinstance(versions, list) or not versions:
        return [required("spec.versions", "must have at least one version")]
    causes: list[Cause] = []
    versions = [v if isinstance(v, dict) else {} for v in versions]
    for i, version in enumerate(versions):
        name = version.get("name")
        at = child(index("spec.versions", i), "name")
        if not isinstance(name, str) or not DNS1035.match(name) or len(name) > 63:
            causes.append(invalid(at, name or "", DNS1035_ERROR))
    if len({v.get("name") for v in versions}) != len(versions):
        causes.append(invalid("spec.versions", _names_of(versions), "must contain unique version names"))
    if sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(invalid("spec.versions", _names_of(versions), "must have exactly one version marked as storage "
                              "version"))
    if not any(v.get("served") for v in versions):
        causes.append(invalid("spec.versions", _names_of(versions), "must have at least one served version"))
    causes += _shared(versions, lambda v: _dig(v, ("schema", "openAPIV3Schema")), "validation.openAPIV3Schema",
                      "schema.openAPIV3Schema", check_schema, always=True)
    causes += _shared(versions, lambda v: v.get("subresources"), "subresources", "subresources", _subresources)
    causes += _shared(versions, lambda v: v.get("additionalPrinterColumns"), "additionalPrinterColumns",
                      "additionalPrinterColumns", _columns)
    return causes


def _names_of(versions: list[dict]) -> list[str]:
    return [str(v.get("name", "")) for v in versions]


def _shared(versions: list[dict], part_of: Callable[[dict], Any], top: str, per_version: str,
            check: Callable[[Any, str], list[Cause]], always: bool = False) -> list[Cause]:
    """Check each version's part once: at `spec.<top>` when every version carries the same one
    (the apiserver's internal form keeps it there), else at `spec.versions[i].<per_version>`."""
    parts = [part_of(v) for v in versions]
    if all(p == parts[0] for p in parts):
        return check(parts[0], f"spec.{top}") if always or parts[0] is not None else []
    return [cause for i, part in enumerate(parts) if always or part is not None
            for cause in check(part, child(index("spec.versions", i), per_version))]


def _dig(obj: Any, where: tuple[str, ...]) -> Any:
    for name in where:
        obj = obj.get(name) if isinstance(obj, dict) else None
    return obj


def _subresources(sub: Any, at: str) -> list[Cause]:
    scale = sub.get("scale") if isinstance(sub, dict) else None
    if not isinstance(scale, dict):
        return []
    at = child(at, "scale")
    causes: list[Cause] = []
    for field, under, needed in (("specReplicasPath", (".spec.",), True),
                                 ("statusReplicasPath", (".status.",), True),
                                 ("labelSelectorPath", (".spec.", ".status."), False)):
        value, path = scale.get(field), child(at, field)
        if not value:
            if needed:
                causes.append(required(path))
            continue
        simple = _simple_json_path(value, path)
        if simple:
            causes += simple
        elif not value.startswith(under):
            where = " or ".join(u.rstrip(".") for u in under)
            causes.append(invalid(path, value, f"should be a json path under {'either ' if len(under) > 1 else ''}"
                                  f"{where}"))
    return causes


def _simple_json_path(value: Any, path: str) -> list[Cause]:
    """Printer-column and scale paths are simple JSON paths (`.spec.replicas`)."""
    if not isinstance(value, str) or not value.startswith("."):
        return [invalid(path, value, "must be a simple json path starting with .")]
    return []


def _columns(columns: Any, at: str) -> list[Cause]:
    """ValidateCustomResourceColumnDefinition, for each printer column."""
    causes: list[Cause] = []
    types, formats = "must be one of " + ",".join(COLUMN_TYPES), "must be one of " + ",".join(COLUMN_FORMATS)
    for i, col in enumerate(columns if isinstance(columns, list) else []):
        col = col if isinstance(col, dict) else {}
        path = index(at, i)
        if not col.get("name"):
            causes.append(required(child(path, "name")))
        if not col.get("type"):
            causes.append(required(child(path, "type"), types))
        elif col["type"] not in COLUMN_TYPES:
            causes.append(invalid(child(path, "type"), col["type"], types))
        if col.get("format") and col["format"] not in COLUMN_FORMATS:
            causes.append(invalid(child(path, "format"), col["format"], formats))
        if not col.get("jsonPath"):
            causes.append(required(child(path, "jsonPath")))
        else:
            causes += _simple_json_path(col["jsonPath"], child(path, "jsonPath"))
    return causes


def _conversion(conversion: Any) -> list[Cause]:
    if not isinstance(conversion, dict):
        return []
    strategy = conversion.get("strategy")
    if strategy not in ("None", "Webhook"):
        return [not_supported("spec.conversion.strategy", strategy, ["None", "Webhook"])]
    if strategy == "Webhook" and not isinstance(conversion.get("webhook"), dict):
        return [required("spec.conversion.webhook", "required when strategy is set to Webhook")]
    if strategy == "None" and conversion.get("webhook"):
        return [("spec.conversion.webhook", "Forbidden: should be null when strategy is set to None")]
    return []
