"""Upstream's partial and direct-call goldens: the Kubernetes SD sections upstream gets by calling
generateK8SSDConfig directly (K8SSDConfigGeneration*, NamespaceSetCorrectlyForPodMonitor, Any_*,
IgnoreNamespaceSelectors_*), the additional Alertmanager config, and the two scrape-class TLS
goldens whose Go monitor names a Secret without a key.

Inputs in testdata/conformance_partial/cases.yaml (what each golden needs and why); goldens read
from ../shared at run time and compared parsed.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from promop.render import RenderOptions, generate_config

from .helpers import TESTDATA
from .upstream_paths import upstream_tests

SPEC = yaml.safe_load((TESTDATA / "conformance_partial" / "cases.yaml").read_text())
CASES = SPEC["cases"]
PARTIAL = [c for c in CASES if c.get("partial")]
WHOLE = [c for c in CASES if not c.get("partial")]


def golden(name: str) -> Any:
    return yaml.safe_load((upstream_tests() / "pkg" / "prometheus" / "testdata" / name).read_text())


def _objects(case: dict, key: str, kind: str) -> list[dict]:
    return [{"apiVersion": "monitoring.coreos.com/v1", "kind": kind, **copy.deepcopy(o)} for o in case.get(key) or ()]


def _secrets(case: dict) -> dict:
    return {(s["metadata"]["namespace"], s["metadata"]["name"]): {"kind": "Secret", **copy.deepcopy(s)}
            for s in case.get("secrets") or ()}


def render_case(case: dict):
    prometheus = copy.deepcopy(SPEC["defaults"]["prometheus"])
    prometheus["spec"].update(copy.deepcopy(case.get("prometheus") or {}))
    options = RenderOptions(**{**SPEC["defaults"]["options"], **(case.get("options") or {})})
    return generate_config(prometheus, _objects(case, "service_monitors", "ServiceMonitor"),
                           _objects(case, "pod_monitors", "PodMonitor"), secrets=_secrets(case), options=options)


def _substituted(node: Any, subs: dict[str, str]) -> Any:
    """The golden with whole scalar values replaced as the case documents (nothing else touched)."""
    if isinstance(node, dict):
        return {k: _substituted(v, subs) for k, v in node.items()}
    if isinstance(node, list):
        return [_substituted(v, subs) for v in node]
    return subs.get(node, node) if isinstance(node, str) else node


@pytest.mark.parametrize("case", PARTIAL, ids=[c["golden"] for c in PARTIAL])
def test_kubernetes_sd_section(case):
    expected = golden(case["golden"])
    [expected_job] = expected["scrape_configs"]
    assert expected_job["job_name"] == "k8s-sd-test" and set(expected_job) == {"job_name", "kubernetes_sd_configs"}
    result = render_case(case)
    assert result.rejected == []
    [job] = result.config["scrape_configs"]
    assert job["kubernetes_sd_configs"] == expected_job["kubernetes_sd_configs"]


@pytest.mark.parametrize("case", WHOLE, ids=[c["golden"] for c in WHOLE])
def test_whole_config(case):
    expected = golden(case["golden"])
    subs = case.get("golden_substitutions") or {}
    if subs:
        assert all(k in yaml.safe_dump(expected) for k in subs), "a substitution no longer applies to the golden"
        expected = _substituted(expected, subs)
    result = render_case(case)
    assert result.rejected == []
    assert yaml.safe_load(result.text) == result.config
    assert result.config == expected


@pytest.mark.parametrize("case", [c for c in CASES if c.get("missing_key")], ids=lambda c: c["golden"])
def test_selector_without_key_is_rejected_as_upstreams_operator_does(case):
    """The literal Go input (a cert Secret selector with no key) cannot load its key: the monitor is rejected."""
    literal = copy.deepcopy(case)
    for monitor in literal.get("service_monitors") or literal.get("pod_monitors"):
        endpoints = monitor["spec"].get("endpoints") or monitor["spec"]["podMetricsEndpoints"]
        endpoints[0]["tlsConfig"]["cert"]["secret"]["key"] = ""
    result = render_case(literal)
    assert [p.field for p in result.rejected] and all("tlsConfig.cert" in p.field for p in result.rejected)
    assert result.config["scrape_configs"] == []


def test_additional_alertmanagers_come_after_the_generated_ones():
    """A mutation check on the whole-config case: dropping the extra config must be noticed."""
    case = next(c for c in WHOLE if c["golden"] == "TestAdditionalAlertmanagers_Expected.golden")
    broken = copy.deepcopy(case)
    broken["secrets"][0]["stringData"]["config.yaml"] = "[]"
    assert render_case(broken).config != golden(case["golden"])


def test_every_partial_golden_is_translated():
    """Every golden upstream writes from generateK8SSDConfig (its jobs are all named k8s-sd-test)."""
    testdata = upstream_tests() / "pkg" / "prometheus" / "testdata"
    partial = {p.name for p in testdata.glob("*.golden") if "job_name: k8s-sd-test" in p.read_text()}
    translated_elsewhere = {"namespaces_from_MatchNames_are_returned_instead_of_the_current_namespace.golden"}
    stale = {"K8SSDConfigGenerationBearerToken.golden"}  # no upstream 0.93 test writes it
    assert partial - translated_elsewhere - stale == {c["golden"] for c in PARTIAL}
