"""Go's `net/url.Parse` verdict on a URL string: the error it returns, or None when it parses.

Upstream's resource selector calls `url.Parse` on HTTP SD URLs, Docker and Docker Swarm hosts,
PuppetDB URLs and Kuma servers, and rejects the ScrapeConfig when it fails. Go's parser is
lenient (most strings parse as a relative path), so only these refuse: control characters, a
leading `:` (no scheme), a colon in the first segment of a scheme-less path, a bad `%` escape,
a host with a character Go does not allow or a non-numeric port, an unclosed IPv6 `[`, and
bad userinfo. Messages follow Go's (`parse "x": invalid port ":abc" after host`).
"""

from __future__ import annotations

from dataclasses import dataclass

_HEX = "0123456789abcdefABCDEF"
# Characters Go keeps unescaped in a host (shouldEscape(c, encodeHost) is false).
_HOST_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~!$&'()*+,;=:[]<>\"")
_USERINFO_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:~!$&'()*+,;=%@")
_SCHEME_LATER = set("0123456789+-.")


class URLError(ValueError):
    """The text of Go's *url.Error for this input."""


@dataclass(frozen=True)
class ParsedURL:
    """The parts the selector's checks look at (scheme lowercased, as Go does)."""

    scheme: str
    host: str


def parse(raw: str) -> ParsedURL:
    """url.Parse: the scheme and host of `raw`, or URLError with Go's message."""
    rest, _, fragment = raw.partition("#")
    try:
        parsed = _parse(rest)
        _unescape(fragment, host_mode=False)
        return parsed
    except _Fail as e:
        raise URLError(f"parse {_go_quote(raw)}: {e}") from None


def error(raw: str) -> str | None:
    """Go's error text for `raw`, or None when url.Parse accepts it."""
    try:
        parse(raw)
    except URLError as e:
        return str(e)
    return None


class _Fail(Exception):
    pass


def _parse(rest: str) -> ParsedURL:
    """Go's parse(rawURL, viaRequest=false) on the part before `#`."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rest):
        raise _Fail("net/url: invalid control character in URL")
    if rest == "*":
        return ParsedURL("", "")
    scheme, rest = _scheme(rest)
    if rest.endswith("?") and rest.count("?") == 1:
        rest = rest[:-1]
    else:
        rest = rest.partition("?")[0]
    host = ""
    if not rest.startswith("/"):
        if scheme:
            return ParsedURL(scheme, "")  # opaque, e.g. mailto:x
        if ":" in rest.partition("/")[0]:
            raise _Fail("first path segment in URL cannot contain colon")
    if rest.startswith("//") and (scheme or not rest.startswith("///")):
        authority, slash, path = rest[2:].partition("/")
        host = _authority(authority)
        rest = slash + path
    _unescape(rest, host_mode=False)
    return ParsedURL(scheme, host)


def _scheme(raw: str) -> tuple[str, str]:
    for i, c in enumerate(raw):
        if c.isascii() and c.isalpha():
            continue
        if c in _SCHEME_LATER:
            if i == 0:
                return "", raw
            continue
        if c == ":":
            if i == 0:
                raise _Fail("missing protocol scheme")
            return raw[:i].lower(), raw[i + 1:]
        return "", raw
    return "", raw


def _authority(authority: str) -> str:
    at = authority.rfind("@")
    if at >= 0:
        userinfo = authority[:at]
        if any(c not in _USERINFO_OK for c in userinfo):
            raise _Fail("net/url: invalid userinfo")
        _unescape(userinfo, host_mode=False)
    return _host(authority[at + 1:])


def _host(host: str) -> str:
    if host.startswith("["):
        close = host.rfind("]")
        if close < 0:
            raise _Fail("missing ']' in host")
        port = host[close + 1:]
        if not _valid_port(port):
            raise _Fail(f"invalid port {_go_quote(port)} after host")
    elif ":" in host:
        port = host[host.rfind(":"):]
        if not _valid_port(port):
            raise _Fail(f"invalid port {_go_quote(port)} after host")
    _unescape(host, host_mode=True)
    return host


def _valid_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and all(c in "0123456789" for c in port[1:]))


def _unescape(text: str, host_mode: bool) -> None:
    i = 0
    while i < len(text):
        c = text[i]
        if c == "%":
            if i + 2 >= len(text) or text[i + 1] not in _HEX or text[i + 2] not in _HEX:
                raise _Fail(f"invalid URL escape {_go_quote(text[i:i + 3])}")
            if host_mode and int(text[i + 1], 16) < 8 and text[i:i + 3] != "%25":
                raise _Fail(f"invalid URL escape {_go_quote(text[i:i + 3])}")
            i += 3
            continue
        if host_mode and c.isascii() and c not in _HOST_OK:
            raise _Fail(f"invalid character {_go_quote(c)} in host name")
        i += 1


def _go_quote(text: str) -> str:
    """strconv.Quote for the printable ASCII texts these messages carry."""
    out = []
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'
