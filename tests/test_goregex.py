"""The RE2 syntax checker: what Go's regexp accepts, not what Python's re accepts."""

from __future__ import annotations

import re

import pytest

from promop.render.re2 import check_re2

ACCEPTED = [
    "", "foo", "(.+)(?::d+)", "(?:a|b)+", "(?i)abc", "(?i-s:a.)", "(?P<name>x)", "[a-z0-9_]+", "[^]a]",
    "[[:alpha:]]+", "\\d+\\.\\w", "$(SHARD);|.+;.+", "x{", "x{2}", "x{2,}", "x{2,5}?", "\\pL\\p{Greek}",
    "\\x41\\x{263a}", "\\Qa.b\\E", "\\012", "a*?", "(Failed|Succeeded)", "\\A\\z\\b", "container_(a|b)",
]
REFUSED = {
    "a(?=b)": "lookahead", "a(?!b)": "negative lookahead", "(?<=a)b": "lookbehind", "(?<!a)b": "negative lookbehind",
    "(a)\\1": "backreference", "(?P<n>a)(?P=n)": "named backreference", "a*+": "possessive", "(?>a)": "atomic group",
    "(?#c)": "comment group", "(?x)a": "unknown regex flag", "(?<n>a)": "use (?P<name>...)", "*a": "missing argument",
    "a**": "nested repetition", "(a": "missing closing ')'", "a)": "unexpected ')'", "[a": "missing closing ']'",
    "[z-a]": "invalid character class range", "a{1001}": "limit of 1000", "a{3,2}": "maximum below minimum",
    "\\Z": "\\Z is not supported", "\\e": "\\e is not supported", "\\": "trailing backslash", "[[:foo:]]": "unknown POSIX class",
    "\\8": "backreference", "(?(1)a|b)": "conditional group",
}


@pytest.mark.parametrize("regex", ACCEPTED)
def test_accepted(regex):
    assert check_re2(regex) is None


@pytest.mark.parametrize("regex", sorted(REFUSED))
def test_refused(regex):
    problem = check_re2(regex)
    assert problem is not None and REFUSED[regex] in problem
    assert "RE2 syntax" in problem


def test_python_accepts_what_re2_refuses():
    # the reason a dedicated checker exists
    for regex in ("a(?=b)", "(a)\\1", "(?>a)", "a*+"):
        re.compile(regex)
        assert check_re2(regex)


def test_angle_named_groups_only_for_newer_go():
    assert check_re2("(?<n>a)") is not None
    assert check_re2("(?<n>a)", angle_named_groups=True) is None
    assert "lookbehind" in check_re2("(?<=a)b", angle_named_groups=True)
