"""`promop adapter` as users run it: a process with upstream's flags, a self-signed serving
certificate in --cert-dir, clean shutdown on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import requests
import yaml

from adapter.adapter_fixtures import CONFIG, cluster_prom, prometheus_factory  # noqa: F401
from prom.prom_fixtures import free_port, wait_for

pytestmark = pytest.mark.prometheus


def test_serve_https_self_signed_without_kube(cluster_prom, tmp_path: Path) -> None:  # noqa: F811
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    port = free_port()
    log = tmp_path / "adapter.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "promop", "adapter", f"--config={config}", f"--prometheus-url={cluster_prom.url}",
         "--no-kube", "--authorization-always-allow", f"--secure-port={port}", "--bind-address=127.0.0.1",
         f"--cert-dir={tmp_path / 'certs'}", "--metrics-relist-interval=30s", "--prometheus-verb=POST"],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"), env={**os.environ, "PYTHONPATH": os.getcwd()})
    base = f"https://127.0.0.1:{port}"

    def get(path: str) -> requests.Response:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return requests.get(base + path, verify=False, timeout=10)

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(log.read_text()[-3000:])
        try:
            return get("/readyz").status_code == 200
        except requests.RequestException:
            return False

    try:
        wait_for(ready, 60, "the adapter to be ready", interval=0.2)
        assert (tmp_path / "certs" / "apiserver.crt").exists() and (tmp_path / "certs" / "apiserver.key").exists()
        r = get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/metrics/queue_depth")
        assert r.status_code == 200 and r.json()["items"][0]["value"] == "49500m"
        ext = get("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_depth").json()
        assert sorted(i["value"] for i in ext["items"]) == ["42", "7500m"]
        # without an API server nothing can be listed: say so instead of guessing
        r = get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_per_second")
        assert r.status_code == 404 and "no pods match" in r.json()["message"]
        assert "promop_adapter_relists_total" in get("/metrics").text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_explain_against_prometheus(cluster_prom, tmp_path: Path) -> None:  # noqa: F811
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    out = subprocess.run([sys.executable, "-m", "promop", "adapter", "explain", f"--config={config}",
                          f"--prometheus-url={cluster_prom.url}", "queue_depth"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "rules[1]: seriesQuery {__name__=~\"^queue_.*\",namespace!=\"\"}  (3 series returned)" in out.stdout
    assert "+ queue_depth → queue_depth: label deployment (template) → deployments.apps, namespaced" in out.stdout
    assert "deployments.apps/queue_depth (namespaced) ← series queue_depth (rules[1])" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "promop", "adapter", "explain", f"--config={config}",
                          "--prometheus-url=http://127.0.0.1:1"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "connection" in bad.stderr
