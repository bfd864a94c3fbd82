"""promop.render.yaml_load: the same documents as PyYAML's CSafeLoader (the oracle), or the same
error, down to types, key order and which objects an alias makes shared."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promop.render.loader import load
from promop.render.yaml_load import FastSafeLoader, load_all, load_all_marked

ORACLE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
REPO = Path(__file__).resolve().parents[2]


def same(a, b, seen_a: dict, seen_b: dict) -> bool:
    """Equal with equal types everywhere (True is not 1), and the same sharing of containers."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (dict, list, set)):
        if id(a) in seen_a or id(b) in seen_b:
            return seen_a.get(id(a)) == id(b) and seen_b.get(id(b)) == id(a)
        seen_a[id(a)], seen_b[id(b)] = id(b), id(a)
        if isinstance(a, dict):
            return (list(map(type, a)) == list(map(type, b)) and list(a) == list(b)
                    and all(same(a[k], b[k], seen_a, seen_b) for k in a))
        if isinstance(a, set):
            return a == b
        return len(a) == len(b) and all(same(x, y, seen_a, seen_b) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def outcome(text: str, loader) -> tuple:
    try:
        return ("ok", list(yaml.load_all(text, Loader=loader)))
    except Exception as exc:  # noqa: BLE001 - the error itself is compared
        return ("error", type(exc).__name__, str(exc))


def assert_same(text: str) -> None:
    want, got = outcome(text, ORACLE), outcome(text, FastSafeLoader)
    assert want[0] == got[0], (text, want, got)
    if want[0] == "error":
        assert want == got
    else:
        assert same(want[1], got[1], {}, {}), (text, want[1], got[1])


CASES = [
    "a: 1\nb: [x, 2.5, null, true]\n",
    "v: yes\nw: No\nx: on\ny: ~\nz: 0o17\nq: 017\nr: 1:30\ns: .inf\nt: -.Inf\nu: .nan\nn: 1_000\nb: 0b101\ne: 1e3\nf: 1.5e+3\n",
    "a: 'yes'\nb: \"1\"\nc: '~'\n",
    "1: a\n2.5: b\ntrue: c\n~: d\n",
    "a: 1\na: 2\n",
    "a: &x {b: 1}\nc: *x\n",
    "a: &x [1, *x]\n",
    "&a {k: *a}\n",
    "- &a [*a]\n",
    "a: &s hello\nb: *s\n",
    "base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",
    "<<: [&a {a: 1}, {b: 2}]\nc: 3\n",
    "= : 3\n",
    "k: =\n",
    "t: 2024-01-01\n",
    "t: 2001-12-14t21:59:43.10-05:00\n",
    "b: !!binary aGVsbG8=\n",
    "s: !!set {a, b}\n",
    "o: !!omap [a: 1]\n",
    "p: !!pairs [a: 1, a: 2]\n",
    "x: !custom 1\n",
    "k: !!python/name:os.system\n",
    "? [a, b]\n: 1\n",
    "? {a: 1}\n: 1\n",
    "v: !!map foo\n",
    "v: !!str 123\n",
    "v: !!int '0x1F'\n",
    "v: !!bool maybe\n",
    "k: !!float 1\n",
    "k: !!seq {}\n",
    "key: !!null ''\n",
    "x: !!merge <<\n",
    "",
    "---\n",
    "--- \n...\n---\na: 1\n",
    "bad: [\n",
    "a: b: c\n",
    "a: *undefined\n",
    "kind: List\nitems:\n- &m {name: x}\n- *m\n",
]


@pytest.mark.parametrize("text", CASES)
def test_same_as_pyyaml(text: str) -> None:
    assert_same(text)


def test_every_yaml_file_in_the_repository_loads_the_same() -> None:
    files = sorted(p for pattern in ("*.yaml", "*.yml") for p in REPO.rglob(pattern) if ".git" not in p.parts)
    assert len(files) > 50
    for path in files:
        assert_same(path.read_text(encoding="utf-8", errors="replace"))


_scalar_texts = st.sampled_from([
    "yes", "No", "on", "OFF", "y", "n", "~", "null", "Null", "", "0", "017", "0o17", "0x1F", "0b11", "1_000", "1:30",
    "1e3", "1.5", ".5", "-.inf", ".NaN", "2024-01-01", "2024-1-1 10:00:00", "=", "<<", "a b", "x", "svc-1", "30s",
    "'quoted'", '"dq"', "'yes'", '"1"', "!!str 5", "!!int '7'", "!!float 2", "!!bool true", "!!null ''",
])


@st.composite
def documents(draw, depth: int = 0) -> str:
    """Block or flow YAML text with scalars that resolve to every core type, anchors and aliases."""
    anchors: list[str] = []

    def node(level: int) -> str:
        choice = draw(st.integers(0, 5 if level < 3 else 1))
        if choice == 1 and anchors:
            return "*" + draw(st.sampled_from(anchors))
        if choice <= 1:
            return draw(_scalar_texts)
        anchor = ""
        if draw(st.booleans()):
            name = f"a{len(anchors)}"
            anchor = f"&{name} "
        if choice in (2, 3):
            items = [node(level + 1) for _ in range(draw(st.integers(0, 3)))]
            body = "[" + ", ".join(items) + "]"
        else:
            keys = draw(st.lists(st.sampled_from(["a", "b", "1", "true", "~", "<<", "=", "k"]), max_size=3))
            body = "{" + ", ".join(f"{k}: {node(level + 1)}" for k in keys) + "}"
        if anchor:
            anchors.append(anchor[1:-1])
        return anchor + body

    docs = [f"v: {node(0)}\n" for _ in range(draw(st.integers(1, 3)))]
    return "---\n".join(docs)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_generated_documents_load_the_same(text: str) -> None:
    assert_same(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab:-[]{},&*!<=~ \n'\"1.#|>?", max_size=40))
def test_arbitrary_text_gives_the_same_data_or_error(text: str) -> None:
    assert_same(text)


def test_aliases_are_marked_as_shared() -> None:
    marked = load_all_marked("a: 1\n---\nb: &x [1]\nc: *x\n---\n<<: {a: 1}\n")
    assert [shares for _, shares in marked] == [False, True, True]  # an alias; PyYAML's constructor
    doc = load_all("a: &x [1]\nb: *x\n")[0]
    assert doc["a"] is doc["b"]


def test_loaded_objects_sharing_an_alias_are_independent(tmp_path: Path) -> None:
    """The loader copies only metadata of an alias-free document, and everything of one with aliases."""
    (tmp_path / "list.yaml").write_text(
        "kind: List\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: &d {k: v}}\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: *d}\n")
    a, b = load([tmp_path]).of("ConfigMap")
    assert a["data"] == b["data"] == {"k": "v"}
    assert a["data"] is not b["data"]
    assert a["metadata"] == {"name": "a", "namespace": "default", "uid": a["metadata"]["uid"]}


def test_path_resolvers_are_refused() -> None:
    class WithPath(FastSafeLoader):
        pass

    WithPath.add_path_resolver("tag:yaml.org,2002:str", ["a"], yaml.ScalarNode)
    with pytest.raises(TypeError, match="path resolvers"):
        WithPath("a: 1")
