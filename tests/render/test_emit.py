"""promop.render.emit: what it writes loads back as exactly the same data with PyYAML's loader
(YAML 1.1, as Prometheus' Go loader reads it), in block style, byte-stable."""

from __future__ import annotations

import copy
import string

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promop.render.emit import emit, emit_all

SPECIALS = [
    "yes", "no", "on", "off", "y", "n", "Y", "N", "Yes", "NO", "On", "OFF", "true", "False", "TRUE", "null", "Null",
    "NULL", "~", "", "0123", "0o17", "0x1F", "0b101", "1e3", "1E3", "1.0", ".5", "5.", "1_000", "+1", "-1", "1:30",
    "-1:30:00", ".inf", "-.Inf", ".nan", "NaN", "inf", "2024-01-01", "2024-1-1 10:00:00", "<<", "=", ":", "::",
    "a: b", "a:", "#", "a #b", "a#b", "-", "- a", "--", "---", "...", "?", "? a", "!", "!!str", "&a", "*a", "|",
    ">", "%", "@", "`", "'", '"', "[", "]", "{", "}", ",", " lead", "trail ", "  ", "\t", "a\tb", "\n", "a\nb",
    "a\n", "a\n\n", "\na", " a\nb", "a \nb", "\r", "a\rb", "\x85", "\u2028", "\u2029", "\ufeff", "\x00", "\x07",
    "\x1f", "\x7f", "ünïcödé", "日本語", "😀", "a\U0001F600b", "\ud7ff", "\ue000", "\ufffd", "$(POD_NAME)", "${1}",
    "(.+);true", "__meta_kubernetes_pod_label_app", "http://x:80/y?z=1#f", "30s", "1m30s", "0s", "0", "00",
]

text = st.one_of(st.sampled_from(SPECIALS), st.text(max_size=12),
                 st.text(alphabet=string.printable, max_size=12),
                 st.lists(st.sampled_from(SPECIALS), max_size=3).map("".join))
scalars = st.one_of(text, st.integers(), st.booleans(), st.none(),
                    st.floats(allow_nan=False), st.just(float("inf")), st.just(float("-inf")))
keys = st.one_of(text, st.integers())
data = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)), max_leaves=25)
configs = st.dictionaries(text, data, max_size=6)


FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the same results, in C where built


def loads(s: str):
    return yaml.load(s, Loader=yaml.SafeLoader)


# Drawing the examples costs most of the time here (about three quarters; PyYAML's loading the rest), so
# both modes are checked on every drawn config instead of drawing a separate 200 for literal mode:
# literal mode now sees 300 configs instead of 200, the default mode 300 instead of 400.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs)
def test_emitted_yaml_loads_back_to_exactly_the_same_data_in_both_modes(cfg):
    out = emit(cfg)
    assert loads(out) == cfg
    assert emit(copy.deepcopy(cfg)) == out  # byte-stable for equal input
    assert loads(emit(cfg, sort_keys=True)) == cfg
    assert loads(emit(cfg, literal=True)) == cfg  # literal block mode loads back too


@settings(max_examples=100, deadline=None)
@given(st.lists(configs, min_size=1, max_size=3))
def test_multi_document_stream(docs):
    assert list(yaml.load_all(emit_all(docs), Loader=yaml.SafeLoader)) == docs


@pytest.mark.parametrize("value", ["yes", "no", "on", "off", "~", "0123", "1e3", "y", "N", "1:30", "2024-01-01",
                                   "<<", "=", ".inf", "0x10", "null", ""])
def test_yaml_11_specials_are_quoted(value):
    out = emit({"k": value})
    assert out != f"k: {value}\n"
    assert loads(out) == {"k": value}


def test_block_style_readable_and_upstream_shaped():
    cfg = {"global": {"scrape_interval": "30s", "external_labels": {"prometheus": "ns/p", "replica": "$(POD_NAME)"}},
           "scrape_configs": [{"job_name": "serviceMonitor/ns/a/0", "honor_labels": False,
                               "relabel_configs": [{"source_labels": ["job"], "target_label": "__tmp"}],
                               "metric_relabel_configs": []}],
           "remote_write": [{"url": "http://x", "queue_config": {}}], "n": 1, "f": 0.5, "z": None}
    assert emit(cfg) == (
        "global:\n"
        "  scrape_interval: 30s\n"
        "  external_labels:\n"
        "    prometheus: ns/p\n"
        "    replica: $(POD_NAME)\n"
        "scrape_configs:\n"
        "- job_name: serviceMonitor/ns/a/0\n"
        "  honor_labels: false\n"
        "  relabel_configs:\n"
        "  - source_labels:\n"
        "    - job\n"
        "    target_label: __tmp\n"
        "  metric_relabel_configs: []\n"
        "remote_write:\n"
        "- url: http://x\n"
        "  queue_config: {}\n"
        "'n': 1\n"  # YAML 1.1 (and Go yaml.v2) read a plain n as false
        "f: 0.5\n"
        "z: null\n"
    )


def test_rule_files_use_literal_blocks_for_multi_line_strings():
    spec = {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "sum(x)\n  > 1\n",
                                                "annotations": {"description": "line one\nline two"}}]}]}
    out = emit(spec, sort_keys=True, literal=True)
    assert "expr: |\n      sum(x)\n        > 1\n" in out
    assert "description: |-\n" in out
    assert loads(out) == spec


def test_only_json_like_data():
    with pytest.raises(TypeError, match="cannot emit set"):
        emit({"a": {1, 2}})


def test_document_markers_are_quoted():
    """`...` and `---` at the start of a line end or start a document; found by the property test."""
    for data in ({"... 0": None}, {"...": 1}, ["...x"], {"--- x": 1}, {"a": "..."}):
        assert yaml.safe_load(emit(data)) == data


def test_sort_keys_orders_by_the_key_text():
    """As sigs.k8s.io/yaml orders a map: by the key's text, so 10 sorts before 9; equal texts keep their order."""
    assert emit({"b": 1, "a": {"k": 2, "j": 3}}, sort_keys=True) == "a:\n  j: 3\n  k: 2\nb: 1\n"
    assert emit({9: "a", "x": "b", 10: "c", "1": "d"}, sort_keys=True) == "'1': d\n10: c\n9: a\nx: b\n"
    assert emit({1: "a", "1": "b"}, sort_keys=True) == "1: a\n'1': b\n"
    assert emit({"1": "b", 1: "a"}, sort_keys=True) == "'1': b\n1: a\n"


def test_double_quoted_strings_load_back_for_every_code_point():
    """Rule files inside ConfigMaps are written double-quoted (a line feed, a tab or a quote in
    them): every code point, alone and between the characters escaped by `str.replace`, loads
    back unchanged with PyYAML (the escapes must be applied backslash first, and the rest of the
    escape set must still be found after them)."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and c != 0xFEFF]
    for start in range(0, len(points), 4096):
        chunk = points[start:start + 4096]
        value = "\\\n\t\"".join(chunk) + "\n\\"
        out = emit({"k": value})
        assert out.startswith('k: "') and yaml.load(out, Loader=FAST_LOADER) == {"k": value}, chunk[0]


def test_double_quoted_escapes_are_yamls_short_forms():
    """Byte-stable output: the named escapes where YAML has one, else \\x, \\u or \\U."""
    value = 'a"b\\c\nd\te\x00\x07\x1b\x7f\x85\xa0\u2028\u2029\ufeff\U0001f600\x01'
    assert emit([value]) == ('- "a\\"b\\\\c\\nd\\te\\0\\a\\e\\x7f\\N\\_\\L\\P\\ufeff\U0001f600\\x01"\n')
