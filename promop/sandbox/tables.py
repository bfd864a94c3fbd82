"""Server-side printing for `kubectl get`: a meta.k8s.io/v1 Table. Built-ins get Name and Age;
custom resources get Name plus their CRD's additionalPrinterColumns."""

from __future__ import annotations

import calendar
import re
import time

from promop.sandbox.watch import partial_metadata

NAME_COLUMN = {"name": "Name", "type": "string", "format": "name", "priority": 0,
               "description": "Name must be unique within a namespace."}
AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
              "description": "Time since the object was created."}
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[\?\(@\.([\w.-]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]")


def human_age(timestamp: str | None) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        created = calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return "<unknown>"
    seconds = max(0, int(time.time() - created))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2 or (unit == "m" and seconds >= 60):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def json_path(obj, path: str):
    """The subset printer columns use: `.a.b`, `[0]`, `[?(@.type=="Ready")]`."""
    current = [obj]
    for match in _STEP.finditer(path.strip().lstrip("{").rstrip("}")):
        key, index, filter_key, filter_value = match.groups()
        following = []
        for value in current:
            if key is not None and isinstance(value, dict) and key in value:
                following.append(value[key])
            elif index is not None and isinstance(value, list) and int(index) < len(value):
                following.append(value[int(index)])
            elif filter_key is not None and isinstance(value, list):
                following += [item for item in value if isinstance(item, dict)
                              and str(item.get(filter_key)) == filter_value]
        current = following
    return current[0] if current else None


def _cell(obj: dict, column: dict):
    value = json_path(obj, column["jsonPath"])
    if column.get("type") == "date":
        return human_age(value) if value else "<unknown>"
    return value


def _definition(column: dict) -> dict:
    return {"name": column["name"], "type": column.get("type", "string"),
            "format": column.get("format", ""), "description": column.get("description", ""),
            "priority": column.get("priority", 0)}


def table(objects: list[dict], resource_version: str, continue_token: str = "",
          columns: list[dict] | None = None) -> dict:
    columns = columns if columns else [AGE_COLUMN]
    metadata = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    rows = [{"cells": [o["metadata"]["name"]] + [_cell(o, c) for c in columns],
             "object": partial_metadata(o)} for o in objects]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
            "columnDefinitions": [NAME_COLUMN] + [_definition(c) for c in columns],
            "rows": rows}
