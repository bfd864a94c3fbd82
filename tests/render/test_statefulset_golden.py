"""Our own goldens for the StatefulSets, the governing Service and the rule ConfigMaps.

Compared parsed (semantically). Regenerate only on purpose:
    PROMOP_UPDATE_GOLDEN=1 python3 -m pytest tests/render/test_statefulset_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from promop.render.model import RenderOptions
from promop.render.rules import build_rule_configmaps
from promop.render.service import build_service
from promop.render.statefulset import build_statefulsets, compute_input_hash

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("PROMOP_UPDATE_GOLDEN") == "1"
OPTIONS = RenderOptions(config_reloader_image="ghcr.io/promop/promop:golden", labels={"env": "test"})


class _Dumper(yaml.SafeDumper):
    """Readable goldens: multi-line strings (rule files) as literal blocks."""


_Dumper.add_representer(str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))


def _inputs() -> tuple[dict, list[dict]]:
    docs = list(yaml.safe_load_all((GOLDEN / "input-prometheus.yaml").read_text()))
    return docs[0], docs[1:]


def _rendered() -> dict[str, list[dict]]:
    prometheus, rules = _inputs()
    rules_result = build_rule_configmaps(prometheus, rules, OPTIONS)
    assert not rules_result.rejected
    tls = ["prometheus-main-tls-assets-0"]
    input_hash = compute_input_hash(prometheus, OPTIONS, rules_result.names, tls)
    return {
        "statefulsets.yaml": build_statefulsets(prometheus, OPTIONS, rules_result.names, tls, input_hash),
        "service.yaml": [build_service(prometheus, OPTIONS)],
        "rule-configmaps.yaml": rules_result.configmaps,
    }


@pytest.mark.parametrize("name", ["statefulsets.yaml", "service.yaml", "rule-configmaps.yaml"])
def test_golden(name):
    got = _rendered()[name]
    path = GOLDEN / name
    if UPDATE:
        path.write_text(yaml.dump_all(got, Dumper=_Dumper, sort_keys=False, width=1 << 20))
    assert path.exists(), f"{path} missing: run with PROMOP_UPDATE_GOLDEN=1 to create it"
    want = list(yaml.safe_load_all(path.read_text()))
    assert got == want, f"{name} differs from its golden; if intended, regenerate with PROMOP_UPDATE_GOLDEN=1"
