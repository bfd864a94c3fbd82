"""A ScrapeConfig's kubernetesSDConfigs with `attachMetadata.node: true` (issue 30 item 4).

Upstream (pkg/prometheus/promcfg.go, golden ScrapeConfigSpecConfig_K8SSD_with_AttachMetadata) writes
`attach_metadata: {node: true}` for the roles Prometheus supports it for (pod, endpoints,
endpointslice) and drops it with a warning for the others (golden
ScrapeConfigSpecConfig_K8SSD_with_Unsupported_Role_AttachMetadata: role service). The EndpointSlice
role had no test: losing it silently drops the node labels a user asked for.

Debian's promtool is built without Kubernetes SD, so the rendered config is loaded by trixie's
Prometheus 2.53.3 (the binary of the .deb the kit's image-prometheus.sh fetched), which refuses a
config it cannot parse before it starts.
"""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from promop.render import RenderOptions, generate_config

TRIXIE_DEBS = os.path.expanduser("~/.cache/promop-kube/apt/trixie/cache/archives/prometheus_2.*_amd64.deb")


def render(role: str, version: str = "v2.53.3"):
    sc = {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "ScrapeConfig",
          "metadata": {"name": "nodes", "namespace": "default"},
          "spec": {"kubernetesSDConfigs": [{"role": role, "attachMetadata": {"node": True},
                                            "apiServer": "https://127.0.0.1:6443"}]}}
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "test", "namespace": "default"},
            "spec": {"version": version, "scrapeConfigSelector": {}}}
    return generate_config(prom, scrape_configs=[sc], options=RenderOptions())


def sd_of(result) -> dict:
    job = yaml.safe_load(result.text)["scrape_configs"][0]
    assert job["job_name"] == "scrapeConfig/default/nodes"
    return job["kubernetes_sd_configs"][0]


@pytest.mark.parametrize("role,expected", [("EndpointSlice", "endpointslice"), ("Endpoints", "endpoints"),
                                           ("Pod", "pod")])
def test_supported_roles_carry_attach_metadata_node(role, expected):
    result = render(role)
    assert result.rejected == [] and not result.warnings
    assert sd_of(result) == {"role": expected, "api_server": "https://127.0.0.1:6443",
                             "attach_metadata": {"node": True}}


def test_unsupported_role_drops_it_with_a_warning():
    result = render("Service")
    assert "attach_metadata" not in sd_of(result)
    assert [w.field for w in result.warnings] == ["spec.kubernetesSDConfigs[0].attachMetadata"]


def _prometheus_binary(tmp_path: Path) -> str:
    debs = sorted(glob.glob(TRIXIE_DEBS))
    if not debs:
        pytest.skip(f"no trixie Prometheus .deb at {TRIXIE_DEBS} (the kube kit's image-prometheus.sh fetches it)")
    subprocess.run(["dpkg-deb", "-x", debs[-1], str(tmp_path / "root")], check=True, timeout=60)
    return str(tmp_path / "root" / "usr" / "bin" / "prometheus")


def test_prometheus_2_53_loads_the_endpointslice_config(tmp_path):
    binary = _prometheus_binary(tmp_path)
    config = tmp_path / "prometheus.yaml"
    config.write_text(render("EndpointSlice").text)
    proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             "--web.listen-address=127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:  # Prometheus logs to stderr; it exits at once on a config it refuses
            assert "Error loading config" not in line and "level=error msg=\"Error" not in line, line
            if "Completed loading of configuration file" in line:
                break
        else:
            pytest.fail(f"Prometheus exited with {proc.wait()} before loading the config")
    finally:
        proc.kill()
        proc.wait()
