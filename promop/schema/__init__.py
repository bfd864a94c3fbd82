"""Validate objects against CRD schemas, as the apiserver does. Neutral: no runtime, no renderer.

    validate(obj, schema) -> list[Violation]     Violation(path, message); empty: accepted
    unknown_fields(obj, schema) -> list[str]     fields the apiserver would prune (for warnings)
    crd_schema(kind, version=None, group=None, folder=None) -> dict   from promop's crds/
    schema_for(obj, folder=None) -> dict         the same, from obj's apiVersion and kind

    >>> schema = crd_schema("ServiceMonitor", "v1")
    >>> [str(v) for v in validate({"spec": {"endpoints": [{"proxyUrl": "::x"}]}}, schema)]
    ["spec.endpoints[0].proxyUrl: Invalid value: \\"::x\\": should match '^(http|https|socks5)://.+$'"]

What is checked, and which Kubernetes extensions are honoured: see promop/schema/validate.py.
CEL rules (`x-kubernetes-validations`): promop/schema/rules.py and cel.py (`compile_rule`,
`compile_error`); the prune/default/unknown-field walk the sandbox shares: promop/schema/walk.py.
"""

from promop.schema.crds import SchemaNotFound, crd_schema, load_crds, schema_for, split_api_version
from promop.schema.validate import Violation, unknown_fields, validate

__all__ = [
    "SchemaNotFound",
    "Violation",
    "crd_schema",
    "load_crds",
    "schema_for",
    "split_api_version",
    "unknown_fields",
    "validate",
]
