"""The README's `promop render` / `promop explain` walkthrough, run exactly as written, and its
output checked by promtool in the layout the StatefulSet mounts.

Debian's promtool is 2.42: it has no kubernetes_sd (helpers.without_kubernetes_sd checks those
blocks against 2.42's schema, then swaps them for DNS SD) and does not know keys newer than
2.42. examples/ asks for Prometheus 3.13.2, whose config has exactly one such key,
`storage.tsdb.retention` (>= 3.11); the test asserts it is the only one it strips. A second
test renders the same files for v2.42.0, where nothing but the SD block is swapped.
"""

from __future__ import annotations

import base64
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cli_runner import promop

from .helpers import _walk_files, promtool_path, without_kubernetes_sd

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
README = REPO / "docs" / "render.md"  # the walkthrough moved from README.md (issue 12 §6)


def _env(bin_dir: Path) -> dict:
    """PATH with a `promop` that is this checkout run by this interpreter, however it was installed."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "promop"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m promop "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(REPO)
    return env


def _readme_section() -> str:
    text = README.read_text()
    start, end = text.index("<!-- BEGIN render-cli -->"), text.index("<!-- END render-cli -->")
    return text[start:end]


def _readme_commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", _readme_section(), re.S)
    assert block, "the render-cli section has no ```sh example"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _readme_stderr_block() -> list[str]:
    """The first plain ``` block: what `promop render -f examples/` prints on stderr."""
    block = re.search(r"```\n((?:note:|rejected) .*?)```", _readme_section(), re.S)
    assert block, "the render-cli section shows no stderr example"
    return block.group(1).splitlines()


@pytest.fixture
def clone(tmp_path) -> Path:
    """A working directory that looks like a clone: examples/ as in the repository."""
    work = tmp_path / "clone"
    work.mkdir()
    (work / "examples").symlink_to(EXAMPLES)
    return work


def _mounted(out: Path, root: Path, namespace: str = "monitoring", name: str = "k8s",
             strip_newer_than_242: bool = False) -> Path:
    """Lay out `promop render --out` output as the StatefulSet mounts it; returns the config path."""
    base = out / namespace / name
    etc = root / "etc" / "prometheus"
    for rule_file in (base / "rules").rglob("*.yaml"):
        target = etc / "rules" / rule_file.relative_to(base / "rules")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(rule_file.read_bytes())
    certs = etc / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    for obj in yaml.safe_load_all((base / "manifests.yaml").read_text()):
        if obj["kind"] == "Secret" and "-tls-assets-" in obj["metadata"]["name"]:
            for key, value in (obj.get("data") or {}).items():
                (certs / key).write_bytes(base64.b64decode(value))
    text = (base / "prometheus.yaml").read_text().replace("$(POD_NAME)", f"prometheus-{name}-0")
    text = text.replace("$(SHARD)", "0")
    config = yaml.safe_load(text)
    if strip_newer_than_242:
        tsdb = config["storage"]["tsdb"]
        assert set(config["storage"]) == {"tsdb"} and set(tsdb) == {"retention"}, config["storage"]
        del config["storage"]
        text = yaml.safe_dump(config, sort_keys=False)
    files: set[str] = set()
    _walk_files(config, files)
    for f in files:  # the service account token and CA, as Kubernetes mounts them
        assert not f.startswith("/etc/prometheus/certs/") or (certs / Path(f).name).exists(), f
        if not f.startswith("/etc/prometheus/"):
            (root / f.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (root / f.lstrip("/")).touch()
    text = text.replace("/etc/prometheus/", f"{etc}/").replace(" /var/", f" {root}/var/")
    path = etc / "config_out" / "prometheus.env.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(without_kubernetes_sd(text))
    return path


def _promtool_ok(*args: str) -> str:
    proc = subprocess.run([promtool_path(), *args], capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    # kube-prometheus defines one recording rule four times: promtool lints it, not fatal
    assert out.count("FAILED") <= 1 and ("FAILED" not in out or "duplicate rule" in out), out
    return out


@pytest.mark.prometheus
def test_readme_walkthrough_runs_as_written(clone):
    commands = _readme_commands()
    assert any(c.startswith("promop render -f examples/ --out out/") for c in commands), commands
    results = {}
    for command in commands:
        proc = subprocess.run(command, shell=True, cwd=clone, env=_env(clone.parent / "bin"), capture_output=True, text=True, timeout=180)
        results[command] = proc
        # explain exits 1 for the deliberately broken example (the README's exit-code table says so)
        expected = 1 if "broken-example" in command else 0
        assert proc.returncode == expected, (command, proc.stdout, proc.stderr)
    render = results["promop render -f examples/ > rendered.yaml"]
    assert render.stderr.splitlines() == _readme_stderr_block()
    kinds = [d["kind"] for d in yaml.safe_load_all((clone / "rendered.yaml").read_text())]
    # Prometheus monitoring/k8s and the kube-prometheus Alertmanager monitoring/main
    assert kinds.count("StatefulSet") == 2 and "ConfigMap" in kinds
    explained = results["promop explain smon monitoring/broken-example -f examples/"].stdout
    assert explained in _readme_section(), explained
    assert "scrape jobs: serviceMonitor/monitoring/node-exporter/0" in \
        results["promop explain servicemonitor monitoring/node-exporter -f examples/"].stdout
    # the rendered config itself, as mounted, passes promtool (with every rule file)
    out = _promtool_ok("check", "config", str(_mounted(clone / "out", clone / "root", strip_newer_than_242=True)))
    assert out.count("/rules/prometheus-k8s-rulefiles-0/") == 8, out


@pytest.mark.prometheus
def test_examples_rendered_for_promtools_version_pass_check_config(tmp_path):
    src = tmp_path / "examples"
    src.mkdir()
    for f in EXAMPLES.glob("*.yaml"):
        text = f.read_text()
        if f.name == "prometheus-prometheus.yaml":
            assert "\n  version: 3.13.2\n" in text
            text = text.replace("\n  version: 3.13.2\n", "\n  version: 2.42.0\n")
        (src / f.name).write_text(text)
    out = tmp_path / "out"
    proc = promop("render", "-f", str(src), "--out", str(out))  # in-process; the walkthrough runs the real one
    assert proc.returncode == 0, proc.stderr
    assert "rejected ServiceMonitor monitoring/broken-example: spec.endpoints[0].scrapeTimeout:" in proc.stderr
    assert "storage" not in yaml.safe_load((out / "monitoring" / "k8s" / "prometheus.yaml").read_text())
    checked = _promtool_ok("check", "config", str(_mounted(out, tmp_path / "root")))
    assert checked.count("/rules/prometheus-k8s-rulefiles-0/") == 8, checked
    rule_files = sorted(str(p) for p in (out / "monitoring" / "k8s" / "rules").rglob("*.yaml"))
    assert len(rule_files) == 8
    _promtool_ok("check", "rules", *rule_files)


def test_readme_commands_are_what_the_test_runs():
    """Guard: the walkthrough test parses the README; a reworded block must still be found."""
    assert [shlex.split(c)[0] for c in _readme_commands()] == ["promop", "promop", "promtool", "promop", "promop"]
