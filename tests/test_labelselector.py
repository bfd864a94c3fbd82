import pytest
from hypothesis import given, strategies as st

from promop.labelselector import Selector, SelectorError, lex, matches, new_requirement, parse, parse_selector


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


# ---- the string form, from apimachinery's pkg/labels/selector_test.go tables -----------------


@pytest.mark.parametrize("text,token", [
    ("", "EndOfString"), (",", "Comma"), ("notin", "NotIn"), ("in", "In"), ("=", "Equals"),
    ("==", "DoubleEquals"), (">", "GreaterThan"), ("<", "LessThan"), ("!", "DoesNotExist"),
    ("!=", "NotEquals"), ("(", "OpenPar"), (")", "ClosedPar"), ("~", "Identifier"), ("||", "Identifier"),
])
def test_lexer(text, token):
    assert lex(text)[0][0] == token
    if text:
        assert lex(text)[0][1] == text


@pytest.mark.parametrize("text,tokens", [
    ("key in ( value )", ["Identifier", "In", "OpenPar", "Identifier", "ClosedPar"]),
    ("key notin ( value )", ["Identifier", "NotIn", "OpenPar", "Identifier", "ClosedPar"]),
    ("key in ( value1, value2 )", ["Identifier", "In", "OpenPar", "Identifier", "Comma", "Identifier", "ClosedPar"]),
    ("key", ["Identifier"]),
    ("!key", ["DoesNotExist", "Identifier"]),
    ("()", ["OpenPar", "ClosedPar"]),
    ("x in (),y", ["Identifier", "In", "OpenPar", "ClosedPar", "Comma", "Identifier"]),
    ("== != (), = notin", ["DoubleEquals", "NotEquals", "OpenPar", "ClosedPar", "Comma", "Equals", "NotIn"]),
    ("key>2", ["Identifier", "GreaterThan", "Identifier"]),
    ("key<1", ["Identifier", "LessThan", "Identifier"]),
    ("a!!b", ["Identifier", "DoesNotExist", "DoesNotExist", "Identifier"]),
    ("a=!b", ["Identifier", "Equals", "DoesNotExist", "Identifier"]),
    ("a\tin\n(b)", ["Identifier", "In", "OpenPar", "Identifier", "ClosedPar"]),
])
def test_lexer_sequence(text, tokens):
    text = text.replace("\\t", "\t").replace("\\n", "\n")
    assert [t for t, _ in lex(text)] == tokens + ["EndOfString"]


@pytest.mark.parametrize("text", [
    "x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5",
    "x==a", "x in (a)", "x notin (a,b)",
])
def test_selector_parse_good(text):
    parse(text)


@pytest.mark.parametrize("text", ["x=a||y=b", "x==a==b", "!x=a", "x<a", "x>", "x>1.5", "x>-1", "x gt 1"])
def test_selector_parse_bad(text):
    with pytest.raises(SelectorError):
        parse(text)


def S(*reqs):
    return [(k, op, tuple(sorted(vs))) for k, op, vs in reqs]


def got(text):
    return [(r.key, r.operator, r.values) for r in parse(text).requirements]


@pytest.mark.parametrize("text,want", [
    ("", []),
    ("\rx", S(("x", "exists", ()))),
    ("this-is-a-dns.domain.com/key-with-dash", S(("this-is-a-dns.domain.com/key-with-dash", "exists", ()))),
    ("this-is-another-dns.domain.com/key-with-dash in (so,what)",
     S(("this-is-another-dns.domain.com/key-with-dash", "in", ("so", "what")))),
    ("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
     S(("0.1.2.domain/99", "notin", ("10.10.100.1", "tick.tack.clock")))),
    ("foo  in\t (abc)", S(("foo", "in", ("abc",)))),
    ("x notin\n (abc)", S(("x", "notin", ("abc",)))),
    ("x  notin\t\t\t(abc,def)", S(("x", "notin", ("abc", "def")))),
    ("x in (abc,def)", S(("x", "in", ("abc", "def")))),
    ("x in (abc,)", S(("x", "in", ("abc", "")))),
    ("x in ()", S(("x", "in", ("",)))),
    ("x notin (abc,,def),bar,z in (),w",
     S(("bar", "exists", ()), ("w", "exists", ()), ("x", "notin", ("abc", "", "def")), ("z", "in", ("",)))),
    ("x,y in (a)", S(("x", "exists", ()), ("y", "in", ("a",)))),
    ("x=a", S(("x", "=", ("a",)))),
    ("x>1", S(("x", "gt", ("1",)))),
    ("x<7", S(("x", "lt", ("7",)))),
    ("x=a,y!=b", S(("x", "=", ("a",)), ("y", "!=", ("b",)))),
    ("x=a,y!=b,z in (h,i,j)", S(("x", "=", ("a",)), ("y", "!=", ("b",)), ("z", "in", ("h", "i", "j")))),
    ("x notin ( )", S(("x", "notin", ("",)))),
    ("x notin (, a)", S(("x", "notin", ("", "a")))),
    ("a ", S(("a", "exists", ()))),
    ("a in (x,y,notin, z,in)", S(("a", "in", ("in", "notin", "x", "y", "z")))),
    ("notin=in", S(("notin", "=", ("in",)))),
    ("x==", S(("x", "==", ("",)))),
    ("z,y,x", S(("x", "exists", ()), ("y", "exists", ()), ("z", "exists", ()))),
])
def test_set_selector_parser(text, want):
    text = text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")
    assert got(text) == want


