"""Force `<label>="<namespace>"` onto every series selector of a PromQL expression.

Upstream rewrites PrometheusRule expressions this way when `enforcedNamespaceLabel`
is set (prom-label-proxy's injector, replacing any matcher on that label). We
edit the user's text in place rather than re-printing an AST, so everything
else in the expression (string escapes, spacing) stays exactly as written; the
result is re-parsed and checked before it is used.
"""

from __future__ import annotations

import re

import promql_parser

# Identifiers that are never series selectors.
_KEYWORDS = frozenset(
    "by without on ignoring group_left group_right bool offset and or unless atan2 "
    "inf nan start end step fill fill_left fill_right smoothed anchored".split()
)
_LABEL_LIST_KEYWORDS = frozenset("by without on ignoring group_left group_right".split())
_TOKEN = re.compile(
    r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?:[a-z]+\d*)*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<lbrace>\{) | (?P<rbrace>\}) | (?P<lparen>\() | (?P<rparen>\)) | (?P<lbracket>\[) | (?P<rbracket>\])
  | (?P<op>[-+*/%^,@=!<>~]+)
  | (?P<bad>[\s\S])
    """,
    re.VERBOSE,
)


class EnforceError(ValueError):
    """The expression could not be rewritten safely."""


def _tokens(expr: str) -> list[tuple[str, str, int, int]]:
    out = []
    for m in _TOKEN.finditer(expr):
        kind = m.lastgroup
        if kind == "space":
            continue
        if kind == "bad":
            raise EnforceError(f"unexpected {m.group()!r} at offset {m.start()}")
        out.append((kind or "", m.group(), m.start(), m.end()))
    return out


def _split_matchers(body: str) -> list[str]:
    """The comma-separated matchers of a `{...}` body, quotes respected."""
    parts, depth_quote, start, i = [], "", 0, 0
    while i < len(body):
        c = body[i]
        if depth_quote:
            if c == "\\" and depth_quote != "`":
                i += 1
            elif c == depth_quote:
                depth_quote = ""
        elif c in "\"'`":
            depth_quote = c
        elif c == ",":
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return [p.strip() for p in parts if p.strip()]


def _matcher_label(matcher: str) -> str:
    m = re.match(r"""\s*("(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)?""", matcher)
    if not m or not m.group(2):
        return ""  # a bare quoted metric name
    name = m.group(1)
    return name[1:-1] if name.startswith('"') else name


def _rewrite_body(body: str, label: str, value: str) -> str:
    if re.search(r"\bor\b", re.sub(r'"(?:[^"\\]|\\.)*"', '""', body)):
        raise EnforceError("selectors with 'or' matchers are not supported with enforcedNamespaceLabel")
    kept = [m for m in _split_matchers(body) if _matcher_label(m) != label]
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return ",".join([*kept, f'{label}="{escaped}"'])


def _selector_edits(expr: str, label: str, value: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) for each selector in `expr`."""
    toks = _tokens(expr)
    edits = []
    i = 0
    while i < len(toks):
        kind, text, start, end = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if kind == "lbracket":  # ranges and subquery steps hold no selectors
            while i < len(toks) and toks[i][0] != "rbracket":
                i += 1
        elif kind == "ident" and text.lower() in _LABEL_LIST_KEYWORDS and nxt and nxt[0] == "lparen":
            while i < len(toks) and toks[i][0] != "rparen":
                i += 1
        elif kind == "ident" and text.lower() == "offset":
            i += 1  # skip the duration
        elif kind == "ident" and (
            text.lower() in _KEYWORDS
            or (nxt and nxt[0] == "lparen")
            or (nxt and nxt[0] == "ident" and nxt[1].lower() in ("by", "without"))
        ):
            pass  # a keyword, or a function / aggregation name
        elif kind == "ident" or kind == "lbrace":
            open_idx = i + 1 if kind == "ident" else i
            if open_idx < len(toks) and toks[open_idx][0] == "lbrace":
                close = open_idx
                while close < len(toks) and toks[close][0] != "rbrace":
                    close += 1
                if close == len(toks):
                    raise EnforceError("unclosed '{'")
                body = expr[toks[open_idx][3]:toks[close][2]]
                edits.append((toks[open_idx][2], toks[close][3], "{" + _rewrite_body(body, label, value) + "}"))
                i = close
            else:
                edits.append((end, end, "{" + _rewrite_body("", label, value) + "}"))
        i += 1
    return edits


_VectorSelector = promql_parser.VectorSelector
_Equal = promql_parser.MatchOp.Equal


def _all_enforced(expr: str, label: str, value: str) -> bool:
    ok = True

    def visit(node: object) -> None:
        nonlocal ok
        if isinstance(node, _VectorSelector):
            found = [m for m in node.matchers.matchers if m.name == label]
            if len(found) != 1 or found[0].op != _Equal or found[0].value != value:
                ok = False

    promql_parser.walk(promql_parser.parse(expr), pre_visit=visit)
    return ok


def enforce_namespace_label(expr: str, label: str, value: str) -> str:
    """`expr` with `label="value"` on every selector; raises EnforceError if that cannot be done."""
    out = expr
    for start, end, repl in sorted(_selector_edits(expr, label, value), reverse=True):
        out = out[:start] + repl + out[end:]
    try:
        if _all_enforced(out, label, value):
            return out
    except ValueError as exc:
        raise EnforceError(f"rewritten expression does not parse ({exc}): {out}") from exc
    raise EnforceError(f"could not add {label}={value!r} to every selector of: {expr}")
