"""The PodDisruptionBudget kind (policy/v1): validation as ValidatePodDisruptionBudgetSpec and
`kubectl get pdb`'s columns as the apiserver's printer. Its status: promop.sandbox.disruption."""

from __future__ import annotations

from typing import Any

PDBS = ("policy", "poddisruptionbudgets")

PERCENT_MESSAGE = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
                   "'93%', regex used for validation is '[0-9]+%')")
POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def _int_or_percent_causes(value: Any, at: str) -> list[tuple[str, str]]:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return [(at, f"Invalid value: {value!r}: must be an integer or percentage (e.g '5%')")]
    if isinstance(value, int):
        return [(at, f"Invalid value: {value}: must be greater than or equal to 0")] if value < 0 else []
    if not value.endswith("%") or not value[:-1].isdigit():
        return [(at, f'Invalid value: "{value}": {PERCENT_MESSAGE}')]
    if int(value[:-1]) > 100:
        return [(at, f'Invalid value: "{value}": must not be greater than 100%')]
    return []


def validate_pdb(obj: dict) -> list[tuple[str, str]]:
    """422 causes for a PodDisruptionBudget's spec (the values are printed as JSON where Go
    prints its structs)."""
    spec = obj.get("spec") or {}
    out = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        out.append(("spec", "Invalid value: \"object\": minAvailable and maxUnavailable cannot be both set"))
    for field in ("minAvailable", "maxUnavailable"):
        if spec.get(field) is not None:
            out += _int_or_percent_causes(spec[field], f"spec.{field}")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in POLICIES:
        out.append(("spec.unhealthyPodEvictionPolicy",
                    f'Unsupported value: "{policy}": supported values: "AlwaysAllow", "IfHealthyBudget"'))
    return out


PRINTER_COLUMNS = [
    {"name": "Name", "type": "string", "format": "name", "priority": 0,
     "description": "Name must be unique within a namespace."},
    {"name": "Min Available", "type": "string", "format": "", "priority": 0,
     "description": "The minimum number or percentage of available pods this budget requires."},
    {"name": "Max Unavailable", "type": "string", "format": "", "priority": 0,
     "description": "The maximum number or percentage of unavailable pods this budget requires."},
    {"name": "Allowed Disruptions", "type": "integer", "format": "", "priority": 0,
     "description": "Number of pod disruptions that are currently allowed."},
    {"name": "Age", "type": "string", "format": "", "priority": 0,
     "description": "Time since the object was created."},
]


def _printer_cells(pdb: dict) -> list:
    """`kubectl get pdb`'s row, as the apiserver's printer: N/A for the unset bound."""
    from promop.sandbox.tables import human_age

    spec = pdb.get("spec") or {}
    bound = lambda value: "N/A" if value is None else str(value)  # noqa: E731
    return [pdb["metadata"]["name"], bound(spec.get("minAvailable")), bound(spec.get("maxUnavailable")),
            int((pdb.get("status") or {}).get("disruptionsAllowed") or 0),
            human_age(pdb["metadata"].get("creationTimestamp"))]


def _register_kind() -> None:
    from promop.sandbox import kinds, tables

    kinds.RULES[PDBS] = kinds.KindRules(validate_pdb)
    tables.PRINTERS[PDBS] = (PRINTER_COLUMNS, _printer_cells)


_register_kind()
