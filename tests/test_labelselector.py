import pytest
from hypothesis import given, strategies as st

from promop.labelselector import Selector, SelectorError, matches, parse_selector


def test_nil_selects_nothing_and_empty_selects_everything():
    assert not matches(None, {})
    assert not matches(None, {"a": "b"})
    assert matches({}, {})
    assert matches({}, {"a": "b"})


@pytest.mark.parametrize(
    "spec,labels,expected",
    [
        ({"matchLabels": {"a": "b"}}, {"a": "b"}, True),
        ({"matchLabels": {"a": "b"}}, {"a": "c"}, False),
        ({"matchLabels": {"a": "b"}}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]}, {"a": "y"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {"a": "x"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "1"}, False),
        (
            {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "Exists"}]},
            {"a": "b"},
            False,
        ),
    ],
)
def test_matching(spec, labels, expected):
    assert matches(spec, labels) is expected


def test_canonical_string_sorted_by_key():
    sel = parse_selector(
        {
            "matchLabels": {"group": "group1"},
            "matchExpressions": [
                {"key": "group", "operator": "In", "values": ["group2"]},
                {"key": "alpha", "operator": "NotIn", "values": ["z", "b"]},
                {"key": "x", "operator": "Exists"},
                {"key": "y", "operator": "DoesNotExist"},
            ],
        }
    )
    assert str(sel) == "alpha notin (b,z),group=group1,group in (group2),x,!y"
    assert str(parse_selector({})) == ""


def test_explain_names_the_failing_requirement():
    sel = parse_selector({"matchLabels": {"team": "web"}})
    assert sel.explain({}, "serviceMonitorSelector") == "serviceMonitorSelector matchLabels team=web: label team missing"
    assert "not 'web'" in sel.explain({"team": "db"}, "serviceMonitorSelector")
    assert sel.explain({"team": "web"}) is None
    assert "selects nothing" in Selector.none().explain({}, "ruleSelector")


@pytest.mark.parametrize(
    "spec,fragment",
    [
        ({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}, "not a valid operator"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, "needs at least one value"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "must be empty"),
        ({"matchLabels": {"a": "has space"}}, "invalid label value"),
        ({"matchLabels": {"-bad": "x"}}, "invalid label key"),
        ({"matchLabel": {"a": "b"}}, "unknown field"),
        ("a=b", "must be a mapping"),
    ],
)
def test_invalid_selectors_have_clear_errors(spec, fragment):
    with pytest.raises(SelectorError, match=fragment) as err:
        parse_selector(spec, where="spec.selector")
    assert "spec.selector" in str(err.value)


_label = st.sampled_from(["a", "b", "c"])
_value = st.sampled_from(["x", "y", "z"])


@given(
    labels=st.dictionaries(_label, _value),
    match_labels=st.dictionaries(_label, _value),
    exprs=st.lists(
        st.tuples(_label, st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]), st.lists(_value, min_size=1, max_size=3)),
        max_size=3,
    ),
)
def test_matches_agrees_with_explain(labels, match_labels, exprs):
    spec = {
        "matchLabels": match_labels,
        "matchExpressions": [
            {"key": k, "operator": op, **({"values": v} if op in ("In", "NotIn") else {})} for k, op, v in exprs
        ],
    }
    sel = parse_selector(spec)
    expected = all(labels.get(k) == v for k, v in match_labels.items())
    for k, op, v in exprs:
        if op == "In":
            expected &= labels.get(k) in v
        elif op == "NotIn":
            expected &= labels.get(k) not in v
        elif op == "Exists":
            expected &= k in labels
        else:
            expected &= k not in labels
    assert sel.matches(labels) is expected
    assert (sel.explain(labels) is None) is expected
