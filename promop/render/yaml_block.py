"""Read plain block YAML (what `kubectl get -o yaml` and our emitter write) in one pass over its
lines, with exactly PyYAML's (C)SafeLoader results, or say it cannot.

Why: `promop render -f DIR` spent most of its reading time in PyYAML's composer, which builds a
node object (and two position marks) for each of the 250,000 nodes of bench.render's 3 MB input
and calls back into Python three times per node; libyaml's parse itself is under a tenth of it.
Input files are nearly always plain block YAML: indented `key: value` lines and `- ` items, plain
or single-quoted scalars. Those are read here line by line, and each plain scalar's type comes
from PyYAML's own resolver and constructors, memoised by text.

Anything else makes `load_all` return None, and the caller reads the whole text with PyYAML
(yaml_load.py), which gives its result or its error with its marks. None is returned for: tabs,
carriage returns, Unicode line breaks, a byte order mark or unprintable characters anywhere;
comments after content; flow collections other than `{}` and `[]`; anchors, aliases, tags,
directives, block scalars (`|`, `>`), double-quoted scalars with escapes, scalars over several
lines, `? ` keys, keys other than simple plain or single-quoted ones, `- - ` items, document
markers with content, empty documents, documents that are a scalar, indentation that is not
one of the open blocks', and plain scalars PyYAML would not read as str, null, bool, int or float
(timestamps, `<<`, `=`). Trailing spaces on a line count as unusual too.
"""

from __future__ import annotations

import re
from typing import Any

from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

__all__ = ["load_all"]

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"

# Characters this reader leaves to PyYAML: anything but line feeds and printable characters
# (PyYAML's reader refuses some, others are line breaks or a BOM), and tabs.
_UNUSUAL_CHAR = re.compile(
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]| \n| \\Z"
)
# A simple key and what follows it: `name:`, `app.kubernetes.io/name: x`, `'a b': x`.
_KEY = re.compile(r"(?:([A-Za-z0-9_][A-Za-z0-9_./-]*)|'((?:[^']|'')*)'):(?: +(.*))?\Z")
_SINGLE_QUOTED = re.compile(r"'((?:[^']|'')*)'\Z")
_DOUBLE_QUOTED_PLAIN = re.compile(r'"([^"\\]*)"\Z')
_PLAIN_START_BAD = frozenset("?:,[]{}#&*!|>'\"%@`")


_NOT_KNOWN = object()


class _Unusual(Exception):
    """The text needs PyYAML."""


