"""The sandbox's selector-string parser agrees with promop.labelselector: a selector the
runtime renders as a string (labelSelector query parameter) selects the same labels here."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from promop.labelselector import parse_selector
from promop.sandbox.selectors import object_predicate, parse_label_selector

KEYS = st.sampled_from(["app", "tier", "example.com/team", "k8s.io/x"])
VALUES = st.sampled_from(["a", "b", "web", "db-1", "x.y"])
EXPRESSIONS = st.one_of(
    st.builds(lambda k, op, vs: {"key": k, "operator": op, "values": vs}, KEYS,
              st.sampled_from(["In", "NotIn"]), st.lists(VALUES, min_size=1, max_size=3,
                                                         unique=True)),
    st.builds(lambda k, op: {"key": k, "operator": op}, KEYS,
              st.sampled_from(["Exists", "DoesNotExist"])),
)
SPECS = st.builds(lambda labels, exprs: {"matchLabels": labels, "matchExpressions": exprs},
                  st.dictionaries(KEYS, VALUES, max_size=2), st.lists(EXPRESSIONS, max_size=3))
LABELS = st.dictionaries(KEYS, VALUES, max_size=4)


@settings(max_examples=300, deadline=None)
@given(SPECS, st.lists(LABELS, min_size=1, max_size=5))
def test_string_form_selects_the_same_labels(spec, label_sets):
    selector = parse_selector(spec)
    predicate = object_predicate(parse_label_selector(str(selector)), [])
    for labels in label_sets:
        ours = True if predicate is None else predicate({"metadata": {"labels": labels}})
        assert ours == selector.matches(labels), (str(selector), labels)
