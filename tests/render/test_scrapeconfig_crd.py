"""crds/monitoring.coreos.com_scrapeconfigs.yaml: upstream 0.93's schema, small enough for kubectl apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FILE = "monitoring.coreos.com_scrapeconfigs.yaml"
LIMIT = 256 * 1024


def _upstream() -> dict:
    for base in (ROOT.parent, ROOT.parents[1]):
        path = base / "shared" / "reference" / "upstream-crds" / FILE
        if path.exists():
            return yaml.safe_load(path.read_text())
    pytest.skip("../shared/reference/upstream-crds is not present")


def _ours() -> dict:
    return yaml.safe_load((ROOT / "crds" / FILE).read_text())


def _without_descriptions(node):
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


def test_small_enough_for_client_side_apply():
    text = (ROOT / "crds" / FILE).read_text()
    assert len(text.encode()) < LIMIT
    assert len(json.dumps(yaml.safe_load(text), separators=(",", ":")).encode()) < LIMIT


def test_same_names_versions_and_schema_as_upstream():
    mine, theirs = _ours(), _upstream()
    assert mine["metadata"]["name"] == "scrapeconfigs.monitoring.coreos.com"
    assert mine["spec"]["names"] == theirs["spec"]["names"]
    assert mine["spec"]["names"]["kind"] == "ScrapeConfig"
    assert [(v["name"], v["served"], v["storage"]) for v in mine["spec"]["versions"]] == [("v1alpha1", True, True)]
    for a, b in zip(mine["spec"]["versions"], theirs["spec"]["versions"], strict=True):
        assert a.get("subresources") == b.get("subresources")
        # every field, type, pattern, enum, default, list/map marker and CEL rule: only descriptions are trimmed
        assert _without_descriptions(a["schema"]) == _without_descriptions(b["schema"])
