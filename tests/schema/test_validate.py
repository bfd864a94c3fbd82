"""promop.schema: CRD schema validation as the apiserver does it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from promop.schema import SchemaNotFound, Violation, crd_schema, load_crds, schema_for, unknown_fields, validate
from promop.schema import cel
from promop.goregex import go_pattern as compile_go

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent.parent / "shared"
if not SHARED.is_dir():
    SHARED = ROOT.parent / "shared"
UPSTREAM_CRDS = SHARED / "reference" / "upstream-crds"
KUBE_PROMETHEUS = SHARED / "fixtures" / "kube-prometheus"


def sm(**endpoint) -> dict:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "endpoints": [{"port": "web", **endpoint}]},
    }


SM = crd_schema("ServiceMonitor", "v1")


def msgs(obj, schema=SM) -> list[str]:
    return [str(v) for v in validate(obj, schema)]


def test_valid_object_has_no_violations():
    assert validate(sm(interval="30s", scheme="https"), SM) == []


def test_pattern_violation_has_kubectl_path_and_reason():
    assert validate(sm(proxyUrl="::not a url::"), SM) == [
        Violation(
            "spec.endpoints[0].proxyUrl",
            "Invalid value: \"::not a url::\": should match '^(http|https|socks5)://.+$'",
        )
    ]


def test_enum_type_minimum():
    obj = sm(scheme="ftp", honorLabels="yes")
    obj["spec"]["sampleLimit"] = -1
    assert msgs(obj) == [
        'spec.endpoints[0].honorLabels: Invalid value: "yes": must be of type boolean',
        'spec.endpoints[0].scheme: Unsupported value: "ftp": supported values: "http", "https", "HTTP", "HTTPS"',
        "spec.sampleLimit: Invalid value: -1: should be greater than or equal to 0",
    ]


def test_go_dollar_does_not_match_before_a_final_newline():
    # Python's `$` would accept "30s\n"; Go's (and the apiserver's) does not.
    assert msgs(sm(interval="30s\n"))[0].startswith("spec.endpoints[0].interval: Invalid value")


def test_required_and_null_counts_as_absent():
    obj = sm()
    obj["spec"]["selector"] = None  # pruned by the apiserver, then required fails
    assert msgs(obj) == ["spec.selector: Required value"]
    # a null optional field is simply absent
    assert validate(sm(interval=None), SM) == []


def test_nullable():
    schema = {"type": "object", "properties": {"a": {"type": "string", "nullable": True}}, "required": ["a"]}
    assert validate({"a": None}, schema) == []
    items = {"type": "array", "items": {"type": "string"}}
    assert msgs([None], items) == ['[0]: Invalid value: null: must be of type string']


def test_int_or_string():
    assert validate(sm(targetPort=8080), SM) == []
    assert validate(sm(targetPort="http"), SM) == []
    assert msgs(sm(targetPort=True)) == [
        "spec.endpoints[0].targetPort: Invalid value: true: must be of type integer or string"
    ]
    bare = {"x-kubernetes-int-or-string": True}
    assert validate(3, bare) == [] and validate("3", bare) == []
    assert msgs([1], bare) == ['Invalid value: "array": must be of type integer or string']


def test_integral_float_is_an_integer_and_int32_range():
    schema = {"type": "integer", "format": "int32"}
    assert validate(3.0, schema) == []
    assert msgs(3.5, schema) == ["Invalid value: 3.5: must be of type integer"]
    assert msgs(2**31, schema) == ["Invalid value: 2147483648: must fit in int32"]
    assert validate(2**31, {"type": "integer", "format": "int64"}) == []


def test_date_time_format():
    schema = {"type": "string", "format": "date-time"}
    assert validate("2024-01-02T03:04:05Z", schema) == []
    assert validate("2024-01-02T03:04:05.123+02:00", schema) == []
    assert msgs("yesterday", schema) == ['Invalid value: "yesterday": must be of format date-time']
    assert msgs("2024-13-02T03:04:05Z", schema) == ['Invalid value: "2024-13-02T03:04:05Z": must be of format date-time']


def test_map_key_path():
    obj = sm()
    obj["spec"]["selector"]["matchLabels"]["app"] = 3
    assert msgs(obj) == ['spec.selector.matchLabels[app]: Invalid value: 3: must be of type string']


def test_list_type_set_and_map():
    s = {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}
    assert validate(["a", "b"], s) == []
    assert msgs(["a", "b", "a"], s) == ['[2]: Duplicate value: "a"']
    m = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name", "protocol"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}},
    }
    assert validate([{"name": "a"}, {"name": "a", "protocol": "UDP"}], m) == []
    # a missing key takes its default: {"name": "a"} and {"name": "a", "protocol": "TCP"} collide
    assert msgs([{"name": "a"}, {"name": "a", "protocol": "TCP"}], m) == [
        '[1]: Duplicate value: {"name":"a","protocol":"TCP"}'
    ]


def test_list_type_identity_is_the_json_value():
    """Two items are one only when their JSON is: Python's 1 == 1.0 == True, 0.0 == -0.0 are not."""
    s = {"type": "array", "x-kubernetes-list-type": "set"}
    assert validate([1, 1.0, True, 0.0, -0.0, "1", None, [1], {"a": 1}], s) == []
    assert msgs([{"a": 1, "b": [2]}, {"b": [2], "a": 1}], s) == ['[1]: Duplicate value: "object"']
    assert msgs([1.5, 1.5, None, None], s) == ["[1]: Duplicate value: 1.5", "[3]: Duplicate value: null"]
    m = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "name"],
         "items": {"type": "object"}}
    assert validate([{"port": 1, "name": "a"}, {"port": 1.0, "name": "a"}, {"port": True, "name": "a"},
                     {"port": 1, "name": "b"}], m) == []
    assert msgs([{"port": 1, "name": "a", "x": 1}, {"name": "a", "port": 1, "x": 2}], m) == [
        '[1]: Duplicate value: {"port":1,"name":"a"}'
    ]


