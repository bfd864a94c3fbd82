"""Upstream conformance for ScrapeConfig: each golden of pkg/prometheus with a ScrapeConfig, from our inputs.

Inputs are in testdata/scrapeconfig/cases.yaml (translated from upstream's promcfg_test.go tables);
goldens are read from ../shared at run time. Compared parsed (YAML semantics). Known differences
are listed in testdata/scrapeconfig/deviations.yaml with why, and in docs/scrapeconfig.md.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from promop.render import RenderOptions, generate_config

HERE = Path(__file__).resolve().parent / "testdata" / "scrapeconfig"
GOLDENS = Path(__file__).resolve().parents[2].parent.parent / "shared" / "reference" / "upstream-tests" / "pkg" / "prometheus" / "testdata"
if not GOLDENS.is_dir():
    GOLDENS = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "upstream-tests" / "pkg" / "prometheus" / "testdata"
TABLES = yaml.safe_load((HERE / "cases.yaml").read_text())
DEVIATIONS = {d["golden"]: d for d in (yaml.safe_load((HERE / "deviations.yaml").read_text()) or {}).get("deviations") or ()}
CASES = [(t, c) for t in TABLES for c in t["cases"]]
# upstream's conformance generator: no EndpointSlice support, no shard retention policy
OPTIONS = RenderOptions(endpointslice_supported=False, shard_retention_policy=False)
TLS_KEYS = ("ca", "cert", "keySecret")


def _prometheus(case: dict) -> dict:
    spec = {"scrapeInterval": "30s", "evaluationInterval": "30s", "version": "v3.13.2",
            "podMonitorSelector": {"matchLabels": {"group": "group1"}},
            "probeSelector": {"matchLabels": {"group": "group1"}}}
    if case.get("version"):
        spec["version"] = case["version"]
    spec.update(case.get("prometheus") or {})
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "test", "namespace": "default"}, "spec": spec}


def _tls_refs(value, out: set, key: str = "") -> None:
    """(kind, name, key) of every Secret/ConfigMap key a TLS config reads (they must hold PEM for promop)."""
    if isinstance(value, dict):
        if key in TLS_KEYS:
            kind = "ConfigMap" if value.get("configMap") else "Secret"
            sel = value if key == "keySecret" else (value.get("secret") or value.get("configMap") or {})
            out.add((kind, sel.get("name"), sel.get("key")))
        for k, v in value.items():
            _tls_refs(v, out, k)
    elif isinstance(value, list):
        for v in value:
            _tls_refs(v, out, key)


def _key_refs(value, out: set, key: str = "") -> None:
    """(kind, name, key) of every Secret/ConfigMap key selector in a spec."""
    if isinstance(value, dict):
        if isinstance(value.get("name"), str) and isinstance(value.get("key"), str):
            out.add(("ConfigMap" if key == "configMap" else "Secret", value["name"], value["key"]))
            return
        for k, v in value.items():
            _key_refs(v, out, k)
    elif isinstance(value, list):
        for v in value:
            _key_refs(v, out, key)


def _store(table: dict, spec: dict) -> tuple[dict, dict]:
    """Upstream's test store, plus what its TLS configs read.

    Upstream's generator tests skip the selection step that loads referenced keys (and rejects
    a ScrapeConfig whose Secret is missing), so some stores lack a key a case names; upstream's
    generator then writes "" for it. We add such keys with "" (TLS files: their key name), as
    a working cluster has them. Upstream's TLS material is placeholder bytes ("ca");
    promop checks that TLS files hold PEM, so those values are wrapped in PEM armour (the
    config only names the files)."""
    pem_refs: set = set()
    _tls_refs(spec, pem_refs)
    store = copy.deepcopy(table.get("store") or [])
    refs: set = set()
    _key_refs(spec, refs)
    for kind, name, key in sorted(refs):
        obj = next((o for o in store if o["kind"] == kind and o["name"] == name), None)
        if obj is None:
            obj = {"kind": kind, "name": name, "data": {}}
            store.append(obj)
        obj.setdefault("data", {}).setdefault(key, key if (kind, name, key) in pem_refs else "")
    secrets, configmaps = {}, {}
    for obj in store:
        data = {}
        for k, v in (obj.get("data") or {}).items():
            if (obj["kind"], obj["name"], k) in pem_refs and "-----BEGIN" not in v:
                label = "PRIVATE KEY" if "key" in k.lower() else "CERTIFICATE"
                v = f"-----BEGIN {label}-----\n{v}\n-----END {label}-----\n"
            data[k] = v
        md = {"name": obj["name"], "namespace": obj.get("namespace") or "default"}
        if obj["kind"] == "Secret":
            secrets[(md["namespace"], md["name"])] = {"metadata": md, "stringData": data}
        else:
            configmaps[(md["namespace"], md["name"])] = {"metadata": md, "data": data}
    return secrets, configmaps


def render_case(table: dict, case: dict):
    spec = copy.deepcopy(case.get("spec") or {})
    sc = {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "ScrapeConfig",
          "metadata": {"name": case.get("name") or "testscrapeconfig1", "namespace": "default"}, "spec": spec}
    secrets, configmaps = _store(table, spec)
    return generate_config(_prometheus(case), scrape_configs=[sc], secrets=secrets, configmaps=configmaps,
                           options=OPTIONS)


@pytest.mark.parametrize("table,case", CASES, ids=[f"{t['test']}-{c['golden']}" for t, c in CASES])
def test_golden(table, case):
    if not GOLDENS.is_dir():
        pytest.skip(f"upstream goldens not found at {GOLDENS} (../shared is absent)")
    deviation = DEVIATIONS.get(case["golden"])
    if deviation and deviation.get("xfail"):
        pytest.xfail(deviation["why"])
    result = render_case(table, case)
    if deviation and deviation.get("selection_rejects"):
        assert result.rejected, f"upstream's selector rejects this object: {deviation['selection_rejects']}"
        return
    assert result.rejected == []
    expected = yaml.safe_load((GOLDENS / case["golden"]).read_text())
    assert yaml.safe_load(result.text) == expected
