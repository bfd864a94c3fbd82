"""`promop run --manage-crds` facing a CRD the apiserver refuses: one line naming the CRD and the
field, a non-zero exit, no traceback; and the other CRDs are still installed."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap

import pytest
import yaml
from operator_testlib import ROOT, scaled

from promop.errors import UserError
from promop.kube.client import KubeClient
from promop.kube.resources import CRDS
from promop.operator.install import CrdRefused, install_crds
from promop.sandbox import Sandbox

FIELD = ("spec.validation.openAPIV3Schema.properties[spec].properties[hostAliases].x-kubernetes-list-map-keys: "
         "Required value: must not be empty if x-kubernetes-list-type is map")


def broken_crd_dir(tmp_path):
    """The Alertmanager CRD as shipped before the fix (hostAliases without list-map keys), next to
    a valid ServiceMonitor CRD."""
    crds = tmp_path / "crds"
    crds.mkdir()
    am = yaml.safe_load((ROOT / "crds" / "monitoring.coreos.com_alertmanagers.yaml").read_text())
    spec = am["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    hosts = copy.deepcopy(spec["hostAliases"])
    hosts.pop("x-kubernetes-list-map-keys")
    hosts["items"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    spec["hostAliases"] = hosts
    (crds / "monitoring.coreos.com_alertmanagers.yaml").write_text(yaml.safe_dump(am))
    name = "monitoring.coreos.com_servicemonitors.yaml"
    (crds / name).write_text((ROOT / "crds" / name).read_text())
    return crds


@pytest.fixture
def sandbox():
    with Sandbox(port=0) as sb:
        yield sb


def test_install_crds_says_which_crd_and_field_and_installs_the_others(sandbox, tmp_path):
    client = KubeClient(sandbox.api_client())
    with pytest.raises(CrdRefused) as info:
        install_crds(client, broken_crd_dir(tmp_path))
    assert isinstance(info.value, UserError)
    text = info.value.one_line()
    assert f"CRD alertmanagers.monitoring.coreos.com: {FIELD}" in text, text
    assert "\n" not in str(info.value)
    assert client.get(CRDS, "servicemonitors.monitoring.coreos.com")["metadata"]["name"]


def test_promop_run_manage_crds_prints_one_line_and_exits_non_zero(sandbox, tmp_path):
    kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")
    crds = broken_crd_dir(tmp_path)
    # promop run with the packaged CRD folder pointed at the broken one
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        import promop.packaged
        promop.packaged.crds_dir = lambda: Path({str(crds)!r})
        from promop.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    proc = subprocess.run([sys.executable, "-c", script, "run", "--kubeconfig", kubeconfig, "--manage-crds",
                           "--web.listen-address", "127.0.0.1:0"],
                          capture_output=True, text=True, timeout=scaled(60), cwd=ROOT,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "alertmanagers.monitoring.coreos.com" in line]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("promop run: ") and FIELD in lines[0], lines[0]
    assert lines[0] == proc.stderr.strip().splitlines()[-1]
