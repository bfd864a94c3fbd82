"""promop.render.yaml_block: plain block YAML read line by line gives exactly what PyYAML's
CSafeLoader (the oracle) gives, down to types and key order; anything it does not handle is
left to PyYAML (None), never read differently. And the input files users keep do take the fast way."""

from __future__ import annotations


import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promop.render.emit import emit, emit_all
from promop.render.yaml_block import load_all
from promop.render.yaml_load import load_all_marked
from tests.render.test_emit import configs
from tests.render.test_yaml_load import CASES, ORACLE, REPO, same


def check(text: str) -> list | None:
    """The block reader's result, after checking it against the oracle when it gave one."""
    got = load_all(text)
    if got is not None:
        want = list(yaml.load_all(text, Loader=ORACLE))  # must not raise: the reader took it as valid
        assert same(want, got, {}, {}), (text, want, got)
    return got


READ = [  # plain block YAML: read here, and the same as PyYAML
    ("a: 1\nb: x\n", [{"a": 1, "b": "x"}]),
    ("v: yes\nw: No\nx: on\ny: ~\nz: 0o17\nq: 017\nr: 1:30\ns: .inf\nn: 1_000\ne: 1e3\nf: 1.5e+3\ng: -.5\n", None),
    ("1: a\n2.5: b\ntrue: c\nnull: d\n0x1F: e\n", None),
    ("a: 1\na: 2\nb: 3\n", [{"a": 2, "b": 3}]),
    ("a:\n- x\n- y\nb: 1\n", [{"a": ["x", "y"], "b": 1}]),  # a sequence at its key's indentation
    ("a:\n  - x\n  -\n  - y\n", [{"a": ["x", None, "y"]}]),
    ("a:\nb:\n  c:\n", [{"a": None, "b": {"c": None}}]),
    ("- a: 1\n  b:\n  - 2\n  c: 3\n- 4\n-\n  d: 5\n", None),
    ("a: 'it''s'\nb: ''\nc: '  x # y: z '\nd: \"a 'b' #c\"\ne: \"\"\n", None),
    ("'quoted key': 1\n'it''s': 2\n'1': 3\n", None),
    ("a: {}\nb: []\n", [{"a": {}, "b": []}]),
    ("expr: sum by (job) (rate(x{code=~\"5..\",h=\"/a\"}[5m])) > 0.5\nsummary: on {{ $labels.job }}\n", None),
    ("url: http://x:80/y?z=1#f\nneg: -1\nflag: --web.enable\npath: a:b\n", None),
    ("# comment\na: 1\n  # indented comment\nb: 2\n", [{"a": 1, "b": 2}]),
    ("---\na: 1\n---\nb: 2\n", [{"a": 1}, {"b": 2}]),
    ("a: 1\n---\n- b\n", [{"a": 1}, ["b"]]),
    ("", []),
    ("k" * 990 + ": 1\n", [{"k" * 990: 1}]),
    ("# only a comment\n", []),
    ("\n\na: 1\n\n\nb:\n\n  c: 2\n", [{"a": 1, "b": {"c": 2}}]),
]

