"""Label and field selector *strings*, as they arrive in `labelSelector`/`fieldSelector` query
parameters, parsed into predicates over plain object dicts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from promop.sandbox.errors import bad_request

_KEY = re.compile(r"[A-Za-z0-9_./-]+")
_VALUE = re.compile(r"[A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        try:
            number = int(value) if present else None
        except ValueError:
            return False
        if number is None:
            return False
        return number > int(self.values[0]) if self.op == "gt" else number < int(self.values[0])


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def at_end(self) -> bool:
        self.skip_spaces()
        return self.pos >= len(self.text)

    def take(self, literal: str) -> bool:
        self.skip_spaces()
        if self.text.startswith(literal, self.pos):
            self.pos += len(literal)
            return True
        return False

    def take_word(self, word: str) -> bool:
        """`in`/`notin` only when followed by a space or `(`, so keys like `inx` still parse."""
        self.skip_spaces()
        end = self.pos + len(word)
        if self.text.startswith(word, self.pos) and end < len(self.text) and \
                self.text[end] in " (":
            self.pos = end
            return True
        return False

    def match(self, pattern: re.Pattern) -> str:
        self.skip_spaces()
        found = pattern.match(self.text, self.pos)
        value = found.group(0) if found else ""
        self.pos += len(value)
        return value

    def fail(self, what: str) -> None:
        raise bad_request(f'unable to parse requirement: {what} at position {self.pos} in '
                          f'label selector "{self.text}"')


def parse_label_selector(text: str | None) -> list[Requirement]:
    """Parse `a=b,c!=d,e in (x,y),f notin (z),g,!h` (and `==`, `>`, `<`)."""
    if not text or not text.strip():
        return []
    scan = _Scanner(text)
    requirements: list[Requirement] = []
    while True:
        if scan.take("!"):
            key = scan.match(_KEY)
            if not key:
                scan.fail("expected a key after '!'")
            requirements.append(Requirement(key, "!"))
        else:
            key = scan.match(_KEY)
            if not key:
                scan.fail("expected a label key")
            requirements.append(_parse_operator(scan, key))
        if scan.at_end():
            return requirements
        if not scan.take(","):
            scan.fail("expected ','")


def _parse_operator(scan: _Scanner, key: str) -> Requirement:
    if scan.take_word("notin") or scan.take_word("in"):
        op = "notin" if scan.text[scan.pos - 5:scan.pos] == "notin" else "in"
        if not scan.take("("):
            scan.fail("expected '('")
        values = []
        while True:
            values.append(scan.match(_VALUE))
            if scan.take(")"):
                break
            if not scan.take(","):
                scan.fail("expected ',' or ')'")
        return Requirement(key, op, tuple(values))
    for literal, op in (("==", "="), ("!=", "!="), ("=", "="), (">", "gt"), ("<", "lt")):
        if scan.take(literal):
            value = scan.match(_VALUE)
            if op in ("gt", "lt") and not value.lstrip("-").isdigit():
                scan.fail(f"'{literal}' needs an integer value")
            return Requirement(key, op, (value,))
    scan.skip_spaces()
    if scan.pos < len(scan.text) and scan.text[scan.pos] != ",":
        scan.fail("expected an operator")
    return Requirement(key, "exists")


@dataclass(frozen=True)
class FieldRequirement:
    path: tuple[str, ...]
    negate: bool
    value: str

    def matches(self, obj: dict) -> bool:
        current = obj
        for part in self.path:
            current = current.get(part) if isinstance(current, dict) else None
        actual = "" if current is None else str(current)
        if isinstance(current, bool):
            actual = "true" if current else "false"
        return (actual != self.value) if self.negate else (actual == self.value)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, current, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current.append(text[i:i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_field_selector(text: str | None) -> list[FieldRequirement]:
    """Parse `metadata.name=x,metadata.namespace!=kube-system,type!=helm.sh/release.v1`."""
    if not text or not text.strip():
        return []
    requirements = []
    for term in _split_unescaped(text, ","):
        term = term.strip()
        for literal, negate in (("!=", True), ("==", False), ("=", False)):
            index = _find_unescaped(term, literal)
            if index >= 0:
                field, value = term[:index].strip(), term[index + len(literal):].strip()
                break
        else:
            raise bad_request(f'invalid field selector "{text}": "{term}" has no operator '
                              "(use field=value or field!=value)")
        if not field:
            raise bad_request(f'invalid field selector "{text}": empty field name')
        requirements.append(FieldRequirement(tuple(field.split(".")), negate, _unescape(value)))
    return requirements


def _find_unescaped(text: str, literal: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(literal, i):
            return i
        i += 1
    return -1


Predicate = Callable[[dict], bool]


def object_predicate(labels: list[Requirement], fields: list[FieldRequirement]) -> Predicate | None:
    """One predicate over an object dict; None when nothing is selected against."""
    if not labels and not fields:
        return None

    def predicate(obj: dict) -> bool:
        object_labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(object_labels) for r in labels) and \
            all(f.matches(obj) for f in fields)

    return predicate
