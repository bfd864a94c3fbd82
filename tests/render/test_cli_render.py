"""`promop render` and `promop explain` as a user runs them: exit codes, messages, output.

Run in-process (tests/cli_runner.py: the same entry point as `python -m promop`, a second or more
cheaper a call); tests/test_cli_runner.py proves a real `python -m promop` process answers the same."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from cli_runner import promop

from promop.render.loader import deterministic_uid
from .helpers import promtool_path as promtool

PROMETHEUS = """
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: main, namespace: monitoring}
spec:
  version: v2.42.0
  serviceMonitorSelector: {matchLabels: {team: web}}
  serviceMonitorNamespaceSelector: {matchLabels: {monitored: "true"}}
  ruleSelector: {}
  ruleNamespaceSelector: {}
"""
NAMESPACES = """
apiVersion: v1
kind: Namespace
metadata: {name: apps, labels: {monitored: "true"}}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: Namespace
metadata: {name: monitoring}
---
apiVersion: v1
kind: Namespace
metadata: {name: default}
"""
MONITORS = """
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web, namespace: apps, labels: {team: web}}
spec:
  selector: {matchLabels: {app: web}}
  endpoints: [{port: http, interval: 15s}, {port: metrics}]
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: nolabel, namespace: apps}
spec:
  selector: {}
  endpoints: [{port: http}]
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: elsewhere, namespace: other, labels: {team: web}}
spec:
  selector: {}
  endpoints: [{port: http}]
