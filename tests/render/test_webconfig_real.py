"""A real Prometheus (Debian's) serving HTTPS from the rendered web config, checked by promtool, and our
reloader (with the rendered --reload-url and --web-config-file) reloading it over HTTPS."""

from __future__ import annotations

import base64
import gzip
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from promop.certs import CA
from promop.render.model import RenderInputs
from promop.render.pipeline import render

from .helpers import prometheus_obj, run_promtool
from tests.deadlines import scaled

ROOT = Path(__file__).resolve().parents[2]
BINARY = shutil.which("prometheus") or "/usr/bin/prometheus"
NS = "monitoring"


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(check, what: str, proc: subprocess.Popen):
    deadline = time.monotonic() + scaled(30)
    while True:
        assert proc.poll() is None, f"{what}: the process exited: {proc.stderr.read() if proc.stderr else ''}"
        try:
            value = check()
            if value:
                return value
        except (requests.ConnectionError, requests.Timeout):
            pass
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _materialise(sts: dict, container: str, root: Path, objs: dict) -> None:
    """Lay out the web TLS mounts of `container` under `root`, as the kubelet would (one file per key)."""
    vols = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    pod = sts["spec"]["template"]["spec"]
    c = next(c for c in pod["containers"] if c["name"] == container)
    for m in c["volumeMounts"]:
        if not m["name"].startswith("web-config-tls-"):
            continue
        vol = vols[m["name"]]
        obj = objs[vol["secret"]["secretName"]] if "secret" in vol else objs[vol["configMap"]["name"]]
        target = root / m["mountPath"].lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        for key, value in {**obj.get("data", {}), **obj.get("stringData", {})}.items():
            (target / key).write_text(value)


@pytest.mark.skipif(not os.path.exists(BINARY), reason="prometheus is not installed (apt-get install prometheus)")
def test_real_prometheus_serves_https_and_is_reloaded_over_https(tmp_path):
    ca = CA.create("promop-prometheus-web-ca")
    cert, key = ca.issue("localhost", hosts=["localhost", "127.0.0.1"])
    objs = {"web-tls": {"stringData": {"tls.crt": cert.decode(), "tls.key": key.decode()}},
            "web-ca": {"data": {"ca.crt": ca.cert_pem.decode()}}}
    web = {"tlsConfig": {"cert": {"secret": {"name": "web-tls", "key": "tls.crt"}},
                         "keySecret": {"name": "web-tls", "key": "tls.key"},
                         "client_ca": {"configMap": {"name": "web-ca", "key": "ca.crt"}},
                         "clientAuthType": "VerifyClientCertIfGiven", "minVersion": "TLS12"},
           "httpConfig": {"headers": {"xFrameOptions": "Deny", "xContentTypeOptions": "NoSniff"}}}
    prom = prometheus_obj("web", NS, web=web)  # spec.version: Debian's 2.42
    result = render(RenderInputs(prom, secrets={(NS, "web-tls"): objs["web-tls"]},
                                 configmaps={(NS, "web-ca"): objs["web-ca"]}))
    sts = result.statefulsets[0]
    for container in ("prometheus", "config-reloader"):
        _materialise(sts, container, tmp_path, objs)
    text = base64.b64decode(result.web_config_secret["data"]["web-config.yaml"]).decode()
    web_file = tmp_path / "web-config.yaml"
    web_file.write_text(text.replace("/etc/prometheus/", f"{tmp_path}/etc/prometheus/"))
    checked = run_promtool("check", "web-config", str(web_file))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    config_dir, out_dir = tmp_path / "config", tmp_path / "config_out"
    config_dir.mkdir()
    out_dir.mkdir()
    base = "global:\n  scrape_interval: 30s\n"
    (config_dir / "prometheus.yaml.gz").write_bytes(gzip.compress(base.encode()))
    common = [f"--config-file={config_dir}/prometheus.yaml.gz",
              f"--config-envsubst-file={out_dir}/prometheus.env.yaml", f"--watched-dir={config_dir}"]
    init = subprocess.run([sys.executable, "-m", "reloader", "--watch-interval=0", *common], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr

    port, reloader_port = _free_port(), _free_port()
    proc = subprocess.Popen([BINARY, f"--config.file={out_dir}/prometheus.env.yaml", f"--web.config.file={web_file}",
                             f"--web.listen-address=127.0.0.1:{port}", f"--storage.tsdb.path={tmp_path / 'db'}",
                             "--web.enable-lifecycle"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    reloader_args = next(c for c in sts["spec"]["template"]["spec"]["containers"]
                         if c["name"] == "config-reloader")["args"]
    reload_url = next(a for a in reloader_args if a.startswith("--reload-url="))
    assert reload_url == "--reload-url=https://localhost:9090/-/reload"
    assert f"--web-config-file=/etc/prometheus/web_config/web-config.yaml" in reloader_args
    reloader = subprocess.Popen([sys.executable, "-m", "reloader", f"--listen-address=127.0.0.1:{reloader_port}",
                                 reload_url.replace(":9090/", f":{port}/"), f"--web-config-file={web_file}",
                                 "--delay-interval=0.1s", *common],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(ca.cert_pem)
    url = f"https://127.0.0.1:{port}"
    try:
        ready = _until(lambda: requests.get(f"{url}/-/ready", verify=str(ca_file), timeout=5), "HTTPS /-/ready", proc)
        assert ready.status_code == 200
        assert ready.headers.get("X-Frame-Options") == "deny" and ready.headers.get("X-Content-Type-Options") == "nosniff"
        plain = requests.get(f"http://127.0.0.1:{port}/-/ready", timeout=5)  # Go answers plain HTTP with a 400
        assert plain.status_code == 400
        # the sidecar serves its own endpoint over HTTPS with the same file
        metrics = _until(lambda: requests.get(f"https://127.0.0.1:{reloader_port}/metrics", verify=str(ca_file),
                                              timeout=5), "the reloader's HTTPS /metrics", reloader)
        assert metrics.status_code == 200
        changed = base + "  external_labels:\n    reloaded: over-https\n"
        (config_dir / "prometheus.yaml.gz").write_bytes(gzip.compress(changed.encode()))

        def loaded() -> bool:
            assert reloader.poll() is None, reloader.stderr.read()
            cfg = requests.get(f"{url}/api/v1/status/config", verify=str(ca_file), timeout=5).json()["data"]["yaml"]
            return (yaml.safe_load(cfg)["global"].get("external_labels") or {}).get("reloaded") == "over-https"

        _until(loaded, "Prometheus reloaded over HTTPS by the reloader", proc)
    finally:
        for p in (reloader, proc):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
