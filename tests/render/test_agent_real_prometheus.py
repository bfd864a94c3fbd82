"""End to end: Debian's real Prometheus (2.42) runs in agent mode on promop's generated agent config
and flags, and remote-writes to a second Prometheus (the remote-write receiver); the samples arrive."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests

from deadlines import scaled
from promop.render.agent import render_agent
from promop.render.model import RenderInputs

PROMETHEUS = shutil.which("prometheus")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _require_prometheus() -> str:
    if PROMETHEUS:
        return PROMETHEUS
    if os.environ.get("CI"):
        pytest.fail("prometheus binary not found but CI is set: `apt-get install prometheus`")
    pytest.skip("prometheus binary not found; install Debian's prometheus package to run this test")


class Proc:
    """A Prometheus process on a free loopback port; `args` get --web.listen-address added."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        with open(log, "wb") as fh:
            self.proc = subprocess.Popen([*args, f"--web.listen-address=127.0.0.1:{self.port}"],
                                         stdout=subprocess.DEVNULL, stderr=fh)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + scaled(30)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if requests.get(f"{self.base}/-/ready", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)  # poll interval, not synchronisation: the deadline bounds the wait
        raise AssertionError(f"prometheus on {self.port} not ready: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=scaled(10))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _agent(receiver: str) -> dict:
    return {
        "apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent",
        "metadata": {"name": "edge", "namespace": "ns", "uid": "u"},
        "spec": {"version": "v2.42.0", "scrapeInterval": "1s", "podMonitorSelector": {"matchLabels": {"none": "x"}},
                 "additionalScrapeConfigs": {"name": "extra", "key": "scrape.yaml"},
                 "remoteWrite": [{"url": f"{receiver}/api/v1/write"}]},
    }


def _prometheus_args(result, config: Path, storage: Path) -> list[str]:
    """The generated container flags with the pod paths mapped to this test's files."""
    args = result.statefulsets[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    out = []
    for arg in args:
        if arg.startswith("--config.file="):
            arg = f"--config.file={config}"
        elif arg.startswith("--storage.agent.path="):
            arg = f"--storage.agent.path={storage}"
        elif arg.startswith("--web.config.file="):
            continue  # the pod mounts an empty web config; nothing to serve over TLS here
        out.append(arg)
    return out


def test_agent_remote_writes_to_a_receiver(tmp_path):
    binary = _require_prometheus()
    (tmp_path / "receiver.yaml").write_text("global: {}\n")
    receiver = Proc([binary, f"--config.file={tmp_path / 'receiver.yaml'}", f"--storage.tsdb.path={tmp_path / 'rx'}",
                     "--web.enable-remote-write-receiver"], tmp_path / "receiver.log")
    agent_proc = None
    try:
        receiver.wait_ready()
        target = receiver.base.removeprefix("http://")
        secret = {"metadata": {"name": "extra", "namespace": "ns"},
                  "stringData": {"scrape.yaml": f"- job_name: receiver\n  static_configs:\n  - targets: ['{target}']\n"}}
        result = render_agent(RenderInputs(prometheus=_agent(receiver.base), secrets={("ns", "extra"): secret}))
        assert result.rejected == []
        args = _prometheus_args(result, tmp_path / "agent.yaml", tmp_path / "wal")
        assert "--enable-feature=agent" in args
        # the reloader substitutes $(POD_NAME) before Prometheus reads the config
        (tmp_path / "agent.yaml").write_text(result.config_text.replace("$(POD_NAME)", "prom-agent-edge-0"))
        agent_proc = Proc([binary, *args], tmp_path / "agent.log")
        agent_proc.wait_ready()
        query = 'up{job="receiver",prometheus="ns/edge",prometheus_replica="prom-agent-edge-0"}'
        deadline = time.monotonic() + scaled(40)
        found: list = []
        while time.monotonic() < deadline and not found:
            r = requests.get(f"{receiver.base}/api/v1/query", params={"query": query}, timeout=5)
            found = r.json()["data"]["result"]
            if not found:
                time.sleep(0.5)  # poll interval; the deadline bounds the wait
        assert found, f"no remote-written samples arrived; agent log: {(tmp_path / 'agent.log').read_text()[-2000:]}"
        assert found[0]["value"][1] == "1"
        # an agent serves no queries: its own query API is off
        assert requests.get(f"{agent_proc.base}/api/v1/query", params={"query": "up"}, timeout=5).status_code != 200
    finally:
        if agent_proc:
            agent_proc.stop()
        receiver.stop()
