"""`promop demo` from an installed wheel, as a user meets it: the wheel built from this checkout,
installed in a fresh venv outside the checkout, finds its CRDs and examples (package data)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv

import pytest
from wheel_build import checkout_wheel


@pytest.mark.slow
def test_demo_once_from_an_installed_wheel(tmp_path, tmp_path_factory):
    built = checkout_wheel(tmp_path_factory)  # shared with test_shipped_scenarios: one build per test run
    assert built.wheel is not None, built.output
    wheel = built.wheel
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "promop/_shipped/crds/monitoring.coreos.com_servicemonitors.yaml" in names
    assert "promop/_shipped/examples/prometheus-prometheus.yaml" in names

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    # when this interpreter is itself a virtualenv (as .ci/run's for 3.12 and 3.13), its dependencies are not
    # in the system site-packages: list its site-packages in the new venv (a path, not a site dir, so an
    # editable install of the checkout there is not activated)
    import site

    [new_site] = list((env_dir / "lib").glob("python*/site-packages"))
    (new_site / "zz-test-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    # the venv has no pip of its own: the machine's pip installs into it (dependencies come from system site-packages)
    # --ignore-installed: the venv sees this checkout's own (editable) promop 0.1.0 through the system
    # site-packages, and pip could take that as "already satisfied" and install nothing
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--ignore-installed",
                    str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run([python, "-c", "import promop.packaged as p; print(p.__file__); print(p.crds_dir())"],
                           cwd=run_dir, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert where[0].startswith(str(env_dir)), f"promop was not imported from the wheel: {where}"
    assert where[1].startswith(str(env_dir)), where
    proc = subprocess.run([str(env_dir / "bin" / "promop"), "demo", "--once", "--output-dir", str(tmp_path / "out")],
                          cwd=run_dir, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "installed 4 CRDs" in proc.stdout or re.search(r"installed \d+ CRDs", proc.stdout), proc.stdout
    assert re.search(r"ServiceMonitors\s+selected\s+\d+", proc.stdout), proc.stdout
    assert str(env_dir) in proc.stdout  # it says where the CRDs and examples came from
    assert (tmp_path / "out" / "monitoring_k8s_prometheus.yaml").read_text().startswith("global:")
