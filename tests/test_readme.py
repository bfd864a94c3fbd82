"""What the README shows a new user works as it says (issue 21 §7)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_demos_servicemonitor_is_shown_and_becomes_the_job_it_names(tmp_path):
    [block] = re.findall(r"```yaml\n# my-servicemonitor.yaml\n(.*?)```", README, re.S)
    assert "apply -f my-servicemonitor.yaml" in README
    (tmp_path / "my-servicemonitor.yaml").write_text(block)
    job = re.search(r"with a job `([^`]+)`", README).group(1)
    proc = subprocess.run([sys.executable, "-m", "promop", "render", "--strict", "-f",
                           str(ROOT / "examples" / "prometheus-prometheus.yaml"), "-f",
                           str(tmp_path / "my-servicemonitor.yaml"), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    config = yaml.safe_load((tmp_path / "out" / "monitoring" / "k8s" / "prometheus.yaml").read_text())
    assert [j["job_name"] for j in config["scrape_configs"]] == [job]


def test_the_readme_explains_skips_and_stays_short():
    assert "pytest -rs" in README and "../shared" in README and "amtool 0.25" in README
    assert len(README.splitlines()) <= 255
