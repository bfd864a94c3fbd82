"""The Go template checker agrees with Prometheus itself (promtool) on good and bad templates."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from promop.render.gotemplate import TemplateError, check_template, functions_for
from .helpers import promtool_path as promtool

GOOD = [
    "{{ $labels.x }}", "plain }} text", "{{ 1 }}", "{{ -1 }}", "{{ .Labels.foo }}",
    "{{- if gt $value 1.0 -}}a{{ else if eq 1 2 }}b{{ else }}c{{ end }}",
    "{{/* c */}}x", "{{- /* c */ -}}", "{{ range $i, $e := query \"up\" }}{{ $e.Labels.job }}{{ end }}",
    "{{ with $labels.cluster -}} on {{ . }} {{- end }}", "{{ $x := 1 }}{{ $x }}", '{{ printf "%s}}" "a" }}',
    "{{ (query \"up\" | first | value) }}", "{{ $value | humanizePercentage }}", '{{ "a" | printf "%s" }}',
    "{{ range query \"up\" }}{{ break }}{{ end }}", "{{ $externalLabels.cluster }} {{ $externalURL }}",
    "{{ $value | }}", "{{ $x = 1 }}", "{{ ($value | ) }}",  # Go's parser accepts these
]
BAD = [
    "{{ $labels.x ", "{{ }}", "{{ if true }}x", "{{ end }}", "{{ foo $value }}", "{{ $nope }}",
    '{{ (printf "a" }}', '{{ printf "a") }}', "{{ else }}", "{{ | printf }}", "{{/* x }}", "{{ $value | | humanize }}", "{{ () }}",
    '{{ printf "a }}', "{{ if }}{{ end }}", "{{ @ }}", "{{ break }}",
]


@pytest.mark.parametrize("text", GOOD)
def test_good_templates(text):
    check_template(text)


@pytest.mark.parametrize("text", BAD)
def test_bad_templates(text):
    with pytest.raises(TemplateError):
        check_template(text)


NEWER_FUNCTIONS = ["{{ now }}", "{{ toDuration 60 }}", '{{ urlQueryEscape "a b" }}']


def _accepted(text: str, functions) -> bool:
    try:
        check_template(text, functions=functions)
    except TemplateError:
        return False
    return True


@pytest.mark.prometheus
def test_promtool_agrees(tmp_path):
    """Each template alone in a rule file: promtool accepts exactly the ones we accept for its version."""
    tool = promtool()
    out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    functions = functions_for(tuple(int(x) for x in re.search(r"(\d+)\.(\d+)\.(\d+)", out).groups()))
    disagreements = []
    for i, text in enumerate(GOOD + BAD + NEWER_FUNCTIONS):
        path = tmp_path / f"r{i}.yaml"
        path.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [
            {"alert": "A", "expr": "up == 0", "annotations": {"summary": text}}]}]}))
        ok = subprocess.run([tool, "check", "rules", str(path)], capture_output=True, timeout=60).returncode == 0
        if ok != _accepted(text, functions):
            disagreements.append((text, "promtool accepts" if ok else "promtool refuses"))
    assert not disagreements
