"""`promop render` / `promop explain` on Alertmanager objects; the goldens through the CLI path."""

from __future__ import annotations

import base64
import gzip

import pytest
import yaml
from cli_runner import promop

from promop.cli import main

from .helpers import CONFORMANCE, ROOT, cases


@pytest.mark.parametrize("case", cases())
def test_render_cli_writes_the_golden(case, tmp_path, capsys):
    inp = CONFORMANCE / f"{case}.input.yaml"
    am = next(d for d in yaml.safe_load_all(inp.read_text()) if d and d["kind"] == "Alertmanager")
    assert main(["render", "-f", str(inp), "--out", str(tmp_path), "--strict"]) == 0
    base = tmp_path / am["metadata"]["namespace"] / am["metadata"]["name"]
    expected = yaml.safe_load((CONFORMANCE / f"{case}.golden").read_text())
    assert yaml.safe_load((base / "alertmanager.yaml").read_text()) == expected
    objects = list(yaml.safe_load_all((base / "manifests.yaml").read_text()))
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objects]
    name = am["metadata"]["name"]
    assert ("Secret", f"alertmanager-{name}-generated") in kinds
    assert ("StatefulSet", f"alertmanager-{name}") in kinds and ("Service", "alertmanager-operated") in kinds
    generated = next(o for o in objects if o["metadata"]["name"] == f"alertmanager-{name}-generated")
    text = gzip.decompress(base64.b64decode(generated["data"]["alertmanager.yaml.gz"])).decode()
    assert yaml.safe_load(text) == expected


def test_render_cli_reports_rejections_and_strict_exit(tmp_path):
    objs = [
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager", "metadata": {"name": "m", "namespace": "ns"},
         "spec": {"version": "v0.25.0", "alertmanagerConfigSelector": {}}},
        {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "AlertmanagerConfig",
         "metadata": {"name": "bad", "namespace": "ns"},
         "spec": {"route": {"receiver": "missing"}, "receivers": [{"name": "r"}]}},
        {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "AlertmanagerConfig",
         "metadata": {"name": "good", "namespace": "ns"}, "spec": {"route": {"receiver": "r"}, "receivers": [{"name": "r"}]}},
    ]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    proc = promop("render", "-f", str(path), "--strict", cwd=ROOT)
    assert proc.returncode == 1
    assert "rejected AlertmanagerConfig ns/bad: spec.route.receiver: receiver 'missing' is not defined" in proc.stderr
    docs = list(yaml.safe_load_all(proc.stdout))
    generated = next(d for d in docs if d["metadata"]["name"] == "alertmanager-m-generated")
    text = gzip.decompress(base64.b64decode(generated["data"]["alertmanager.yaml.gz"])).decode()
    assert "ns/good/r" in text and "ns/bad/" not in text
    explain = promop("explain", "amcfg", "ns/bad", "-f", str(path), cwd=ROOT)
    assert explain.returncode == 1
    assert "selected but rejected: spec.route.receiver" in explain.stdout


def test_explain_alertmanager_lists_every_candidate(tmp_path, capsys):
    inp = CONFORMANCE / "skeleton_base_multiple_alertmanagerconfigs.input.yaml"
    assert main(["explain", "alertmanager", "alertmanager-namespace/main", "-f", str(inp)]) == 0
    out = capsys.readouterr().out
    for who in ("ns1/amc1", "ns1/amc2", "ns2/amc1"):
        assert f"AlertmanagerConfig {who}: selected" in out