class _Reader:
    """One text's reader: the current document's lines (indentation, content), and the memo of
    plain scalars' values for the whole text."""

    def __init__(self) -> None:
        self.indents: list[int] = []
        self.contents: list[str] = []
        self.n = 0
        self.values: dict[str, Any] = {}
        self.resolver = Resolver()
        self.constructor = SafeConstructor()

    def document(self, indents: list[int], contents: list[str]) -> Any:
        """A document's data from its content lines."""
        self.indents, self.contents, self.n = indents, contents, len(contents)
        if indents[0] != 0:
            raise _Unusual
        data, end = self.block(0, 0)
        if end != self.n:
            raise _Unusual
        return data

    def plain(self, text: str) -> Any:
        """A plain scalar's value, as PyYAML's resolver and SafeConstructor make it."""
        try:
            return self.values[text]
        except KeyError:
            pass
        tag = self.resolver.resolve(ScalarNode, text, (True, False))
        if tag == _STR:
            value: Any = text
        elif tag == _NULL:
            value = None
        elif tag == _BOOL:
            value = self.constructor.bool_values[text.lower()]
        elif tag == _INT:
            value = self.constructor.construct_yaml_int(ScalarNode(tag, text))
        elif tag == _FLOAT:
            value = self.constructor.construct_yaml_float(ScalarNode(tag, text))
        else:
            raise _Unusual  # timestamps, merge keys, `=`
        self.values[text] = value
        return value

    def scalar(self, text: str) -> Any:
        """The value written after `key: ` or `- ` on one line."""
        first = text[0]
        if first == "'":
            match = _SINGLE_QUOTED.match(text)
            if match is None:
                raise _Unusual
            return match.group(1).replace("''", "'")
        if first == '"':
            match = _DOUBLE_QUOTED_PLAIN.match(text)
            if match is None:
                raise _Unusual
            return match.group(1)
        if text == "{}":
            return {}
        if text == "[]":
            return []
        if first in _PLAIN_START_BAD or (first == "-" and (len(text) == 1 or text[1] == " ")):
            raise _Unusual
        if ": " in text or text[-1] == ":" or " #" in text:
            raise _Unusual  # PyYAML's error, or a comment
        return self.plain(text)

    def block(self, i: int, indent: int) -> tuple[Any, int]:
        """The block node whose first line is i (at `indent`), and the line after it."""
        content = self.contents[i]
        if content == "-" or content.startswith("- "):
            return self.sequence(i, indent)
        return self.mapping(i, indent)

    def nested(self, i: int, indent: int, sequence_ok: bool) -> tuple[Any, int]:
        """What follows `key:` or `-` with nothing after it on line i - 1: a more indented block,
        a sequence at the key's own indentation, or null."""
        if i < self.n:
            below = self.indents[i]
            if below > indent:
                return self.block(i, below)
            if sequence_ok and below == indent and (self.contents[i] == "-" or self.contents[i].startswith("- ")):
                return self.sequence(i, indent)
        return None, i

    def mapping(self, i: int, indent: int) -> tuple[dict, int]:
        out: dict = {}
        indents, contents, n = self.indents, self.contents, self.n
        known = self.values.get  # the memo, inline: most keys and values repeat
        while i < n and indents[i] == indent:
            match = _KEY.match(contents[i])
            if match is None:
                raise _Unusual
            plain_key, quoted_key, rest = match.groups()
            if match.end(1 if plain_key is not None else 2) > 1000:
                raise _Unusual  # an implicit key is 1024 characters at most: PyYAML's error
            if plain_key is None:
                key = quoted_key.replace("''", "'")
            else:
                key = known(plain_key, _NOT_KNOWN)
                if key is _NOT_KNOWN:
                    key = self.plain(plain_key)
            if rest is None:
                out[key], i = self.nested(i + 1, indent, True)
            else:
                value = known(rest, _NOT_KNOWN)
                out[key] = self.scalar(rest) if value is _NOT_KNOWN else value
                i += 1
        if i < n and indents[i] > indent:
            raise _Unusual  # a scalar over several lines, or an indentation no block has
        return out, i

    def sequence(self, i: int, indent: int) -> tuple[list, int]:
        out: list = []
        indents, contents, n = self.indents, self.contents, self.n
        while i < n and indents[i] == indent:
            content = contents[i]
            if content == "-":
                item, i = self.nested(i + 1, indent, False)
            elif content.startswith("- "):
                rest = content[2:]
                if rest[0] == " " or rest == "-" or rest.startswith("- "):
                    raise _Unusual
                if _KEY.match(rest) is not None:  # `- key: ...`: a mapping at the item's column
                    indents[i], contents[i] = indent + 2, rest
                    item, i = self.mapping(i, indent + 2)
                else:
                    item = self.scalar(rest)
                    i += 1
            else:
                break  # the next key of the mapping this sequence is the value of
            out.append(item)
        if i < n and indents[i] > indent:
            raise _Unusual  # as in mapping()
        return out, i


def _documents(text: str) -> list[tuple[list[int], list[str]]]:
    """Each document's content lines (blank and comment lines dropped), split at `---` lines."""
    docs: list[tuple[list[int], list[str]]] = [([], [])]
    for line in text.split("\n"):
        content = line.lstrip(" ")
        if not content or content[0] == "#":
            continue
        if line[0] in "-." and (line.startswith("---") or line.startswith("...")):
            if line != "---":
                raise _Unusual
            docs.append(([], []))
            continue
        indents, contents = docs[-1]
        indents.append(len(line) - len(content))
        contents.append(content)
    if not docs[0][1]:
        docs.pop(0)  # nothing before the first `---`: not a document
    if any(not contents for _, contents in docs):
        raise _Unusual  # an empty document (PyYAML gives None)
    return docs


def load_all(text: str) -> list[Any] | None:
    """Every document in `text` as PyYAML's (C)SafeLoader gives them, or None when the text is
    not plain block YAML (then only PyYAML can say what it holds, or what is wrong with it)."""
    if _UNUSUAL_CHAR.search(text) is not None:
        return None
    reader = _Reader()
    try:
        return [reader.document(indents, contents) for indents, contents in _documents(text)]
    except _Unusual:
        return None
