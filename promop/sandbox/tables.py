"""Server-side printing for `kubectl get`: a meta.k8s.io/v1 Table. Built-ins get Name and Age
unless PRINTERS has their own columns (Events: as the apiserver prints them); custom resources
get Name plus their CRD's additionalPrinterColumns."""

from __future__ import annotations

from datetime import datetime, timezone
import re
import time
from typing import Callable

from promop.sandbox.watch import partial_metadata

NAME_COLUMN = {"name": "Name", "type": "string", "format": "name", "priority": 0,
               "description": "Name must be unique within a namespace."}
AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
              "description": "Time since the object was created."}
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[\?\(@\.([\w.-]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]")


def human_age(timestamp: str | None) -> str:
    """kubectl's short age of a Time or MicroTime (fractional seconds ignored)."""
    if not timestamp or not isinstance(timestamp, str):
        return "<unknown>"
    try:
        parsed = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    created = parsed.timestamp()
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


def _event_cells(event: dict) -> list:
    """The apiserver's event printer (pkg/printers/internalversion): core/v1 and
    events.k8s.io/v1 fields alike."""
    regarding = event.get("involvedObject") or event.get("regarding") or {}
    first = event.get("firstTimestamp") or event.get("deprecatedFirstTimestamp")
    first_seen = human_age(first or event.get("eventTime"))
    last = event.get("lastTimestamp") or event.get("deprecatedLastTimestamp")
    last_seen = human_age(last) if last else first_seen
    count = event.get("count") or event.get("deprecatedCount") or 0
    series = event.get("series")
    if series:
        last_seen = human_age(series.get("lastObservedTime"))
        count = series.get("count") or count
    count = count or 1
    source = event.get("source") or event.get("deprecatedSource") or {}
    component = source.get("component") or event.get("reportingController") or ""
    host = source.get("host") or ""
    return [last_seen, event.get("type") or "", event.get("reason") or "",
            f'{str(regarding.get("kind") or "").lower()}/{regarding.get("name") or ""}',
            regarding.get("fieldPath") or "", f"{component}, {host}" if host else component,
            event.get("message") or event.get("note") or "", first_seen, str(count),
            event["metadata"]["name"]]


def _column(name: str, priority: int = 0, description: str = "", format_: str = "") -> dict:
    return {"name": name, "type": "string", "format": format_, "description": description,
            "priority": priority}


EVENT_COLUMNS = [
    _column("Last Seen", description="The time at which the most recent occurrence of this "
            "event was recorded."),
    _column("Type", description="Type of this event (Normal, Warning)."),
    _column("Reason", description="A short, machine understandable string that gives the "
            "reason for the transition into the object's current status."),
    _column("Object", description="The object that this event is about."),
    _column("Subobject", 1, "The field of the object the event is about, if any."),
    _column("Source", 1, "The component reporting this event."),
    _column("Message", description="A human-readable description of the status of this "
            "operation."),
    _column("First Seen", 1, "The time at which the event was first recorded."),
    _column("Count", 1, "The number of times this event has occurred."),
    _column("Name", 1, NAME_COLUMN["description"], "name"),
]

# resource key -> (column definitions, cells of one object); open for more kinds
PRINTERS: dict[tuple[str, str], tuple[list[dict], Callable[[dict], list]]] = {
    ("", "events"): (EVENT_COLUMNS, _event_cells),
    ("events.k8s.io", "events"): (EVENT_COLUMNS, _event_cells),
}


def table(objects: list[dict], resource_version: str, continue_token: str = "",
          columns: list[dict] | None = None, key: tuple[str, str] | None = None) -> dict:
    metadata = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    printer = PRINTERS.get(key) if key is not None and not columns else None
    if printer is not None:
        definitions, cells = printer
        rows = [{"cells": cells(o), "object": partial_metadata(o)} for o in objects]
    else:
        columns = columns if columns else [AGE_COLUMN]
        definitions = [NAME_COLUMN] + [_definition(c) for c in columns]
        rows = [{"cells": [o["metadata"]["name"]] + [_cell(o, c) for c in columns],
                 "object": partial_metadata(o)} for o in objects]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
            "columnDefinitions": definitions, "rows": rows}