def test_embedded_resource():
    s = {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}
    assert validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, s) == []
    assert msgs({"kind": "Pod", "metadata": "x"}, s) == [
        "apiVersion: Required value: must not be empty",
        'metadata: Invalid value: "x": must be of type object',
    ]


def test_x_kubernetes_validations_rule():
    prom = crd_schema("Prometheus", "v1")
    ok = {"spec": {"shards": 2, "shardingStrategy": {"mode": "Topology", "topology": {"values": ["a", "b"]}}}}
    assert validate(ok, prom) == []
    bad = {"spec": {"shards": 1, "shardingStrategy": {"mode": "Topology", "topology": {"values": ["a", "b"]}}}}
    [v] = validate(bad, prom)
    assert v.path == "spec"
    assert "shards must be greater than or equal to the number of topology values" in v.message
    # default shards (1) when unset
    assert len(validate({"spec": {"shardingStrategy": {"mode": "Topology", "topology": {"values": ["a", "b"]}}}}, prom)) == 1


def test_cel_evaluation():
    rule = cel.compile_rule("!has(self.externalId) || has(self.roleArn)")
    assert rule({}) and rule({"roleArn": "r"}) and rule({"externalId": "e", "roleArn": "r"})
    assert not rule({"externalId": "e"})
    rule = cel.compile_rule("!(self.type != 'RollingUpdate' && has(self.rollingUpdate))")
    assert rule({"type": "RollingUpdate", "rollingUpdate": {}}) and not rule({"type": "OnDelete", "rollingUpdate": {}})
    assert cel.compile_rule("(has(self.a) ? self.a : 1) >= self.b.size()")({"b": [1]})
    assert cel.compile_rule("self.all(x, x > 0)")([1]) and not cel.compile_rule("self.all(x, x > 0)")([0])
    with pytest.raises(cel.Unsupported):
        cel.compile_rule("ip(self) == ip('::1')")  # Kubernetes' IP library: not provided
    with pytest.raises(cel.Unsupported):
        cel.compile_rule("self.a ==")  # does not compile
    with pytest.raises(cel.EvalError):
        cel.compile_rule("self.a == 1")({})


def _all_rules(folder: Path) -> list[str]:
    rules: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for r in node.get("x-kubernetes-validations") or []:
                rules.append(r["rule"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for crd in load_crds(folder):
        walk(crd)
    return rules


def test_every_rule_in_our_and_upstreams_crds_is_supported():
    folders = [ROOT / "crds"] + ([UPSTREAM_CRDS] if UPSTREAM_CRDS.is_dir() else [])
    rules = [r for f in folders for r in _all_rules(f)]
    assert rules
    for r in rules:
        cel.compile_rule(r)


def test_go_regex_translation():
    assert compile_go(r"^((?i)january|february|1[0-2])$").match("FEBRUARY")
    rx = compile_go(r"^(?i)(abort|warn)?$")
    assert rx.match("ABORT") and rx.match("") and not rx.match("x")
    # (?i) applies from where it stands to the end of its group, not before it
    rx = compile_go(r"^(a|b(?i)c|d)$")
    assert rx.match("a") and rx.match("bC") and rx.match("D") and not rx.match("A")
    assert not compile_go(r"^\d+$").match("٣")  # Go's \d is ASCII
    assert not compile_go(r"^[0-9]+$").match("12\n")


def test_every_upstream_pattern_compiles():
    patterns = set()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                patterns.add(node["pattern"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    folders = [ROOT / "crds"] + ([UPSTREAM_CRDS] if UPSTREAM_CRDS.is_dir() else [])
    for f in folders:
        for crd in load_crds(f):
            walk(crd)
    assert patterns
    assert [p for p in patterns if compile_go(p) is None] == []


def test_unknown_fields():
    obj = sm(prt=1)
    obj["metadata"]["whatever"] = 1  # ObjectMeta is not the CRD's business
    obj["spec"]["bogus"] = 2
    assert unknown_fields(obj, SM) == ["spec.endpoints[0].prt", "spec.bogus"]
    assert unknown_fields(sm(), SM) == []


def test_crd_lookup():
    assert crd_schema("ServiceMonitor") is SM  # storage version, cached
    assert schema_for(sm()) is SM
    with pytest.raises(SchemaNotFound, match="no CRD schema for monitoring.coreos.com/v9 ServiceMonitor"):
        crd_schema("ServiceMonitor", "v9", "monitoring.coreos.com")


def _docs(folder: Path):
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in ("Prometheus", "ServiceMonitor", "PodMonitor", "PrometheusRule"):
                yield path.name, doc


@pytest.mark.skipif(not KUBE_PROMETHEUS.is_dir(), reason="needs ../shared/fixtures")
def test_real_kube_prometheus_objects_are_valid_against_ours_and_upstreams():
    docs = list(_docs(KUBE_PROMETHEUS))
    assert len(docs) > 15
    for name, doc in docs:
        assert validate(doc, schema_for(doc)) == [], name
        assert validate(doc, schema_for(doc, UPSTREAM_CRDS)) == [], name
        assert unknown_fields(doc, schema_for(doc, UPSTREAM_CRDS)) == [], name


def test_shipped_examples_are_valid():
    docs = list(_docs(ROOT / "examples"))
    assert docs
    for name, doc in docs:
        assert validate(doc, schema_for(doc)) == [], name
