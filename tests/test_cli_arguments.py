"""Arguments a new user got wrong and was not told (issue 21 §7): each ends in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import promop as run_promop

ROOT = Path(__file__).resolve().parents[1]


def promop(*args: str):
    """In-process (tests/cli_runner.py); tests/test_cli.py and test_cli_runner.py run real processes."""
    return run_promop(*args, cwd=ROOT)


@pytest.mark.parametrize("speed", ["-3", "0", "inf", "nan"])
def test_demo_refuses_a_speed_that_is_not_positive(speed):
    proc = promop("demo", "autoscaling", "--speed", speed, "--once")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"promop demo: --speed {speed}: must be above 0"), line


@pytest.mark.parametrize("content", ["", "---\n", "# only a comment\n",
                                     "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: x}\n"])
def test_render_lint_of_nothing_says_so(tmp_path, content):
    path = tmp_path / "empty.yaml"
    path.write_text(content)
    proc = promop("render", "--lint", "-f", str(path))
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    [line] = [l for l in proc.stderr.strip().splitlines() if not l.startswith("note: ignored")]
    assert line.startswith(f"error: nothing to lint in {path}: no Prometheus, monitor, rule or Alertmanager"), line


def test_render_lint_of_a_monitor_still_passes(tmp_path):
    path = tmp_path / "sm.yaml"
    path.write_text("apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: m, namespace: a}\n"
                    "spec: {selector: {}, endpoints: [{port: web}]}\n")
    proc = promop("render", "--lint", "-f", str(path))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
