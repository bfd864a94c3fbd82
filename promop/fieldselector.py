"""Field selector strings (`metadata.name=x,status.phase!=Running`), parsed as apimachinery's
`fields.ParseSelector` (pkg/fields/selector.go): comma-separated terms, operators `!=`, `==`
and `=` only (the first one found splits the term; no spaces are trimmed), values
unescaped (`\\,` `\\=` `\\\\`; an unescaped `,` or `=` in a value is refused).

Which field labels a resource supports, and how they are read from an object, is the
apiserver's business (the sandbox's), not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from promop.labelselector import SelectorError

_OPERATORS = ("!=", "==", "=")


@dataclass(frozen=True)
class FieldRequirement:
    """`field op value`; `operator` is `=` (from `=` or `==`) or `!=`."""

    field: str
    operator: str
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        """hasTerm/notHasTerm over a fields.Set: a missing field reads as ""."""
        have = fields.get(self.field, "")
        return have == self.value if self.operator == "=" else have != self.value

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_value(self.value)}"


def escape_value(value: str) -> str:
    """fields.EscapeValue: `\\`, `,` and `=` backslash-escaped."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    """fields.UnescapeValue, with its error texts."""
    out, escaped = [], False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """splitTerms: split on commas that are not backslash-escaped (the backslash kept)."""
    terms, start, escaped = [], 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in _OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


def parse_field_selector(text: str | None) -> list[FieldRequirement]:
    """fields.ParseSelector: requirements in the order of their sorted terms; "" selects everything."""
    if not text:
        return []
    reqs = []
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        field, op, value = split
        reqs.append(FieldRequirement(field, "!=" if op == "!=" else "=", unescape_value(value)))
    return reqs


def requires_exact_match(terms: list[FieldRequirement], field: str) -> str | None:
    """Selector.RequiresExactMatch: the value an `=` term pins `field` to, else None."""
    for term in terms:
        if term.field == field and term.operator == "=":
            return term.value
    return None
