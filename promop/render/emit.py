"""A fast, small YAML emitter for JSON-like data (dict, list, str, int, float, bool, None).

Why our own: PyYAML's emitter (even CSafeDumper) spends most of a render in per-node Python
calls (representer, resolver, emitter states); configs are plain trees of a few scalar types,
so a direct emitter is several times faster and its output is fully ours to keep stable.

Output: block style, keys in insertion order (or sorted), two-space indentation, sequences
under a key not indented (as PyYAML and Go's yaml.v2 write them), `[]`/`{}` for empty
containers, no line folding, no anchors. Byte-stable: equal data gives equal bytes.

Strings are plain when every YAML reader reads them back as the same string: not a YAML 1.1
bool/null word in any case (`yes`, `No`, `on`, `y`, `~`, ...), not a number in YAML 1.1,
1.2 or Go's syntax (`0123`, `1e3`, `0x1F`, `1_000`, `1:30`, `.inf`), not a timestamp,
not `<<` or `=`, no leading indicator, no `: ` or ` #`, no leading/trailing space. Others are
single-quoted, or double-quoted with escapes when they hold line breaks or characters YAML
does not print. With `literal=True`, multi-line strings use `|` block scalars (rule files).

    emit(data, sort_keys=False, literal=False) -> str
    emit_all(documents, ...) -> str          documents separated by `---`
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

import yaml

__all__ = ["Frozen", "emit", "emit_all"]

_WORDS = frozenset({
    "", "~", "null", "y", "n", "yes", "no", "true", "false", "on", "off",
})
_NUMBER = re.compile(
    r"""[-+]?(?:
        [0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?       # YAML 1.1 sexagesimal
      | 0[xX][0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?(?:[pP][-+]?[0-9_]+)?   # hex (Go: hex floats too)
      | 0[oO][0-7_]+ | 0[bB][01_]+                          # octal / binary
      | (?:[0-9][0-9_]*)?\.?[0-9_]*(?:[eE][-+]?[0-9_]+)?     # decimal int or float, 1e3, .5, 1.
      | \.?(?:inf|infinity|nan)
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# YAML's printable set (c-printable) without the byte order mark, and no line breaks.
_PRINTABLE_ONE_LINE = re.compile(
    "[\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*\\Z"
)
_PRINTABLE_ANY = re.compile(
    "[\x09\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*\\Z"
)
_ESCAPES = {"\0": "\\0", "\x07": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\x0b": "\\v", "\f": "\\f",
            "\r": "\\r", "\x1b": "\\e", '"': '\\"', "\\": "\\\\", "\x85": "\\N", "\xa0": "\\_",
            "\u2028": "\\L", "\u2029": "\\P"}

_cache: dict[str, str] = {}
_CACHE_MAX = 200_000


class Frozen(dict):
    """A mapping built once and shared by many configs (a relabel rule every monitor's job has):
    read-only, and its YAML text as a list item is kept per indentation, so emitting it again is
    one lookup. At 10,000 ServiceMonitors, 13 of each job's 18 relabel rules are such constants
    and emitting them was a fifth of a first render. A copy (copy.copy, copy.deepcopy, dict(x))
    is a plain dict, free to change."""

    __slots__ = ("_texts",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        dict.__init__(self, *args, **kwargs)
        self._texts: dict[str, str] = {}

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this mapping is shared by many configs (promop.render.emit.Frozen): change a copy, dict(x)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> Any:
        return (Frozen, (dict(self),))

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        import copy

        return copy.deepcopy(dict(self), memo)


# yaml.safe_dump of a render's config (tests, users' scripts) writes a Frozen as the mapping it is.
yaml.SafeDumper.add_representer(Frozen, yaml.SafeDumper.represent_dict)
if hasattr(yaml, "CSafeDumper"):
    yaml.CSafeDumper.add_representer(Frozen, yaml.CSafeDumper.represent_dict)


def _resolves_to_other_type(s: str) -> bool:
    if s.lower() in _WORDS or s in ("<<", "="):
        return True
    c = s[0]
    if c in "0123456789+-." and _NUMBER.fullmatch(s):
        return True
    return c.isdigit() and _TIMESTAMP.match(s) is not None


def _plain_ok(s: str) -> bool:
    if _resolves_to_other_type(s):
        return False
    if s[0] in _INDICATORS or s[0] == " " or s[-1] in " :" or "\t" in s:
        return False
    if s.startswith("..."):  # at the start of a line, `...` ends the document (`---` is caught above)
        return False
    if ": " in s or " #" in s:
        return False
    return _PRINTABLE_ONE_LINE.match(s) is not None


def _escape(match: re.Match) -> str:
    ch = match.group()
    esc = _ESCAPES.get(ch)
    if esc is not None:
        return esc
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


# What a double-quoted scalar must escape besides `"`, `\` and line feeds: U+00A0 (`\_`) and
# anything YAML does not print.
_NEEDS_OTHER_ESCAPE = re.compile(
    "\xa0|[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)


def _double_quoted(s: str) -> str:
    """Rule files inside ConfigMaps are megabytes of this, with a quote or a line feed every few
    characters: `str.replace` does the three common escapes in C (backslash first, so the
    backslashes it adds are not doubled), then one regex search finds whatever else needs an
    escape (rare: tabs, control characters, U+00A0, ...). The text is the same as one regex
    substitution over all of them, which called a Python function per quote and line feed."""
    text = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    if _NEEDS_OTHER_ESCAPE.search(text) is not None:
        text = _NEEDS_OTHER_ESCAPE.sub(_escape, text)
    return '"' + text + '"'


def _string(s: str) -> str:
    """The scalar for `s` on one line (memoised: configs repeat the same strings)."""
    text = _cache.get(s)
    if text is None:
        if s and _plain_ok(s):
            text = s
        elif _PRINTABLE_ONE_LINE.match(s) is not None and "\t" not in s:
            text = "'" + s.replace("'", "''") + "'"
        else:
            text = _double_quoted(s)
        if len(_cache) >= _CACHE_MAX:
            _cache.clear()
        _cache[s] = text
    return text


def _float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:  # 1e+20 -> 1.0e+20, a float in YAML 1.1 too
        text = text.replace("e", ".0e", 1)
    return text


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return _float(value)
    raise TypeError(f"cannot emit {type(value).__name__} as YAML: only dict, list, str, int, float, bool, None")


def _literal_ok(s: str) -> bool:
    if "\n" not in s or _PRINTABLE_ANY.match(s) is None or "\t" in s:
        return False
    lines = s.split("\n")
    return all(not line.endswith(" ") for line in lines) and not s.startswith("\n")


def _literal(s: str, indent: str) -> str:
    """A `|` block scalar: chomping from the trailing newlines, an indentation indicator when the
    first line starts with a space."""
    body = s.rstrip("\n")
    trailing = len(s) - len(body)
    chomp = "-" if trailing == 0 else "" if trailing == 1 else "+"
    head = "|" + ("2" if body.startswith(" ") else "") + chomp
    lines = [(indent + line) if line else "" for line in body.split("\n")]
    tail = "\n" * (trailing - 1) if trailing > 1 else ""
    return head + "\n" + "\n".join(lines) + "\n" + tail


def _kind(value: Any) -> str:
    """'map', 'seq' or 'scalar' for types other than the exact built-ins (subclasses, tuples)."""
    if isinstance(value, dict):
        return "map"
    if isinstance(value, (list, tuple)):
        return "seq"
    return "scalar"


def _sorted_items(m: dict) -> list:
    """Items by str(key). All-str keys (the usual case) sort as plain tuples: keys are unique, so
    values are never compared, and this skips a key function call per item."""
    for k in m:
        if type(k) is not str:
            return sorted(m.items(), key=lambda kv: str(kv[0]))
    return sorted(m.items())


def _emit_into(out: list[str], data: Any, sort_keys: bool, literal: bool) -> None:
    """The emitter proper: closures over local names, exact-type dispatch first (the hot path).

    Keys and strings are looked up in the module's memo inline (most repeat), and only a miss
    calls _string()."""
    append = out.append
    cached = _cache.get

    def mapping(m: dict, indent: str, prefix: str) -> None:
        child = indent + "  "
        for k, v in (_sorted_items(m) if sort_keys else m.items()):
            kt = cached(k) if type(k) is str else None
            if kt is None:
                kt = _string(k) if type(k) is str else _scalar(k)
            if len(kt) > 1000:  # an implicit key is at most 1024 characters: use an explicit one
                kt = f"? {kt}\n{indent}"
            t = type(v)
            if t is str:
                if literal and "\n" in v and _literal_ok(v):
                    append(f"{prefix}{kt}: {_literal(v, child)}")
                else:
                    text = cached(v)
                    append(f"{prefix}{kt}: {text if text is not None else _string(v)}\n")
            elif t is dict or (t is not list and _kind(v) == "map"):
                if v:
                    append(f"{prefix}{kt}:\n")
                    mapping(v, child, child)
                else:
                    append(f"{prefix}{kt}: {{}}\n")
            elif t is list or _kind(v) == "seq":
                if v:
                    append(f"{prefix}{kt}:\n")
                    sequence(v, indent)
                else:
                    append(f"{prefix}{kt}: []\n")
            else:
                append(f"{prefix}{kt}: {_scalar(v)}\n")
            prefix = indent

    def sequence(seq: Any, indent: str) -> None:
        dash = indent + "- "
        child = indent + "  "
        for item in seq:
            t = type(item)
            if t is str:
                if literal and "\n" in item and _literal_ok(item):
                    append(dash + _literal(item, child))
                else:
                    text = cached(item)
                    append(f"{dash}{text if text is not None else _string(item)}\n")
            elif t is Frozen and item:
                text = item._texts.get(indent)
                if text is None:
                    start = len(out)
                    mapping(item, child, dash)
                    text = "".join(out[start:])
                    del out[start:]
                    item._texts[indent] = text
                append(text)
            elif t is dict or (t is not list and _kind(item) == "map"):
                if item:
                    mapping(item, child, dash)
                else:
                    append(dash + "{}\n")
            elif t is list or _kind(item) == "seq":
                if item:
                    append(indent + "-\n")
                    sequence(item, child)
                else:
                    append(dash + "[]\n")
            else:
                append(f"{dash}{_scalar(item)}\n")

    kind = _kind(data)
    try:
        if kind == "map" and data:
            mapping(data, "", "")
        elif kind == "seq" and data:
            sequence(data, "")
        elif kind == "map":
            append("{}\n")
        elif kind == "seq":
            append("[]\n")
        else:
            append(_scalar(data) + "\n")
    finally:
        # The two closures refer to each other (a reference cycle): break it, so that they and
        # `out` are freed now, not at the next garbage collection.
        mapping = sequence = None  # type: ignore[assignment]


def emit(data: Any, sort_keys: bool = False, literal: bool = False) -> str:
    """One YAML document for `data` (no `---`), ending in a newline."""
    out: list[str] = []
    _emit_into(out, data, sort_keys, literal)
    return "".join(out)


def emit_all(documents: Iterable[Any], sort_keys: bool = False, literal: bool = False) -> str:
    """Several documents, each but the first preceded by `---`."""
    parts = [emit(d, sort_keys, literal) for d in documents]
    return "---\n".join(parts)
