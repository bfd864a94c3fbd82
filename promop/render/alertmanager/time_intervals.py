"""Time intervals: CRD `timeIntervals` -> Alertmanager's, and Alertmanager's own re-printed as it marshals them.

Alertmanager prints weekdays as lower-case names, months, days of month and
years as numbers, and a range whose ends are equal as a single value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from promop.render.alertmanager.common import Reject

WEEKDAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
_TIME = re.compile(r"^(\d{2}):(\d{2})$")


def _minutes(text: Any, field: str, error: type[Exception]) -> int:
    m = _TIME.match(text) if isinstance(text, str) else None
    if not m:
        raise error(field, f"{text!r} is not a time of day; use HH:MM (00:00 to 24:00)")
    hours, minutes = int(m.group(1)), int(m.group(2))
    total = hours * 60 + minutes
    if minutes > 59 or total > 24 * 60:
        raise error(field, f"{text!r} is out of range; use HH:MM between 00:00 and 24:00")
    return total


def _times(start: Any, end: Any, field: str, error: type[Exception]) -> dict:
    a = _minutes(start, f"{field}.start", error)
    b = _minutes(end, f"{field}.end", error)
    if a >= b:
        raise error(field, f"start time {start} must be before end time {end}")
    return {"start_time": start, "end_time": end}


def _range(text: Any, field: str, error: type[Exception], parse) -> str:
    """`a` or `a:b`, each end parsed by `parse(str) -> int | None`; printed as numbers or names."""
    raw = str(text).strip() if isinstance(text, (str, int)) and not isinstance(text, bool) else None
    if not raw:
        raise error(field, f"{text!r} is not a value or range")
    parts = raw.split(":")
    if len(parts) > 2:
        raise error(field, f"{text!r} is not a value or a range `a:b`")
    values = [parse(p.strip()) for p in parts]
    if any(v is None for v in values):
        raise error(field, f"{text!r} is not valid here")
    if len(values) == 2 and values[0] > values[1] and not (values[0] > 0 > values[1]):
        raise error(field, f"range {text!r} ends before it starts")
    return values


def _weekday(text: str) -> int | None:
    t = text.lower()
    return WEEKDAYS.index(t) if t in WEEKDAYS else None


def _month(text: str) -> int | None:
    t = text.lower()
    if t in MONTHS:
        return MONTHS.index(t) + 1
    if t.isdigit() and 1 <= int(t) <= 12:
        return int(t)
    return None


def _day(text: str) -> int | None:
    try:
        v = int(text)
    except ValueError:
        return None
    return v if v != 0 and -31 <= v <= 31 else None


def _year(text: str) -> int | None:
    return int(text) if text.isdigit() and int(text) > 0 else None


def _join(values: list[int], names: tuple[str, ...] | None = None) -> str:
    shown = [names[v] if names else str(v) for v in values]
    return shown[0] if len(shown) == 1 or shown[0] == shown[1] else f"{shown[0]}:{shown[1]}"


def normalise_interval(ti: Any, field: str, error: type[Exception]) -> dict:
    """One Alertmanager `time_intervals` entry (snake_case keys), validated and re-printed."""
    if not isinstance(ti, Mapping):
        raise error(field, "must be a mapping")
    out: dict = {}
    known = {"times", "weekdays", "days_of_month", "months", "years", "location"}
    unknown = sorted(set(ti) - known)
    if unknown:
        raise error(f"{field}.{unknown[0]}", f"unknown field; known: {', '.join(sorted(known))}")
    if ti.get("times"):
        out["times"] = [_times((t or {}).get("start_time"), (t or {}).get("end_time"), f"{field}.times[{i}]", error)
                        for i, t in enumerate(ti["times"])]
    if ti.get("weekdays"):
        out["weekdays"] = [_join(_range(w, f"{field}.weekdays[{i}]", error, _weekday), WEEKDAYS)
                           for i, w in enumerate(ti["weekdays"])]
    if ti.get("days_of_month"):
        out["days_of_month"] = [_join(_range(d, f"{field}.days_of_month[{i}]", error, _day))
                                for i, d in enumerate(ti["days_of_month"])]
    if ti.get("months"):
        out["months"] = [_join(_range(m, f"{field}.months[{i}]", error, _month)) for i, m in enumerate(ti["months"])]
    if ti.get("years"):
        out["years"] = [_join(_range(y, f"{field}.years[{i}]", error, _year)) for i, y in enumerate(ti["years"])]
    if ti.get("location"):
        out["location"] = ti["location"]
    return out


def normalise_named(entries: Any, field: str, error: type[Exception]) -> list[dict]:
    """A base config's `mute_time_intervals` / `time_intervals` list, re-printed."""
    if not isinstance(entries, list):
        raise error(field, "must be a list of {name, time_intervals}")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not entry.get("name"):
            raise error(f"{field}[{i}].name", "every time interval needs a name")
        out.append({"name": entry["name"], "time_intervals": [
            normalise_interval(ti, f"{field}[{i}].time_intervals[{j}]", error)
            for j, ti in enumerate(entry.get("time_intervals") or [])]})
    return out


def convert_crd_interval(ti: Any, field: str) -> dict:
    """A CRD TimeInterval (camelCase) -> Alertmanager's, validated (Reject on error)."""
    if not isinstance(ti, Mapping):
        raise Reject(field, "must be a mapping")
    am: dict = {}
    if ti.get("times"):
        am["times"] = [{"start_time": (t or {}).get("startTime"), "end_time": (t or {}).get("endTime")} for t in ti["times"]]
    if ti.get("weekdays"):
        am["weekdays"] = list(ti["weekdays"])
    if ti.get("daysOfMonth"):
        days = []
        for i, d in enumerate(ti["daysOfMonth"]):
            if not isinstance(d, Mapping) or not isinstance(d.get("start"), int):
                raise Reject(f"{field}.daysOfMonth[{i}]", "needs start (and optionally end) day numbers")
            end = d.get("end") if isinstance(d.get("end"), int) and d.get("end") else d["start"]
            days.append(f"{d['start']}:{end}" if end != d["start"] else f"{d['start']}")
        am["days_of_month"] = days
    if ti.get("months"):
        am["months"] = list(ti["months"])
    if ti.get("years"):
        am["years"] = list(ti["years"])
    try:
        return normalise_interval(am, field, Reject)
    except Reject as exc:
        raise Reject(crd_field(exc.field), exc.message) from None


def crd_field(path: str) -> str:
    """Map a snake_case path back to the CRD's names for messages."""
    return (path.replace("start_time", "startTime").replace("end_time", "endTime")
            .replace("days_of_month", "daysOfMonth").replace("time_intervals", "timeIntervals"))
