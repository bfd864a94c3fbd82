"""Every benchmark still runs: each `python3 -m bench.<name>` at a tiny size, end to end.

The figures are not judged here (performance lives in bench/, and a loaded CI machine at these
sizes proves nothing): a benchmark passes when it finishes with its report, exit 0 (targets met)
or 1 (a target missed), and no traceback. A bench that rots (the sandbox grew stricter, an API it
drives changed) fails here instead of on the day someone measures.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEEDS_PROMETHEUS = {"adapter", "propagation"}
NEEDS_KUBE_KIT = {"scale", "keda"}  # a real control plane from ../shared/kube: run in the real-cluster tier

BENCHES = {
    "autoscale": ["--decisions", "200", "--memhpas", "5"],
    "adapter": ["--series", "500", "--repeats", "1", "--requests", "10", "--pods", "10", "--warmup", "3",
                "--idle-seconds", "0.2", "--round-trips", "5"],
    "recommender": ["--containers", "20", "--days", "2", "--rounds", "1"],
    "alertmanager": ["--repeat", "1", "--edits", "2", "--configs", "20"],
    "operator": ["--monitors", "20", "--changes", "3", "--secrets", "50", "--feedback-monitors", "30",
                 "--edits", "2", "--latency-ms", "1"],
    "propagation": ["--monitors", "10", "--changes", "2"],
    "informer": ["--objects", "200", "--repeats", "1"],
    "workqueue": ["--items", "1000", "--rounds", "1"],
    "sandbox": ["--objects", "200", "--rounds", "1", "--page", "50"],
    "render": ["--repeat", "1", "--monitors", "50", "--rules", "25", "--cli-repeat", "1"],
    "scale": ["--quick"],
    "scale.edit_render": ["--monitors", "50", "100", "--edits", "2"],  # in process: no control plane
    "reloader_startup": ["--repeats", "1"],
    "keda": ["--quick", "--objects", "40", "--queries", "8", "--namespaces", "2", "--window", "6"],
}
# bench.reloader has no size options (about 40 s on a quiet machine): not run here.


def _kube_kit() -> bool:
    env = os.environ.get("PROMOP_KUBE_KIT")
    return any((Path(p) / "start.sh").exists() for p in ([env] if env else []) + [str(ROOT.parent / "shared" / "kube"),
                                                                               "/work/shared/kube"])


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.real_apiserver] if name in NEEDS_KUBE_KIT else [])
                                  for name in sorted(BENCHES)])
def test_bench_runs(name: str) -> None:
    if name in NEEDS_PROMETHEUS and not shutil.which("prometheus"):
        pytest.skip("prometheus is not installed")
    if name in NEEDS_KUBE_KIT:
        if os.environ.get("PROMOP_REAL_TIER") != "1":
            pytest.skip("needs the real control plane: runs in the real-cluster tier (PROMOP_REAL_TIER=1)")
        if not _kube_kit():
            pytest.fail("PROMOP_REAL_TIER=1 but the kube kit (../shared/kube) is not here")
    proc = subprocess.run([sys.executable, "-m", f"bench.{name}", *BENCHES[name]], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output[-4000:]
    assert proc.returncode in (0, 1), output[-4000:]
    assert proc.stdout.strip(), f"bench.{name} printed no report:\n{output[-4000:]}"