"""
RULES = """
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: good, namespace: apps}
spec:
  groups:
  - name: good.rules
    rules:
    - alert: WebDown
      expr: up{job="web"} == 0
      for: 5m
      annotations: {summary: "{{ $labels.instance }} down"}
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: bad}
spec:
  groups:
  - name: bad.rules
    rules:
    - record: x
      expr: sum(rate(x[5m])
"""




@pytest.fixture
def inputs(tmp_path) -> Path:
    """A directory tree: nested dirs, multi-document files, a `kind: List`."""
    root = tmp_path / "in"
    (root / "monitoring" / "nested").mkdir(parents=True)
    (root / "monitoring" / "prometheus.yaml").write_text(PROMETHEUS)
    (root / "namespaces.yml").write_text(NAMESPACES)
    (root / "monitoring" / "nested" / "monitors.yaml").write_text(MONITORS)
    items = list(yaml.safe_load_all(RULES))
    (root / "rules.json").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    (root / "README.txt").write_text("not yaml: [ ignored by extension")
    return root


def test_render_to_stdout(inputs):
    (inputs / "deploy.yaml").write_text("kind: Deployment\nmetadata: {name: web, namespace: apps}\n")
    proc = promop("render", "-f", str(inputs))
    assert proc.returncode == 0, proc.stderr
    assert f"note: ignored 1 document(s) that are not inputs: Deployment apps/web in {inputs / 'deploy.yaml'}" \
        in proc.stderr
    objs = list(yaml.safe_load_all(proc.stdout))
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("ConfigMap", "prometheus-main-rulefiles-0"),
        ("Secret", "prometheus-main"),
        ("Secret", "prometheus-main-tls-assets-0"),
        ("Secret", "prometheus-main-web-config"),
        ("Service", "prometheus-operated"),
        ("StatefulSet", "prometheus-main"),
    ]
    uid = deterministic_uid("PrometheusRule", "apps", "good")
    assert list(objs[0]["data"]) == [f"apps-good-{uid}.yaml"]
    # the rejected rule is reported once, with its field, and does not stop the rest
    assert ("rejected PrometheusRule default/bad: spec.groups[0].rules[0].expr: PromQL does not parse: "
            in proc.stderr)
    assert proc.stderr.count("rejected ") == 1


def test_strict_exits_1_when_something_was_rejected(inputs):
    assert promop("render", "--strict", "-f", str(inputs)).returncode == 1
    (inputs / "rules.json").unlink()
    proc = promop("render", "--strict", "-f", str(inputs))
    assert proc.returncode == 0, proc.stderr
    assert "rejected" not in proc.stderr


def test_render_out_tree(inputs, tmp_path):
    out = tmp_path / "out"
    proc = promop("render", "-f", str(inputs / "monitoring"), "-f", str(inputs / "rules.json"),
                  "-f", str(inputs / "namespaces.yml"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    base = out / "monitoring" / "main"
    config = yaml.safe_load((base / "prometheus.yaml").read_text())
    assert config["global"]["external_labels"]["prometheus_replica"] == "$(POD_NAME)"
    assert [j["job_name"] for j in config["scrape_configs"]] == [
        "serviceMonitor/apps/web/0", "serviceMonitor/apps/web/1"]
    rule_files = sorted((base / "rules").rglob("*.yaml"))
    uid = deterministic_uid("PrometheusRule", "apps", "good")
    assert [p.relative_to(base).as_posix() for p in rule_files] == [
        f"rules/prometheus-main-rulefiles-0/apps-good-{uid}.yaml"]
    kinds = [o["kind"] for o in yaml.safe_load_all((base / "manifests.yaml").read_text())]
    assert kinds == ["ConfigMap", "Secret", "Secret", "Secret", "Service", "StatefulSet"]


@pytest.mark.prometheus
def test_rendered_rule_files_pass_promtool(inputs, tmp_path):
    out = tmp_path / "out"
    assert promop("render", "-f", str(inputs), "--out", str(out)).returncode == 0
    files = [str(p) for p in (out / "monitoring" / "main" / "rules").rglob("*.yaml")]
    proc = subprocess.run([promtool(), "check", "rules", *files], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_two_prometheus_in_one_namespace_share_the_governing_service(tmp_path):
    p2 = PROMETHEUS.replace("name: main", "name: second")
    (tmp_path / "p.yaml").write_text(PROMETHEUS + "---" + p2)
    proc = promop("render", "-f", str(tmp_path / "p.yaml"))
    assert proc.returncode == 0, proc.stderr
    services = [o for o in yaml.safe_load_all(proc.stdout) if o["kind"] == "Service"]
    assert len(services) == 1
    assert [r["name"] for r in services[0]["metadata"]["ownerReferences"]] == ["main", "second"]


def test_yaml_syntax_error_exits_2_naming_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(PROMETHEUS + "---\nkind: ServiceMonitor\nmetadata: {name: x\nspec: {}\n")
    proc = promop("render", "-f", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {bad}:")
    line = int(proc.stderr.split(":")[2])
    text_lines = bad.read_text().splitlines()
    opened = text_lines.index("metadata: {name: x") + 1
    assert line in (opened, opened + 1), proc.stderr  # the unclosed mapping, or where YAML notices it
    assert "YAML syntax error" in proc.stderr


def test_missing_file_exits_2_and_no_prometheus_exits_1(tmp_path):
    proc = promop("render", "-f", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2
    assert proc.stderr == f"error: {tmp_path / 'nope.yaml'}: no such file or directory\n"
    (tmp_path / "m.yaml").write_text(MONITORS)
    proc = promop("render", "-f", str(tmp_path / "m.yaml"))
    assert proc.returncode == 1 and "no Prometheus object found" in proc.stderr and "--lint" in proc.stderr


def test_one_bad_document_never_stops_the_others(tmp_path):
    f = tmp_path / "all.yaml"
    f.write_text(PROMETHEUS.replace("{matchLabels: {team: web}}", "{}").replace(
        "{matchLabels: {monitored: \"true\"}}", "{}") + textwrap.dedent("""
        ---
        apiVersion: monitoring.coreos.com/v1
        kind: ServiceMonitor
        metadata: {namespace: apps}
        spec: {selector: {}, endpoints: [{port: web}]}
        ---
        - not
        - a mapping
        ---
        apiVersion: monitoring.coreos.com/v1
        kind: ServiceMonitr
        metadata: {name: typo, namespace: apps}
        ---
        apiVersion: monitoring.coreos.com/v1
        kind: ServiceMonitor
        metadata: {name: fine, namespace: apps}
        spec: {selector: {}, endpoints: [{port: web}]}
        """))
    proc = promop("render", "-f", str(f))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("rejected")]
    assert lines == [
        f"rejected ServiceMonitor {f}#2: metadata.name is missing; every object needs a name",
        f"rejected document {f}#3: not a Kubernetes object: a YAML list, where a mapping with apiVersion, kind "
        "and metadata belongs",
        lines[2],
    ]
    assert lines[2].startswith(f"rejected ServiceMonitr {f}#4: unknown kind in monitoring.coreos.com/v1")
    config = next(o for o in yaml.safe_load_all(proc.stdout) if o["kind"] == "Secret" and
                  o["metadata"]["name"] == "prometheus-main")
    assert config["data"]["prometheus.yaml.gz"]
    assert promop("render", "--strict", "-f", str(f)).returncode == 1


def test_exit_1_with_reasons_when_no_prometheus_renders(tmp_path):
    (tmp_path / "p.yaml").write_text(PROMETHEUS.replace("v2.42.0", "banana") + "---\n" + PROMETHEUS.replace(
        "name: main", "name: two").replace("version: v2.42.0", "version: v2.42.0\n  scrapeInterval: 30 s"))
    proc = promop("render", "-f", str(tmp_path / "p.yaml"))
    assert proc.returncode == 1
    assert "rejected Prometheus monitoring/main: spec.version: 'banana' is not a Prometheus version" in proc.stderr
    assert "rejected Prometheus monitoring/two: spec.scrapeInterval: Invalid value: \"30 s\"" in proc.stderr
    assert "error: none of the 2 Prometheus object(s) could be rendered" in proc.stderr
    assert proc.stdout == ""


def test_out_inside_an_input_directory_is_never_read_back(inputs):
    out = inputs / "rendered"
    first = promop("render", "-f", str(inputs), "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert (out / "monitoring" / "main" / "manifests.yaml").exists()
    second = promop("render", "-f", str(inputs), "--out", str(out))
    assert second.returncode == 0, second.stderr
    assert second.stderr == first.stderr
    assert not [line for line in second.stderr.splitlines()
                if str(out) in line and not line.startswith("rendered Prometheus")]


def test_out_to_a_file_is_a_one_line_error(tmp_path, inputs):
    target = tmp_path / "file.txt"
    target.write_text("x")
    for out in (target, target / "sub"):
        proc = promop("render", "-f", str(inputs), "--out", str(out))
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(f"error: --out {out}:"), proc.stderr
        assert "Traceback" not in proc.stderr


def test_lint_checks_monitors_and_rules_without_a_prometheus(tmp_path):
    (tmp_path / "m.yaml").write_text(MONITORS + RULES.join(["---\n", ""]) + textwrap.dedent("""
        ---
        apiVersion: monitoring.coreos.com/v1
        kind: ServiceMonitor
        metadata: {name: proxied, namespace: apps}
        spec:
          selector: {}
          endpoints: [{port: web, proxyUrl: "::not a url::"}]
        ---
        apiVersion: monitoring.coreos.com/v1
        kind: ServiceMonitor
        metadata: {name: authed, namespace: apps}
        spec:
          selector: {}
          endpoints: [{port: web, bearerTokenSecret: {name: token, key: t}}]
        """))
    proc = promop("render", "--lint", "-f", str(tmp_path / "m.yaml"))
    assert proc.returncode == 1
    assert proc.stdout == ""
    rejected = sorted(line for line in proc.stderr.splitlines() if line.startswith("rejected"))
    assert rejected == [
        "rejected PrometheusRule default/bad: spec.groups[0].rules[0].expr: PromQL does not parse: "
        "unclosed left parenthesis",
        "rejected ServiceMonitor apps/proxied: spec.endpoints[0].proxyUrl: Invalid value: \"::not a url::\": "
        "should match '^(http|https|socks5)://.+$': use a URL starting with http://, https:// or socks5:// "
        "(CRD schema)",
    ]
    # a Secret that is not in the files cannot be checked: a warning, not a rejection
    assert ("warning ServiceMonitor apps/authed: spec.endpoints[0].bearerTokenSecret: not checked: "
            "Secret apps/token not found in the given files") in proc.stderr
    (tmp_path / "ok.yaml").write_text(MONITORS)
    proc = promop("render", "--lint", "-f", str(tmp_path / "ok.yaml"))
    assert proc.returncode == 0, proc.stderr


def test_explain_selected_monitor_lists_its_jobs(inputs):
    proc = promop("explain", "ServiceMonitor", "apps/web", "-f", str(inputs))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == textwrap.dedent("""\
        ServiceMonitor apps/web:
          Prometheus monitoring/main: selected; scrape jobs: serviceMonitor/apps/web/0, serviceMonitor/apps/web/1
        """)


def test_explain_says_exactly_why_not(inputs):
    proc = promop("explain", "smon", "apps/nolabel", "-f", str(inputs))
    assert proc.returncode == 1
    assert ("Prometheus monitoring/main: not selected: serviceMonitorSelector matchLabels team=web: "
            "label team missing") in proc.stdout
    proc = promop("explain", "servicemonitors", "other/elsewhere", "-f", str(inputs))
    assert proc.returncode == 1
    assert "Prometheus monitoring/main: not selected: namespace 'other' not matched by " \
           "serviceMonitorNamespaceSelector" in proc.stdout


def test_explain_rules_selected_and_rejected(inputs):
    proc = promop("explain", "promrule", "apps/good", "-f", str(inputs))
    assert proc.returncode == 0, proc.stderr
    uid = deterministic_uid("PrometheusRule", "apps", "good")
    assert (f"selected; rule file /etc/prometheus/rules/prometheus-main-rulefiles-0/apps-good-{uid}.yaml "
            f"(ConfigMap prometheus-main-rulefiles-0, key apps-good-{uid}.yaml)") in proc.stdout
    proc = promop("explain", "PrometheusRule", "bad", "-f", str(inputs))  # namespace defaults to default
    assert proc.returncode == 1
    assert "selected but rejected: spec.groups[0].rules[0].expr: PromQL does not parse:" in proc.stdout


def test_explain_input_errors(inputs):
    proc = promop("explain", "deployment", "apps/web", "-f", str(inputs))
    assert proc.returncode == 2 and "unknown kind 'deployment'" in proc.stderr
    proc = promop("explain", "pmon", "apps/web", "-f", str(inputs))
    assert proc.returncode == 2
    assert proc.stderr == "error: PodMonitor apps/web not found in the given files\n"


def test_a_prometheus_that_cannot_render_is_rejected_not_fatal(tmp_path):
    (tmp_path / "p.yaml").write_text(PROMETHEUS.replace("v2.42.0", "banana") + "---\n" +
                                     PROMETHEUS.replace("name: main", "name: ok"))
    proc = promop("render", "--strict", "-f", str(tmp_path / "p.yaml"))
    assert proc.returncode == 1
    assert "rejected Prometheus monitoring/main: spec.version: 'banana' is not a Prometheus version" in proc.stderr
    assert [o["metadata"]["name"] for o in yaml.safe_load_all(proc.stdout) if o["kind"] == "StatefulSet"] == [
        "prometheus-ok"]


def test_explain_a_prometheus_lists_every_candidate(inputs):
    proc = promop("explain", "prom", "monitoring/main", "-f", str(inputs))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "Prometheus monitoring/main: 2 scrape jobs, 1 rule files, 1 StatefulSet(s)"
    assert "  PrometheusRule default/bad: selected but rejected: spec.groups[0].rules[0].expr: PromQL does not " \
           "parse: unclosed left parenthesis" in lines
    assert "  ServiceMonitor apps/nolabel: not selected: serviceMonitorSelector matchLabels team=web: " \
           "label team missing" in lines
    assert "  ServiceMonitor apps/web: selected; scrape jobs: serviceMonitor/apps/web/0, serviceMonitor/apps/web/1" \
           in lines


def test_unreadable_file_and_yaml_errors_exit_2_for_both_commands(tmp_path):
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    for args in (("render",), ("explain", "smon", "apps/web")):
        proc = promop(*args, "-f", str(binary))
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith(f"error: {binary}: cannot read"), proc.stderr
        assert proc.stdout == ""
    bad = tmp_path / "bad.yaml"
    bad.write_text(PROMETHEUS + "  extra: [unclosed\n")
    proc = promop("explain", "smon", "apps/web", "-f", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {bad}:") and "YAML syntax error" in proc.stderr, proc.stderr
    line = int(proc.stderr.split(":")[2])
    assert line >= len(PROMETHEUS.splitlines()), proc.stderr


def _shard_rules(inputs: Path, *flags: str) -> list:
    proc = promop("render", *flags, "-f", str(inputs))
    assert proc.returncode == 0, proc.stderr
    config = next(o for o in yaml.safe_load_all(proc.stdout) if o["kind"] == "Secret"
                  and o["metadata"]["name"] == "prometheus-main")
    import base64
    import gzip
    text = gzip.decompress(base64.b64decode(config["data"]["prometheus.yaml.gz"])).decode()
    return [r for job in yaml.safe_load(text)["scrape_configs"] for r in job.get("relabel_configs", [])
            if "__tmp_current_shard" in (r.get("target_label"), *(r.get("source_labels") or ()))]


def test_feature_gates_flag_turns_upstreams_gates(inputs):
    # PrometheusShardRetentionPolicy is on by default (upstream 0.92+): the __tmp_current_shard rules
    assert _shard_rules(inputs)
    assert _shard_rules(inputs, "--feature-gates", "PrometheusShardRetentionPolicy=false") == []


@pytest.mark.parametrize("flags, words", [
    (("--feature-gates", "NoSuchGate=true"), "unknown feature gate 'NoSuchGate'"),
    (("--feature-gates", "PrometheusAgentDaemonSet=maybe"), "invalid value of PrometheusAgentDaemonSet"),
    (("--kubernetes-version", "latest"), "--kubernetes-version 'latest': not a version"),
])
def test_bad_gate_or_version_is_one_line_exit_2(inputs, flags, words):
    proc = promop("render", *flags, "-f", str(inputs))
    assert proc.returncode == 2
    assert words in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
