"""The 39 upstream goldens (../shared/conformance/alertmanager), compared as parsed YAML, and amtool on each."""

from __future__ import annotations

import pytest
import yaml

from promop.render.alertmanager.common import Version

from .helpers import CONFORMANCE, SHARED_CANDIDATES, amtool_check, build_from_docs, cases, load_docs

CASES = cases()


def test_all_cases_present():
    assert len(CASES) == 39


def test_copy_matches_shared():
    """Our copy of the goldens is the shared one, byte for byte (when ../shared is there)."""
    shared = next((p for p in SHARED_CANDIDATES if p.exists()), None)
    if shared is None:
        pytest.skip("../shared is not checked out")
    names = sorted(p.name for p in shared.iterdir())
    assert names == sorted(p.name for p in CONFORMANCE.iterdir())
    for name in names:
        assert (CONFORMANCE / name).read_bytes() == (shared / name).read_bytes(), name


@pytest.mark.parametrize("case", CASES)
def test_golden(case):
    docs = load_docs(CONFORMANCE / f"{case}.input.yaml")
    result = build_from_docs(docs)
    assert result.fatal is None, str(result.fatal)
    assert result.rejected == []
    expected = yaml.safe_load((CONFORMANCE / f"{case}.golden").read_text())
    assert yaml.safe_load(result.text) == expected


@pytest.mark.parametrize("case", CASES)
def test_amtool_accepts_output(case, tmp_path):
    """Every output rendered for a version amtool 0.25 knows passes `amtool check-config`."""
    docs = load_docs(CONFORMANCE / f"{case}.input.yaml")
    am = next(d for d in docs if d["kind"] == "Alertmanager")
    if Version(am["spec"]["version"]) > Version("v0.25.0"):
        pytest.skip(f"rendered for {am['spec']['version']}, newer than amtool 0.25")
    result = build_from_docs(docs)
    proc = amtool_check(result.text, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