LEFT_TO_PYYAML = [  # valid or not, these are PyYAML's to read
    "a: b\n  c\n",  # a plain scalar over two lines
    "- a\n  b\n",
    "a: 'x\n  y'\n",
    "a: |\n  x\n",
    "a: >\n  x\n",
    "a: \"x\\ty\"\n",  # an escape
    "a: [1, 2]\n",
    "a: {b: 1}\n",
    "a: &x 1\nb: *x\n",
    "a: !!str 1\n",
    "a: 1 # comment\n",
    "a: 1\n\t\n",
    "a: 1\r\nb: 2\r\n",
    "\ufeffa: 1\n",
    "a: x\u2028y\n",
    "a: 1 \n",  # trailing space
    "a:  \n",
    "? a\n: 1\n",
    "- - a\n",
    "-  a\n",
    "a:x\n",
    "a b: 1\n",
    "a: b: c\n",
    "a: b:\n",
    "  a: 1\n",  # the root indented
    "a:\n    b: 1\n  c: 2\n",  # an indentation that is no open block's
    "a: 1\n - b\n",
    "- a\nb: 1\n",
    "a: 1\n- b\n",
    "--- a: 1\n",
    "a: 1\n...\n",
    "a: 1\n---\n",  # an empty document after it
    "---\n---\na: 1\n",
    "just a scalar\n",
    "%YAML 1.1\n---\na: 1\n",
    "t: 2024-01-01\n",
    "<<: 1\n",
    "a: =\n",
    "a: @x\n",
    "a: -\n",
    "a:\n  - x\n  -\n  - - \n",
    "a: {}\nb: []\n- c\n",  # PyYAML's error
    "k" * 1100 + ": 1\n",  # an implicit key over 1024 characters: PyYAML's error
    "'" + "k" * 1100 + "': 1\n",
    "- " + "k" * 1100 + ":\n",
]


@pytest.mark.parametrize("text, expected", READ)
def test_plain_block_yaml_is_read_here_the_same(text: str, expected) -> None:
    got = check(text)
    assert got is not None, text
    if expected is not None:
        assert same(expected, got, {}, {})


@pytest.mark.parametrize("text", LEFT_TO_PYYAML)
def test_anything_else_is_left_to_pyyaml(text: str) -> None:
    assert check(text) is None


@pytest.mark.parametrize("text", CASES)
def test_the_loaders_cases(text: str) -> None:
    check(text)


def test_every_yaml_file_in_the_repository() -> None:
    files = sorted(p for pattern in ("*.yaml", "*.yml") for p in REPO.rglob(pattern) if ".git" not in p.parts)
    read = sum(check(path.read_text(encoding="utf-8", errors="replace")) is not None for path in files)
    assert read >= 20  # examples/ and testdata mostly; CRDs have block scalars (left to PyYAML)


def test_kubernetes_objects_as_emitted_take_the_fast_way() -> None:
    """The bench's inputs (emit_all of ServiceMonitors and PrometheusRules) and kubectl-style objects."""
    from bench.render.__main__ import workload

    inputs = workload(20, 10)
    for docs in (inputs.service_monitors, inputs.prometheus_rules, [inputs.prometheus]):
        text = emit_all(list(docs))
        assert check(text) is not None
        assert load_all_marked(text) == [(doc, False) for doc in load_all(text)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs)
def test_emitted_configs_read_the_same(cfg) -> None:
    check(emit(cfg))
    check(emit(cfg, sort_keys=True, literal=True))


_LINE_PARTS = st.sampled_from([
    "a:", "b: 1", "c: x", "- ", "-", "- d: 2", "- e", "'k': v", "k: 'v'", "k: \"v\"", "f: yes", "g: ~", "h: 0o1",
    "i: 1:2", "j: a b", "k: {}", "l: []", "m: -1", "n: ", "# c", "o: #", "p: a #b", "q: a: b", "r: 'a''b'", "---",
    "...", "s: 2001-01-01", "t: .5", "u: =", "v: <<", "w: &a 1", "x: *a", "- - y", "z: |", "  ", "1: 1", "true: t",
])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from([0, 0, 2, 2, 4, 1, 3]), _LINE_PARTS), max_size=12))
def test_line_soup_reads_the_same_or_is_left_to_pyyaml(lines) -> None:
    """Random block-shaped lines: valid or invalid YAML, whatever the reader takes is PyYAML's result."""
    check("".join(" " * indent + part + "\n" for indent, part in lines))


def test_a_bench_sized_file_is_read_the_same() -> None:
    from bench.render.__main__ import workload

    inputs = workload(200, 50)
    text = emit_all(list(inputs.prometheus_rules) + list(inputs.service_monitors))
    assert check(text) is not None
