"""`promop render` and `promop explain thanosruler` on ThanosRuler objects read from files."""

from __future__ import annotations

from pathlib import Path

import yaml
from cli_runner import promop

FILES = """\
apiVersion: monitoring.coreos.com/v1
kind: ThanosRuler
metadata: {name: tr, namespace: mon}
spec:
  queryEndpoints: ["thanos-query:10902"]
  ruleSelector: {matchLabels: {role: thanos}}
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: picked, namespace: mon, labels: {role: thanos}}
spec:
  groups: [{name: g, rules: [{alert: Down, expr: "up == 0"}]}]
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: unlabelled, namespace: mon}
spec:
  groups: [{name: g, rules: [{alert: Down, expr: "up == 0"}]}]
"""




def test_render_prints_the_thanos_ruler_objects(tmp_path: Path):
    (tmp_path / "in.yaml").write_text(FILES)
    proc = promop("render", "-f", str(tmp_path / "in.yaml"))
    assert proc.returncode == 0, proc.stderr
    docs = list(yaml.safe_load_all(proc.stdout))
    by_name = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    assert ("StatefulSet", "thanos-ruler-tr") in by_name and ("Service", "thanos-ruler-operated") in by_name
    cm = by_name[("ConfigMap", "thanos-ruler-tr-rulefiles-0")]
    assert [k.split("-")[1] for k in cm["data"]] == ["picked"]


def test_render_out_writes_rule_files(tmp_path: Path):
    (tmp_path / "in.yaml").write_text(FILES)
    proc = promop("render", "-f", str(tmp_path / "in.yaml"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    base = tmp_path / "out" / "mon" / "tr"
    assert (base / "manifests.yaml").exists()
    [rule_file] = (base / "rules" / "thanos-ruler-tr-rulefiles-0").iterdir()
    assert yaml.safe_load(rule_file.read_text())["groups"][0]["rules"][0]["alert"] == "Down"


def test_refused_thanos_ruler_is_reported_in_one_line(tmp_path: Path):
    (tmp_path / "in.yaml").write_text(FILES.replace('queryEndpoints: ["thanos-query:10902"]', "retention: 1d"))
    proc = promop("render", "-f", str(tmp_path / "in.yaml"), "--strict")
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if "ThanosRuler mon/tr" in line]
    assert len(lines) == 1 and "queryEndpoints or queryConfig" in lines[0]
    assert "Traceback" not in proc.stderr


def test_explain_thanos_ruler_says_what_it_selects_and_why_not(tmp_path: Path):
    (tmp_path / "in.yaml").write_text(FILES)
    proc = promop("explain", "thanosruler", "mon/tr", "-f", str(tmp_path / "in.yaml"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "ThanosRuler mon/tr: StatefulSet thanos-ruler-tr, 1 PrometheusRules" in out
    assert "PrometheusRule mon/picked: selected; rule file" in out and "thanos-ruler-tr-rulefiles-0" in out
    assert "PrometheusRule mon/unlabelled: not selected: ruleSelector matchLabels role=thanos: label role missing" in out
    missing = promop("explain", "thanosruler", "mon/nope", "-f", str(tmp_path / "in.yaml"))
    assert missing.returncode == 2 and "not found" in missing.stdout


WEB_TLS = """\
  web:
    tlsConfig:
      cert: {configMap: {name: web-cert, key: tls.crt}}
      keySecret: {name: web-key, key: tls.key}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-cert, namespace: mon}
data: {other.crt: "not this one"}
"""


def test_render_reads_configmaps_for_the_web_tls_of_a_ruler(tmp_path: Path):
    """The ConfigMap in the files is read: its missing key refuses the ruler in one line (upstream would
    leave a pod without its certificate)."""
    text = FILES.replace("  ruleSelector: {matchLabels: {role: thanos}}\n",
                         "  ruleSelector: {matchLabels: {role: thanos}}\n" + WEB_TLS)
    (tmp_path / "in.yaml").write_text(text)
    proc = promop("render", "-f", str(tmp_path / "in.yaml"), "--strict")
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if "ThanosRuler mon/tr" in line]
    assert len(lines) == 1 and "spec.web.tlsConfig.cert.configMap" in lines[0] and "tls.crt" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    (tmp_path / "in.yaml").write_text(text.replace("other.crt", "tls.crt").replace('"not this one"', '"x"'))
    proc = promop("render", "-f", str(tmp_path / "in.yaml"), "--strict")
    assert proc.returncode != 0 and "spec.web.tlsConfig.cert: is not a PEM certificate" in proc.stderr
