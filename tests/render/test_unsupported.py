"""Fields promop does not implement produce warnings naming the field; supported ones do not."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from promop.render.unsupported import ALL, SUPPORTED, unsupported_fields

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "kube-prometheus"


def obj(kind: str, spec: dict) -> dict:
    return {"kind": kind, "metadata": {"name": "x", "namespace": "ns"}, "spec": spec}


def fields(o: dict) -> list[str]:
    return [p.field for p in unsupported_fields(o)]


def test_unsupported_prometheus_fields_are_named_with_a_reason():
    problems = unsupported_fields(obj("Prometheus", {
        "thanos": {"image": "thanos"}, "remoteWriteReceiverMessageVersions": ["V2.0"], "scrapeInterval": "30s",
        "remoteRead": [{"url": "http://x"}], "probeSelector": {}, "tracingConfig": {"endpoint": "x"}, "otlp": {},
        "futureField": 1}))
    by_field = {p.field: p.message for p in problems}
    # Probes, ScrapeConfigs, the Thanos sidecar, tracing, OTLP and the receiver's message versions are
    # implemented; a field promop does not know is still named
    assert set(by_field) == {"spec.futureField"}
    assert by_field["spec.futureField"] == "not supported by promop; the field is ignored"
    assert all((p.kind, p.namespace, p.name) == ("Prometheus", "ns", "x") for p in problems)


def test_nested_fields_are_checked_per_list_item():
    sm = obj("ServiceMonitor", {"selector": {}, "endpoints": [
        {"port": "web"}, {"port": "x", "oauth2": {"clientId": {}}, "futureField": 1,
                          "tlsConfig": {"caFile": "/ca", "futureTLS": True}}]})
    assert fields(sm) == ["spec.endpoints[1].futureField", "spec.endpoints[1].tlsConfig.futureTLS"]
    pm = obj("PodMonitor", {"podMetricsEndpoints": [{"port": "web", "tlsConfig": {"caFile": "/x"}}]})
    assert fields(pm) == ["spec.podMetricsEndpoints[0].tlsConfig.caFile"]


def test_null_values_and_other_kinds_are_ignored():
    assert fields(obj("Prometheus", {"thanos": None})) == []
    assert fields(obj("Secret", {"anything": 1})) == []
    assert fields({"kind": "Prometheus", "metadata": {"name": "x"}}) == []


def test_prometheus_rule_groups_are_fully_supported():
    assert fields(obj("PrometheusRule", {"groups": [{"name": "g", "rules": [], "interval": "1m"}]})) == []


def test_kube_prometheus_fixtures_warn_about_nothing():
    if not FIXTURES.exists():
        pytest.skip("../shared/fixtures not present")
    found = set()
    for path in FIXTURES.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            found.update(f"{doc['kind']} {p.field}" for p in unsupported_fields(doc))
    assert found == set()  # Probes and ScrapeConfigs are implemented


def test_additional_args_the_operator_manages_are_reported():
    problems = unsupported_fields(obj("Prometheus", {"additionalArgs": [
        {"name": "storage.tsdb.path", "value": "/x"}, {"name": "web.page-title", "value": "ok"}]}))
    assert [(p.field, p.message) for p in problems] == [(
        "spec.additionalArgs",
        "--storage.tsdb.path is managed by the operator; this additional argument is ignored")]


# ---- against upstream's CRDs: every field is implemented or warned about, never silently ignored ----

UPSTREAM = Path(__file__).resolve().parents[3] / "shared" / "reference" / "upstream-crds"
CRD_FILES = {"Prometheus": "prometheuses", "ServiceMonitor": "servicemonitors", "PodMonitor": "podmonitors",
             "PrometheusRule": "prometheusrules"}
# Upstream fields promop does not implement: each must produce a warning (checked below). Changing
# this list is a deliberate decision, not a side effect.
NOT_IMPLEMENTED = {
    "ServiceMonitor": set(),
    "PodMonitor": set(),
    "PrometheusRule": set(),
    "Prometheus": {
        # upstream's sidecar reads only minVersion, the *File fields, cipherSuites and curves
        "thanos.grpcServerTlsConfig.ca", "thanos.grpcServerTlsConfig.cert", "thanos.grpcServerTlsConfig.keySecret",
        "thanos.grpcServerTlsConfig.insecureSkipVerify", "thanos.grpcServerTlsConfig.serverName",
        "thanos.grpcServerTlsConfig.maxVersion",
    },
}
# Subtrees copied verbatim into the pod template / StatefulSet: their leaves are Kubernetes' fields.
VERBATIM = {"containers", "initContainers", "volumes", "volumeMounts", "affinity", "tolerations",
            "topologySpreadConstraints", "securityContext", "resources", "storage", "podMetadata",
            "imagePullSecrets", "dnsConfig", "hostAliases", "persistentVolumeClaimRetentionPolicy", "updateStrategy",
            "nodeSelector", "additionalArgs"}
_RENDER = Path(__file__).resolve().parents[2] / "promop" / "render"
RENDER_SOURCES = "\n".join(
    p.read_text() for p in [*_RENDER.glob("*.py"), *_RENDER.glob("thanos/*.py"),
                            _RENDER / "alertmanager" / "webtls.py",  # web TLS is shared
                            _RENDER.parent / "operator" / "shard_retention.py"]  # read by the operator
    if p.name not in ("unsupported.py", "shape.py"))


def _upstream_spec(kind: str) -> dict:
    path = UPSTREAM / f"monitoring.coreos.com_{CRD_FILES[kind]}.yaml"
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not checked out)")
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


def _props(schema: dict) -> dict:
    if schema.get("type") == "array":
        schema = schema.get("items") or {}
    return schema.get("properties") or {}


def _classify(schema: dict, tree, path: str, missing: list[str], claimed: list[tuple[str, dict]]) -> None:
    for key, sub in _props(schema).items():
        here = f"{path}.{key}" if path else key
        if key not in tree:
            missing.append(here)
        elif tree[key] is ALL:
            claimed.append((here, sub))
        else:
            _classify(sub, tree[key], here, missing, claimed)


def _leaf_names(schema: dict, depth: int = 0) -> set[str]:
    names = set()
    for key, sub in _props(schema).items():
        names.add(key)
        if depth < 4:
            names |= _leaf_names(sub, depth + 1)
    return names


def _example(schema: dict, path: list[str]):
    """A minimal value placing something at `path` (lists get one item)."""
    if not path:
        return "x"
    node = {path[0]: _example(_props(schema)[path[0]], path[1:])}
    return [node] if schema.get("type") == "array" else node


@pytest.mark.parametrize("kind", CRD_FILES)
def test_every_upstream_field_is_implemented_or_warned(kind):
    spec_schema = _upstream_spec(kind)
    missing: list[str] = []
    claimed: list[tuple[str, dict]] = []
    _classify(spec_schema, SUPPORTED[kind], "", missing, claimed)
    assert set(missing) == NOT_IMPLEMENTED[kind]
    # each one really produces a warning naming the field (list items get their index)
    for path in missing:
        spec = _example({"properties": _props(spec_schema)}, path.split("."))
        warned = fields(obj(kind, spec))
        assert len(warned) == 1 and warned[0].replace("[0]", "") == f"spec.{path}", (path, warned)
    # a subtree claimed whole must be read by the renderer: every field name in it occurs in its source
    for path, sub in claimed:
        if any(part in VERBATIM for part in path.split(".")):
            continue
        for name in _leaf_names(sub) | {path.rsplit(".", 1)[-1]}:
            assert f'"{name}"' in RENDER_SOURCES or f"'{name}'" in RENDER_SOURCES, (
                f"spec.{path} is marked as fully supported but the renderer never reads {name!r}")


@pytest.mark.parametrize("kind", CRD_FILES)
def test_our_crds_keep_every_unimplemented_field_so_the_warning_can_be_given(kind):
    """If crds/ pruned a field, the API server would drop it silently before promop ever saw it."""
    crd = yaml.safe_load((Path(__file__).resolve().parents[2] / "crds" /
                          f"monitoring.coreos.com_{CRD_FILES[kind]}.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for path in NOT_IMPLEMENTED[kind]:
        node = spec
        for part in path.split("."):
            if node.get("type") == "array":
                node = node.get("items") or {}
            if node.get("x-kubernetes-preserve-unknown-fields"):
                break
            assert part in (node.get("properties") or {}), f"crds/ prunes spec.{path}"
            node = node["properties"][part]


def test_deviations_file_lists_exactly_the_unsupported_prometheus_fields():
    """Every top-level Prometheus spec field of upstream's CRD that promop ignores is listed in
    deviations.yaml with a reason, and nothing listed there is in fact supported."""
    from pathlib import Path

    import yaml

    from promop.render.unsupported import SUPPORTED
    from promop.schema import crd_schema

    here = Path(__file__).resolve().parent
    listed = yaml.safe_load((here / "testdata" / "conformance" / "deviations.yaml").read_text())["unsupported"]
    names = set()
    for entry in listed:
        assert entry["why"].strip()
        for part in entry["field"].split(","):
            path = part.strip().split(" ")[0]
            if path.count(".") == 1:  # spec.<field>
                names.add(path.split(".")[1])
    upstream = here.parents[2].parent / "shared" / "reference" / "upstream-crds"
    if not upstream.is_dir():
        upstream = here.parents[3] / "shared" / "reference" / "upstream-crds"
    if not upstream.is_dir():
        import pytest
        pytest.skip("needs ../shared/reference/upstream-crds")
    spec = crd_schema("Prometheus", "v1", folder=upstream)["properties"]["spec"]["properties"]
    ignored = {k for k in spec if k not in SUPPORTED["Prometheus"]}
    assert ignored == names
