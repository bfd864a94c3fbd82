"""crds/monitoring.coreos.com_prometheusagents.yaml: upstream's CRD, trimmed like the Prometheus one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from .agent_helpers import shared_reference

CRD = Path(__file__).resolve().parents[2] / "crds" / "monitoring.coreos.com_prometheusagents.yaml"


def _load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _upstream() -> dict:
    return _load(shared_reference() / "upstream-crds" / CRD.name)


def test_small_enough_for_client_side_apply():
    assert len(CRD.read_bytes()) < 256 * 1024


def test_names_versions_and_subresources_match_upstream():
    mine, theirs = _load(CRD), _upstream()
    assert mine["spec"]["names"] == theirs["spec"]["names"]
    assert mine["spec"]["group"] == theirs["spec"]["group"] == "monitoring.coreos.com"
    for m, t in zip(mine["spec"]["versions"], theirs["spec"]["versions"], strict=True):
        assert (m["name"], m["served"], m["storage"]) == (t["name"], t["served"], t["storage"]) == ("v1alpha1", True, True)
        assert m.get("subresources") == t.get("subresources")
        assert m.get("additionalPrinterColumns") == t.get("additionalPrinterColumns")


def _spec(crd: dict) -> dict:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


def test_daemonset_rules_and_every_spec_field_kept():
    mine, theirs = _spec(_load(CRD)), _spec(_upstream())
    assert mine.get("x-kubernetes-validations") == theirs.get("x-kubernetes-validations")
    assert any("mode is DaemonSet" in r["message"] for r in mine["x-kubernetes-validations"])
    assert set(mine["properties"]) == set(theirs["properties"])
    assert mine["properties"]["mode"]["enum"] == theirs["properties"]["mode"]["enum"]


@pytest.mark.parametrize("field", ["remoteWrite", "podMonitorSelector", "tsdb", "scrapeInterval", "shards"])
def test_fields_promop_reads_keep_their_schema(field):
    mine = _spec(_load(CRD))["properties"][field]
    assert "x-kubernetes-preserve-unknown-fields" not in mine