@pytest.mark.parametrize("text,message", [
    ("x=a||y=b", "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be"),
    ("x,,y", "found ',', expected: identifier after ','"),
    (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
    ("x nott in (y)", "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"),
    ("a in (xyz),", "found '', expected: identifier after ','"),
    ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
    ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
    ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
    ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
    ("(", "found '(', expected: !, identifier, or 'end of string'"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("!x=a", "found '=', expected: ',' or 'end of string'"),
    ("x==a==b", "found '==', expected: ',' or 'end of string'"),
    ("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, "
            "the value must be an integer"),
    ("x=(a)", "unable to parse requirement: found '(', expected: identifier"),
    ("-bad", "unable to parse requirement: <nil>: Invalid value: \"-bad\": name part must consist of alphanumeric "
             "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
             "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("Example.com/a", "unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase "
                      "RFC 1123 subdomain"),
    ("a/b/c", "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist"),
    ("/a", "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"),
    ("a/", "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; name part "),
    ("a" * 64, 'unable to parse requirement: <nil>: Invalid value: "' + "a" * 64
               + '": name part must be no more than 63 characters'),
    ("x=" + "v" * 64, "unable to parse requirement: values[0][x]: Invalid value: \"" + "v" * 64
                      + "\": must be no more than 63 characters"),
    ("x=a b", "found 'b', expected: ',' or 'end of string'"),
])
def test_parse_errors_are_apimachinerys(text, message):
    with pytest.raises(SelectorError) as exc:
        parse(text)
    assert str(exc.value).startswith(message), str(exc.value)


@pytest.mark.parametrize("text,labels,expected", [
    ("", {"x": "y"}, True), ("x=y", {"x": "y"}, True), ("x=y,z=w", {"x": "y", "z": "w"}, True),
    ("x!=y,z!=w", {"x": "z", "z": "a"}, True), ("notin=in", {"notin": "in"}, True), ("x", {"x": "z"}, True),
    ("!x", {"y": "z"}, True), ("x>1", {"x": "2"}, True), ("x<1", {"x": "0"}, True),
    ("x=z", {}, False), ("x=y", {"x": "z"}, False), ("x=y,z=w", {"x": "w", "z": "w"}, False),
    ("x!=y,z!=w", {"x": "z", "z": "w"}, False), ("x", {"y": "z"}, False), ("!x", {"x": "z"}, False),
    ("x>1", {"x": "0"}, False), ("x<1", {"x": "2"}, False),
    ("foo=bar", {"foo": "bar", "baz": "blah"}, True), ("baz=blah", {"foo": "bar", "baz": "blah"}, True),
    ("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}, True), ("foo=blah", {"foo": "bar", "baz": "blah"}, False),
    ("baz=bar", {"foo": "bar", "baz": "blah"}, False),
    ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    # gt/lt: a missing or non-integer label never matches, and the comparison is numeric, not textual
    ("x>1", {}, False), ("x<1", {}, False), ("x>1", {"x": "a"}, False), ("x>9", {"x": "10"}, True),
    ("x<10", {"x": "9"}, True), ("x>1", {"x": "1"}, False), ("x<1", {"x": "1"}, False),
    ("x>1", {"x": "99999999999999999999"}, False),
    ("x in ()", {"x": ""}, True), ("x in ()", {}, False), ("x notin (a)", {}, True),
    ("x=", {"x": ""}, True), ("x=", {}, False), ("x!=", {}, True),
    # the case: the autoscaler read `replicas>1` as an exists-check on a key named `replicas>1`
    ("replicas>1", {"replicas": "3"}, True), ("replicas>1", {"replicas": "1"}, False),
    ("replicas>1", {"replicas>1": "x"}, False),
])
def test_selector_matches(text, labels, expected):
    assert parse(text).matches(labels) is expected


@pytest.mark.parametrize("reqs,text", [
    ([("x", "in", ["abc", "def"]), ("y", "notin", ["jkl"]), ("z", "exists", [])], "x in (abc,def),y notin (jkl),z"),
    ([("x", "notin", ["abc", "def"]), ("y", "!=", ["jkl"]), ("z", "!", [])], "x notin (abc,def),y!=jkl,!z"),
    ([("x", "notin", ["abc"]), ("y", "in", ["jkl", "mno"]), ("z", "notin", [""])],
     "x notin (abc),y in (jkl,mno),z notin ()"),
    ([("x", "=", ["abc"]), ("y", "==", ["jkl"]), ("z", "!=", ["a"]), ("z", "exists", [])], "x=abc,y==jkl,z!=a,z"),
    ([("x", "gt", ["2"]), ("y", "lt", ["8"]), ("z", "exists", [])], "x>2,y<8,z"),
])
def test_to_string_and_back(reqs, text):
    sel = Selector(tuple(new_requirement(k, op, vs) for k, op, vs in reqs))
    assert str(sel) == text
    assert parse(text) == sel


@pytest.mark.parametrize("key,op,values,error", [
    ("x1", "in", [], "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"),
    ("x2", "notin", [], "values: Invalid value"),
    ("x3", "in", ["foo"], None), ("x4", "notin", ["foo"], None),
    ("x5", "=", ["foo", "bar"], "values: Invalid value: []string{\"foo\", \"bar\"}: exact-match compatibility"),
    ("x6", "exists", [], None), ("x7", "!", [], None),
    ("x8", "exists", ["foo"], "values: Invalid value: []string{\"foo\"}: values set must be empty"),
    ("x9", "in", ["bar"], None), ("x11", "gt", ["1"], None), ("x12", "lt", ["6"], None),
    ("x13", "gt", [], "values: Invalid value: []string{}: for 'Gt', 'Lt' operators, exactly one value is required"),
    ("x14", "gt", ["bar"], "values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer"),
    ("x15", "lt", ["bar"], "values[0]: Invalid value"),
    ("a" * 254, "exists", [], "key: Invalid value"),
    ("x16", "=", ["a" * 254], "values[0][x16]: Invalid value"),
    ("x17", "=", ["a b"], "values[0][x17]: Invalid value: \"a b\": a valid label must be"),
    ("x18", "unsupportedOp", [], "operator: Unsupported value: \"unsupportedOp\""),
])
def test_requirement_constructor(key, op, values, error):
    if error is None:
        assert new_requirement(key, op, values).operator == op
    else:
        with pytest.raises(SelectorError) as exc:
            new_requirement(key, op, values)
        assert str(exc.value).startswith(error), str(exc.value)


def test_structured_form_has_no_gt_lt():
    with pytest.raises(SelectorError, match="not a valid operator"):
        parse_selector({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})


def test_nil_and_empty_as_label_selector_as_selector():
    assert Selector.none().matches({}) is False and not Selector.none().empty()
    assert parse_selector({}).empty() and parse_selector({"matchLabels": {}, "matchExpressions": []}).empty()
    assert parse("").empty() and parse(None).empty()


def test_structured_and_string_forms_agree():
    spec = {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["b", "a"]}, {"key": "canary", "operator": "DoesNotExist"}]}
    sel = parse_selector(spec)
    assert str(sel) == "app=web,!canary,tier notin (a,b)"
    assert [(r.key, r.operator, r.values) for r in parse(str(sel)).requirements] == \
        [(r.key, r.operator, r.values) for r in sel.requirements]


def test_structured_key_errors_carry_apimachinerys_detail():
    with pytest.raises(SelectorError, match=r"spec.selector.matchLabels: invalid label key 'a/b/c': a qualified name"):
        parse_selector({"matchLabels": {"a/b/c": "x"}}, where="spec.selector")
    with pytest.raises(SelectorError, match="no more than 63 characters"):
        parse_selector({"matchLabels": {"a": "v" * 64}})
    assert parse_selector({"matchLabels": {"a": "v" * 63}}).matches({"a": "v" * 63})
    assert parse_selector({"matchLabels": {"example.com/" + "k" * 63: ""}}).matches({"example.com/" + "k" * 63: ""})
