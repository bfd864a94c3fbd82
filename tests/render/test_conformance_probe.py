"""Upstream conformance for Probe objects: every golden of upstream's pkg/prometheus that a Probe
produces, reproduced from inputs translated into testdata/conformance_probe/cases.yaml.

The goldens are read from ../shared (never copied here) and compared parsed, as YAML.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from promop.render import RenderOptions, generate_config

from .helpers import TESTDATA

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIRS = [p / "shared" / "reference" / "upstream-tests" / "pkg" / "prometheus" / "testdata"
               for p in (ROOT.parent, ROOT.parents[1])]
SPEC = yaml.safe_load((TESTDATA / "conformance_probe" / "cases.yaml").read_text())
CASES = SPEC["cases"]


def golden_dir() -> Path:
    for d in GOLDEN_DIRS:
        if d.is_dir():
            return d
    pytest.skip("../shared/reference/upstream-tests is not checked out (upstream goldens)")


def _keyed(objs, kind: str) -> dict:
    out = {}
    for o in objs or ():
        out[(o["metadata"]["namespace"], o["metadata"]["name"])] = {"kind": kind, **copy.deepcopy(o)}
    return out


def _objects(case: dict, key: str, kind: str) -> list[dict]:
    return [{"apiVersion": "monitoring.coreos.com/v1", "kind": kind, **copy.deepcopy(o)} for o in case.get(key) or ()]


def render_case(case: dict):
    prometheus = copy.deepcopy(case.get("prometheus_object") or SPEC["defaults"]["prometheus"])
    prometheus["spec"].update(copy.deepcopy(case.get("prometheus") or {}))
    options = RenderOptions(**{**SPEC["defaults"]["options"], **(case.get("options") or {})})
    return generate_config(
        prometheus,
        _objects(case, "service_monitors", "ServiceMonitor"),
        _objects(case, "pod_monitors", "PodMonitor"),
        probes=_objects(case, "probes", "Probe"),
        secrets=_keyed(case.get("secrets"), "Secret"),
        configmaps=_keyed(case.get("configmaps"), "ConfigMap"),
        options=options,
    )


@pytest.mark.parametrize("case", CASES, ids=[c["golden"] for c in CASES])
def test_probe_golden(case):
    expected = yaml.safe_load((golden_dir() / case["golden"]).read_text())
    result = render_case(case)
    assert result.rejected == []
    got = yaml.safe_load(result.text)
    assert got == result.config
    skipped = case.get("skip_jobs") or []
    if skipped:
        assert case.get("why", "").strip()
        names = [j["job_name"] for j in expected["scrape_configs"]]
        assert set(skipped) <= set(names)
        expected["scrape_configs"] = [j for j in expected["scrape_configs"] if j["job_name"] not in skipped]
    assert got == expected


def test_every_probe_golden_has_a_case():
    """Every upstream golden whose config has a probe job is translated here (or listed as orphaned)."""
    d = golden_dir()
    with_probe = {p.name for p in d.glob("*.golden") if "job_name: probe/" in p.read_text()}
    orphaned = {"monitorObjectWithDefaultScrapeClassAndFallbackScrapeProtocol.golden"}  # no upstream test writes it
    assert with_probe - orphaned == {c["golden"] for c in CASES}
