"""A real Alertmanager (Debian's prometheus-alertmanager 0.25 on loopback) loads what the operator generates,
and the reloader sidecar reloads it when an AlertmanagerConfig changes."""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from promop.kube.resources import NAMESPACES, SECRETS
from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS

from .operator_helpers import ROOT, alertmanager, amc, eventually, generated_config, modify

BINARY = shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"
NS = "monitoring"

pytestmark = pytest.mark.skipif(not os.path.exists(BINARY), reason="prometheus-alertmanager is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def publish(kube, directory: Path) -> bytes:
    """Copy the generated Secret's keys into `directory` as the kubelet does (write, then rename)."""
    secret = kube.get(SECRETS, "alertmanager-main-generated", NS)
    raw = b""
    for key, value in secret["data"].items():
        data = base64.b64decode(value)
        tmp = directory / f".{key}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, directory / key)
        if key == "alertmanager.yaml.gz":
            raw = data
    return raw


def status(port: int) -> dict:
    return requests.get(f"http://127.0.0.1:{port}/api/v2/status", timeout=5).json()


def config_hash(port: int) -> str:
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return next(line.split()[-1] for line in text.splitlines() if line.startswith("alertmanager_config_hash"))


def test_alertmanager_loads_generated_config_and_reloads_on_change(kube, start_operator, tmp_path):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    start_operator()
    kube.create(ALERTMANAGERS, alertmanager(version="v0.25.0"))
    kube.create(ALERTMANAGERCONFIGS, amc("team"))
    eventually(lambda: "monitoring/team/r" in generated_config(kube, NS, "main"), 20, "the generated config")

    config_dir, out_dir, data_dir = tmp_path / "config", tmp_path / "config_out", tmp_path / "data"
    for d in (config_dir, out_dir, data_dir):
        d.mkdir()
    publish(kube, config_dir)
    am_port, reloader_port = free_port(), free_port()
    common = [f"--config-file={config_dir}/alertmanager.yaml.gz",
              f"--config-envsubst-file={out_dir}/alertmanager.env.yaml", f"--watched-dir={config_dir}"]
    # the init container: write the config once, before Alertmanager starts
    init = subprocess.run([sys.executable, "-m", "reloader", "--watch-interval=0", *common], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr
    am = subprocess.Popen([BINARY, f"--config.file={out_dir}/alertmanager.env.yaml", f"--storage.path={data_dir}",
                           f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    reloader = subprocess.Popen([sys.executable, "-m", "reloader", f"--listen-address=127.0.0.1:{reloader_port}",
                                 f"--reload-url=http://127.0.0.1:{am_port}/-/reload", "--delay-interval=0.1s", *common],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def loaded() -> str:
            assert am.poll() is None, am.stderr.read()
            try:
                return status(am_port)["config"]["original"]
            except requests.ConnectionError as exc:
                raise AssertionError(f"Alertmanager not answering yet: {exc}") from None
        first = eventually(lambda: "monitoring/team/r" in loaded() and loaded(), 20, "Alertmanager to load the config")
        assert "http://127.0.0.1:1/hook" in first and 'namespace="monitoring"' in first
        hash_before = config_hash(am_port)

        # an AlertmanagerConfig edit: operator -> Secret -> (kubelet) -> reloader -> /-/reload
        modify(kube, ALERTMANAGERCONFIGS, "team", NS,
               lambda o: o["spec"]["receivers"][0]["webhookConfigs"][0].update(url="http://127.0.0.1:2/changed"))
        eventually(lambda: "http://127.0.0.1:2/changed" in generated_config(kube, NS, "main"), 20, "the new Secret")
        publish(kube, config_dir)
        eventually(lambda: "http://127.0.0.1:2/changed" in loaded(), 30, "Alertmanager to reload the new config")
        assert "http://127.0.0.1:1/hook" not in loaded()
        metrics = requests.get(f"http://127.0.0.1:{am_port}/metrics", timeout=5).text
        assert "alertmanager_config_last_reload_successful 1" in metrics
        assert config_hash(am_port) != hash_before
    finally:
        for proc in (reloader, am):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
