"""Upstream conformance beyond tests/render/testdata/conformance: more pkg/prometheus goldens
(ServiceMonitor/PodMonitor features), inputs in testdata/conformance_more/cases.yaml, goldens read
from ../shared and compared parsed. Cases marked `differs` must still differ (see docs/probe.md)."""

from __future__ import annotations

import pytest
import yaml

from promop.render.schema_check import InvalidPrometheus

from .helpers import TESTDATA
from .test_conformance_probe import golden_dir, render_case

CASES = yaml.safe_load((TESTDATA / "conformance_more" / "cases.yaml").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["golden"] for c in CASES])
def test_more_goldens(case):
    expected = yaml.safe_load((golden_dir() / case["golden"]).read_text())
    if case.get("expect_error"):
        assert expected is None  # upstream's golden is empty: it refuses to generate
        if case.get("differs"):  # promop generates, leaving out the field with a warning naming it
            assert case["warning_field"] in [w.field for w in render_case(case).warnings]
            return
        with pytest.raises(InvalidPrometheus):
            render_case(case)
        return
    result = render_case(case)
    got = yaml.safe_load(result.text)
    if case.get("differs"):
        assert got != expected, "this golden now matches: drop its `differs` and the entry in docs/probe.md"
        return
    assert result.rejected == []
    assert got == expected
