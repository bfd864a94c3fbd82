"""Server-side printing for `kubectl get`: a meta.k8s.io/v1 Table with Name and Age columns."""

from __future__ import annotations

import calendar
import time

from promop.sandbox.watch import partial_metadata

COLUMNS = [
    {"name": "Name", "type": "string", "format": "name", "priority": 0,
     "description": "Name must be unique within a namespace."},
    {"name": "Age", "type": "string", "format": "", "priority": 0,
     "description": "Time since the object was created."},
]


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


def table(objects: list[dict], resource_version: str, continue_token: str = "") -> dict:
    metadata = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    rows = [{"cells": [o["metadata"]["name"], human_age(o["metadata"].get("creationTimestamp"))],
             "object": partial_metadata(o)} for o in objects]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
            "columnDefinitions": COLUMNS, "rows": rows}
