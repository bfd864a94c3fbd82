"""Kubernetes label selector strings and their conversion to PromQL label matchers.

`labelSelector=app=web` (which objects) and `metricLabelSelector=verb in (GET,PUT)`
(which series) arrive as strings; apimachinery's `labels.Parse` turns them into
requirements sorted by key, with values sorted, and prometheus-adapter converts
each to a matcher: `=` → `=` (or `=~` with several values), `!=` → `!=`,
`in` → `=~"a|b"`, `notin` → `!~`, `exists` → `!=""`, `!key` → `=""`.
`>` and `<` have no PromQL equivalent and are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from promop.render.gotemplate_exec import go_quote

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|>|<|[^\s!=(),<>]+)")


class SelectorError(ValueError):
    """A selector string that does not parse, or cannot become PromQL."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str                   # =, ==, !=, in, notin, exists, !, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        v = labels.get(self.key)
        if self.op in ("=", "==", "in"):
            return present and v in self.values
        if self.op in ("!=", "notin"):
            return not present or v not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        try:
            n = int(v) if present else None
        except ValueError:
            return False
        return n is not None and (n > int(self.values[0]) if self.op == "gt" else n < int(self.values[0]))

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return "!" + self.key
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({','.join(self.values)})"
        return f"{self.key}{ {'gt': '>', 'lt': '<'}.get(self.op, self.op)}{self.values[0]}"


def parse_selector(text: str | None, what: str = "labelSelector") -> list[Requirement]:
    """Parse like apimachinery's labels.Parse; requirements sorted by key."""
    if not text or not text.strip():
        return []
    toks = _TOKEN.findall(text)
    if "".join(toks).replace(" ", "") != re.sub(r"\s+", "", text):
        raise SelectorError(f"{what} {text!r}: unexpected characters")
    toks = [t.strip() for t in toks]
    reqs: list[Requirement] = []
    i = 0

    def fail(msg: str) -> None:
        raise SelectorError(f"{what} {text!r}: {msg}")

    def key_at(j: int) -> str:
        if j >= len(toks):
            fail("expected a label key")
        k = toks[j]
        if not _KEY.match(k) or len(k.rsplit("/", 1)[-1]) > 63:
            fail(f"invalid label key {k!r}")
        return k

    def value(v: str) -> str:
        if not _VALUE.match(v) or len(v) > 63:
            fail(f"invalid label value {v!r}")
        return v

    while i < len(toks):
        if toks[i] == "!":
            reqs.append(Requirement(key_at(i + 1), "!"))
            i += 2
        else:
            key = key_at(i)
            i += 1
            op = toks[i] if i < len(toks) else ","
            if op == ",":
                reqs.append(Requirement(key, "exists"))
            elif op in ("=", "==", "!="):
                i += 1
                v = toks[i] if i < len(toks) and toks[i] not in (",",) else ""
                if v:
                    i += 1
                reqs.append(Requirement(key, op, (value(v),)))
            elif op in (">", "<"):
                i += 1
                v = toks[i] if i < len(toks) else ""
                if not re.fullmatch(r"-?\d+", v):
                    fail(f"{op} needs an integer value")
                i += 1
                reqs.append(Requirement(key, "gt" if op == ">" else "lt", (v,)))
            elif op in ("in", "notin"):
                i += 1
                if i >= len(toks) or toks[i] != "(":
                    fail(f"expected '(' after {op}")
                i += 1
                vals: list[str] = []
                while True:
                    if i >= len(toks):
                        fail("expected ')'")
                    t = toks[i]
                    if t == ")":
                        if not vals or (vals and toks[i - 1] == ","):
                            vals.append("")
                        i += 1
                        break
                    if t == ",":
                        if toks[i - 1] in ("(", ","):
                            vals.append("")
                        i += 1
                        continue
                    vals.append(value(t))
                    i += 1
                reqs.append(Requirement(key, op, tuple(sorted(set(vals)))))
            else:
                fail(f"unexpected {op!r} after key {key!r}")
        if i < len(toks):
            if toks[i] != ",":
                fail(f"expected ',' but got {toks[i]!r}")
            i += 1
            if i >= len(toks):
                fail("trailing ','")
    return sorted(reqs, key=lambda r: r.key)


def label_eq(label: str, value: str) -> str:
    return f"{label}={go_quote(value)}"


def matcher_for(req: Requirement) -> tuple[str, str]:
    """(PromQL matcher, the values joined by `|`) for one requirement, as upstream builds them."""
    values = list(req.values)
    n = len(values)
    if req.op in ("gt", "lt"):
        raise SelectorError(f"operator {'>' if req.op == 'gt' else '<'} ({req}) has no PromQL equivalent")
    if n == 0:
        op = {"exists": "!=", "!": "="}[req.op]
        target = ""
    elif n == 1:
        op = {"=": "=", "==": "=", "!=": "!=", "in": "=~", "notin": "!~"}[req.op]
        target = values[0]
    else:
        op = {"=": "=~", "==": "=~", "in": "=~", "!=": "!~", "notin": "!~"}[req.op]
        target = "|".join(values)
    return f"{req.key}{op}{go_quote(target)}", "|".join(values)


def selector_string(reqs: list[Requirement]) -> str:
    return ",".join(str(r) for r in reqs)
