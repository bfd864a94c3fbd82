"""Upstream conformance: each golden config from prometheus-operator, reproduced from its inputs.

Compared parsed (YAML semantics), as the shared README asks. Deliberate
differences must be listed in testdata/conformance/deviations.yaml.
"""

from __future__ import annotations

import pytest
import yaml

from promop.render import RenderOptions, generate_config

from .helpers import TESTDATA

CONFORMANCE = TESTDATA / "conformance"
SPEC = yaml.safe_load((CONFORMANCE / "cases.yaml").read_text())
DEVIATIONS = yaml.safe_load((CONFORMANCE / "deviations.yaml").read_text())["deviations"] or []


def _secrets(case: dict) -> dict:
    out = {}
    for s in case.get("secrets") or ():
        obj = {"metadata": s["metadata"], "stringData": dict(s.get("stringData") or {})}
        for key, filename in (s.get("stringDataFiles") or {}).items():
            obj["stringData"][key] = (CONFORMANCE / filename).read_text()
        out[(s["metadata"]["namespace"], s["metadata"]["name"])] = obj
    return out


def _monitors(case: dict) -> list[dict]:
    return [{"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", **sm} for sm in case.get("service_monitors") or ()]


def _render(case: dict):
    options = RenderOptions(**{**SPEC["defaults"]["options"], **(case.get("options") or {})})
    prometheus = case.get("prometheus") or SPEC["defaults"]["prometheus"]
    return generate_config(prometheus, _monitors(case), secrets=_secrets(case), options=options)


@pytest.mark.parametrize("case", SPEC["cases"], ids=[c["golden"] for c in SPEC["cases"]])
def test_golden(case):
    result = _render(case)
    assert result.rejected == []
    expected = yaml.safe_load((CONFORMANCE / case["golden"]).read_text())
    got = yaml.safe_load(result.text)
    assert got == result.config  # the text is the dict, exactly
    if case.get("partial") == "kubernetes_sd_configs":
        got = {"scrape_configs": [{"job_name": "k8s-sd-test",
                                   "kubernetes_sd_configs": got["scrape_configs"][0]["kubernetes_sd_configs"]}]}
    for deviation in DEVIATIONS:
        if deviation["golden"] == case["golden"]:
            assert deviation["why"].strip()
            for path in deviation["delete"]:
                *parents, last = path.split(".")
                node = expected
                for key in parents:
                    node = node[key]
                del node[last]
    assert got == expected


def test_deviation_reasons_hold():
    """The one deviation: Prometheus 2.45 really refuses the label upstream emits; we warn instead."""
    case = next(c for c in SPEC["cases"] if c["golden"].startswith("external_label"))
    result = _render(case)
    assert any(w.field == "spec.externalLabels.some-other-key" for w in result.warnings)
    assert [d["golden"] for d in DEVIATIONS] == [case["golden"]]


def test_every_golden_has_a_case():
    goldens = {p.name for p in CONFORMANCE.glob("*.golden")}
    assert goldens == {c["golden"] for c in SPEC["cases"]}


def test_job_key_order_matches_upstream():
    """Not required for semantics, but keeps diffs against upstream configs readable."""
    case = next(c for c in SPEC["cases"] if c["golden"] == "NoEnforcedNamespaceLabelServiceMonitor_Expected.golden")
    expected = yaml.safe_load((CONFORMANCE / case["golden"]).read_text())
    got = yaml.safe_load(_render(case).text)
    assert list(got) == list(expected)
    assert list(got["scrape_configs"][0]) == list(expected["scrape_configs"][0])
    for g, e in zip(got["scrape_configs"][0]["relabel_configs"], expected["scrape_configs"][0]["relabel_configs"]):
        assert list(g) == list(e)
