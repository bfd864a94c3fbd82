"""The compiled schema check (promop.schema.compiled) gives jsonschema's verdict.

`validate()` trusts the compiled check's "valid" and skips jsonschema, so a compiled check
that accepts what jsonschema refuses would let a bad object through. These tests compare
the two verdicts (valid or not) on real objects (kube-prometheus, promop's examples, the
conformance inputs), on every leaf of them replaced by awkward values, on generated
mutations, and on small schemas for the keywords promop's CRDs do not use.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promop.schema import crd_schema, load_crds, validate
from promop.schema.compiled import compile_schema
from promop.schema.rules import rule_violations
from promop.schema.jsonschema_check import K8sValidator

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("Prometheus", "ServiceMonitor", "PodMonitor", "PrometheusRule")
GROUP = "monitoring.coreos.com"


_built: dict[int, tuple[dict, Any, Any]] = {}


def _both(schema: dict) -> tuple[Any, Any]:
    hit = _built.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _built[id(schema)] = (schema, K8sValidator(schema), compile_schema(schema))
    return hit[1], hit[2]


def jsonschema_ok(obj: Any, schema: dict) -> bool:
    return not any(True for _ in _both(schema)[0].iter_errors(obj))


def compiled_ok(obj: Any, schema: dict) -> bool:
    check = _both(schema)[1]
    assert check is not None
    return check(obj)


def same_verdict(obj: Any, schema: dict) -> None:
    expected = jsonschema_ok(obj, schema)
    assert compiled_ok(obj, schema) == expected, (expected, obj)
    # validate() adds the CEL rules (promop.schema.rules), which neither judge above evaluates
    assert (validate(obj, schema) == []) == (expected and not rule_violations(obj, schema))


def _docs(folder: Path) -> list[dict]:
    out = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in KINDS:
                out.append(doc)
    return out


# kube-prometheus has no PodMonitor: one using most of the kind's fields.
POD_MONITOR = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "PodMonitor",
    "metadata": {"name": "pm", "namespace": "default", "labels": {"team": "a"}},
    "spec": {
        "jobLabel": "app",
        "podTargetLabels": ["team"],
        "selector": {"matchLabels": {"app": "x"},
                     "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]},
        "namespaceSelector": {"matchNames": ["default"]},
        "sampleLimit": 1000,
        "scrapeProtocols": ["PrometheusProto", "OpenMetricsText1.0.0"],
        "podMetricsEndpoints": [
            {"port": "metrics", "interval": "30s", "scrapeTimeout": "10s", "path": "/metrics",
             "honorLabels": True, "scheme": "https", "params": {"module": ["http_2xx"]},
             "tlsConfig": {"insecureSkipVerify": True, "serverName": "x"},
             "basicAuth": {"username": {"name": "s", "key": "u"}, "password": {"name": "s", "key": "p"}},
             "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod",
                              "action": "replace"}],
             "metricRelabelings": [{"regex": "go_.*", "action": "drop", "sourceLabels": ["__name__"]}],
             "proxyUrl": "http://proxy:3128"},
            {"portNumber": 9100, "enableHttp2": False, "filterRunning": True},
            {"targetPort": "web", "bearerTokenSecret": {"name": "t", "key": "token"}},
        ],
    },
}

def _unique(objs: list[dict]) -> list[dict]:
    seen, out = set(), []
    for o in objs:
        key = (o["kind"], o["metadata"]["name"])
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out


OBJECTS = _unique(
    _docs(ROOT / "tests" / "render" / "testdata" / "kube-prometheus")
    + _docs(ROOT / "examples")
    + [POD_MONITOR]
)


def _trimmed(value: Any) -> Any:
    """Lists cut to their first, middle and last items: every shape, a fraction of the size."""
    if isinstance(value, dict):
        return {k: _trimmed(v) for k, v in value.items()}
    if isinstance(value, list):
        picked = value if len(value) <= 3 else [value[0], value[len(value) // 2], value[-1]]
        return [_trimmed(v) for v in picked]
    return value


def _schema(obj: dict) -> dict:
    return crd_schema(obj["kind"], "v1", GROUP)


def test_every_crd_schema_compiles():
    """Else validate() silently falls back to jsonschema for that kind (correct, only slow)."""
    for crd in load_crds():
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            assert compile_schema(schema) is not None, (crd["spec"]["names"]["kind"], version["name"])


def test_fixtures_are_here():
    kinds = {o["kind"] for o in OBJECTS}
    assert kinds >= {"Prometheus", "ServiceMonitor", "PrometheusRule", "PodMonitor"}, kinds


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_real_objects(obj):
    assert compiled_ok(obj, _schema(obj))
    same_verdict(obj, _schema(obj))


def _leaves(value: Any, path: tuple = ()) -> Iterator[tuple]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from _leaves(v, path + (i,))
    else:
        yield path


def _replaced(obj: Any, path: tuple, new: Any) -> Any:
    """`obj` with the value at `path` replaced (containers on the path copied, the rest shared)."""
    if not path:
        return new
    out = copy.copy(obj)
    out[path[0]] = _replaced(obj[path[0]], path[1:], new)
    return out


AWKWARD = [None, "", "x", "::not a url::", "30s\n", "-1", 0, -1, 2**31, 2**63, 1.5, 2.0, True, False, [], {},
           ["x"], {"a": "b"}, {"a": None}, [None]]


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_leaves_replaced_by_awkward_values(obj):
    """Every leaf (and its parent) of small objects, a spread of 80 of big ones (lists trimmed)."""
    schema = _schema(obj)
    obj = _trimmed(obj)
    leaves = [p for p in _leaves(obj) if p[:1] not in (("apiVersion",), ("kind",))]
    step = max(1, len(leaves) // 80)
    for path in leaves[::step]:
        for cut in {len(path), max(1, len(path) - 1)}:
            for new in AWKWARD:
                same_verdict(_replaced(obj, path[:cut], new), schema)


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False), st.text(max_size=12),
    st.sampled_from(["30s", "1m", "http://x", "https://y/z", "socks5://p", "HTTP", "Exists", "In", "replace",
                     "Keep", "drop", "2024-01-01T00:00:00Z", "OrderedText", "PrometheusText1.0.0", "10MB"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["name", "key", "port", "a", "interval", "action"]),
                                            inner, max_size=3)),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_mutations(data):
    obj = data.draw(st.sampled_from(OBJECTS))
    schema = _schema(obj)
    mutated = _trimmed(obj)
    for _ in range(data.draw(st.integers(1, 3))):
        leaves = list(_leaves(mutated))
        path = data.draw(st.sampled_from(leaves))
        cut = data.draw(st.integers(0, len(path)))  # replace the leaf or one of its parents
        mutated = _replaced(mutated, path[:cut] if cut else path, data.draw(json_values))
        if not isinstance(mutated, dict):
            break
    same_verdict(mutated, schema)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_generated_extra_fields(data):
    """Unknown keys and map values (labels, annotations: additionalProperties schemas)."""
    obj = copy.deepcopy(data.draw(st.sampled_from(OBJECTS)))
    spec = obj.setdefault("spec", {})
    target = data.draw(st.sampled_from(["spec", "metadata", "labels"]))
    where = spec if target == "spec" else obj["metadata"] if target == "metadata" else spec.setdefault(
        "podMetadata", {}).setdefault("labels", {})
    where[data.draw(st.text(min_size=1, max_size=6))] = data.draw(json_values)
    same_verdict(obj, _schema(obj))


# -- keywords our CRDs do not use (the compiled check must still agree, or refuse to compile) --

SMALL_SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "string", "nullable": True}}, "required": ["a"]},
    {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2], "nullable": True}}},
    {"type": "number", "minimum": 1, "exclusiveMinimum": True, "maximum": 5, "exclusiveMaximum": True},
    {"type": "string", "minLength": 2, "maxLength": 3},
    {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "boolean"}},
    {"allOf": [{"type": "object"}, {"required": ["k"]}]},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True},
    {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
    {"x-kubernetes-int-or-string": True, "nullable": True},
    {"type": ["string", "null"]},
    {"enum": [True, 1, "a"]},
    {"enum": [1, 0, "b"]},
    {"type": "string", "format": "date-time"},
    {"type": "integer", "format": "int32"},
    {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
    {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
     "items": {"type": "object", "properties": {"name": {"type": "string", "default": "d"}}}},
    {"type": "object", "x-kubernetes-validations": [{"rule": "has(self.a) || has(self.b)"},
                                                     {"rule": "self.all(k, k != 'x')"}]},
]


@pytest.mark.parametrize("schema", SMALL_SCHEMAS, ids=lambda s: ",".join(sorted(s))[:60])
@settings(max_examples=150, deadline=None)
@given(value=json_values)
def test_small_schemas(schema, value):
    same_verdict(value, schema)
    same_verdict({"a": value, "k": value, "name": value}, schema)


@pytest.mark.parametrize("schema", SMALL_SCHEMAS, ids=lambda s: ",".join(sorted(s))[:60])
def test_small_schemas_fixed_values(schema):
    for value in [*AWKWARD, 1, 3, 5, 1.0, "ab", "abcd", [True], [True, False, True], ["a", "a"],
                  [{"name": "x"}, {"name": "x"}], [{}, {}], {"k": 1}, {"a": "x", "k": 2}, {"b": 1}, {"x": 1},
                  {"apiVersion": "v1", "kind": "K"}, {"apiVersion": "", "kind": "K", "metadata": 1},
                  "2024-01-01T00:00:00Z", "2024-13-01T00:00:00Z", 2**31 - 1, -(2**31) - 1]:
        same_verdict(value, schema)


@pytest.mark.parametrize("keyword", ["oneOf", "not", "patternProperties", "uniqueItems", "$ref"])
def test_keywords_outside_the_subset_are_not_compiled(keyword):
    value = {"oneOf": [{}], "not": {}, "patternProperties": {"a": {}}, "uniqueItems": True, "$ref": "#"}[keyword]
    assert compile_schema({"type": "object", "properties": {"x": {keyword: value}}}) is None


def test_odd_python_types_defer_to_jsonschema():
    """A datetime (PyYAML reads unquoted timestamps so) is not a string: both refuse it."""
    import datetime

    schema = crd_schema("ServiceMonitor", "v1", GROUP)
    obj = {"spec": {"selector": {}, "endpoints": [{"interval": datetime.datetime(2024, 1, 1)}]}}
    same_verdict(obj, schema)
    assert validate(obj, schema)
