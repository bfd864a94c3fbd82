"""Upstream conformance for spec.otlp and spec.tracingConfig (TestOTLPConfig, TestTracingConfig) and the
refused rows of TestTSDBConfig: inputs in testdata/conformance_otlp/cases.yaml, goldens read from
../shared (skipped when absent) and compared parsed."""

from __future__ import annotations

import pytest
import yaml

from promop.render.schema_check import InvalidPrometheus

from .helpers import TESTDATA
from .test_conformance_probe import golden_dir, render_case

CASES = yaml.safe_load((TESTDATA / "conformance_otlp" / "cases.yaml").read_text())["cases"]


def _id(case: dict) -> str:
    return case.get("golden") or case["name"]


@pytest.mark.parametrize("case", [c for c in CASES if c.get("golden")], ids=_id)
def test_otlp_tracing_goldens(case):
    expected = yaml.safe_load((golden_dir() / case["golden"]).read_text())
    result = render_case(case)
    got = yaml.safe_load(result.text)
    assert got == result.config
    assert result.rejected == []
    assert got == expected
    fields = [w.field for w in result.warnings]
    if case.get("warning_field"):  # a setting dropped for the version: said so, not silently
        assert case["warning_field"] in fields
    else:
        assert not [f for f in fields if f.startswith(("spec.otlp", "spec.tracingConfig"))]


@pytest.mark.parametrize("case", [c for c in CASES if c.get("expect_error")], ids=_id)
def test_refused_as_upstream(case):
    with pytest.raises(InvalidPrometheus) as info:
        render_case(case)
    fields = [p.field for p in info.value.problems]
    assert fields == [case["error_field"]]
    assert "\n" not in str(info.value)


def test_every_otlp_and_tracing_golden_has_a_case():
    d = golden_dir()
    upstream = {p.name for p in d.glob("OTLPConfig_*.golden")} | {p.name for p in d.glob("TracingConfig_*.golden")}
    assert len(upstream) == 23
    assert upstream == {c["golden"] for c in CASES if c.get("golden")}
