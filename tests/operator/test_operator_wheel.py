"""`promop demo` from an installed wheel, as a user meets it: the wheel built from this checkout,
installed in a fresh venv outside the checkout, finds its CRDs and examples (package data)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv

import pytest
from operator_testlib import ROOT


@pytest.mark.slow
def test_demo_once_from_an_installed_wheel(tmp_path):
    dist = tmp_path / "dist"
    # a copy of the checkout, so the build's own files (build/, *.egg-info) never land in the tree under test
    src = tmp_path / "src"
    import shutil

    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                                             ".pytest_cache", ".hypothesis", "tests", "bench"))
    # without build isolation when the machine can build wheels itself (nothing downloaded); otherwise pip
    # fetches the build backend pyproject.toml names, as it would for any user
    import importlib.util

    isolation = [] if importlib.util.find_spec("wheel") is None else ["--no-build-isolation"]
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(dist),
                            str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = list(dist.glob("promop-*.whl"))
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
