"""`promop admission-webhook` as a process: TLS with the certificate reloaded on change, /healthz, /metrics,
and one-line errors for bad flags."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from cli_runner import promop

from deadlines import scaled
from promop.certs import CA

from .helpers import golden, post

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_pair(ca: CA, folder: Path, cn: str) -> None:
    cert, key = ca.issue(cn, hosts=["127.0.0.1", "localhost"])
    # write to temporary names and rename, as kubelet's atomic writer swaps a Secret volume
    (folder / "tls.key.new").write_bytes(key)
    (folder / "tls.crt.new").write_bytes(cert)
    os.replace(folder / "tls.key.new", folder / "tls.key")
    os.replace(folder / "tls.crt.new", folder / "tls.crt")


def _peer_cn(port: int, cafile: Path) -> str:
    ctx = ssl.create_default_context(cafile=str(cafile))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        subject = dict(x[0] for x in tls.getpeercert()["subject"])
        return subject["commonName"]


def _until(check, seconds: float):
    deadline = time.monotonic() + scaled(seconds)
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except (OSError, ssl.SSLError, urllib.error.URLError) as exc:
            last = exc
        time.sleep(0.05)
    raise AssertionError(f"not true within {scaled(seconds)}s (last error: {last})")


@pytest.fixture
def running(tmp_path):
    ca = CA.create("admission-test-ca")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    _write_pair(ca, tmp_path, "first")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "promop", "admission-webhook",
                             f"--web.listen-address=127.0.0.1:{port}", f"--web.cert-file={tmp_path / 'tls.crt'}",
                             f"--web.key-file={tmp_path / 'tls.key'}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"https://127.0.0.1:{port}"
    cafile = tmp_path / "ca.crt"
    ctx = ssl.create_default_context(cafile=str(cafile))
    try:
        _until(lambda: urllib.request.urlopen(base + "/healthz", context=ctx, timeout=5).status == 200, 20)
        yield base, port, ca, tmp_path
    finally:
        proc.terminate()
        proc.wait(timeout=scaled(10))


def test_serves_reviews_over_tls_and_reloads_a_rotated_certificate(running):
    base, port, ca, folder = running
    cafile = folder / "ca.crt"
    assert _peer_cn(port, cafile) == "first"
    _, out = post(base + "/admission-prometheusrules/validate", golden("badRulesNoAnnotations.golden"), str(cafile))
    assert out["response"]["allowed"] is False
    _write_pair(ca, folder, "second")
    assert _until(lambda: _peer_cn(port, cafile) == "second", 10)
    ctx = ssl.create_default_context(cafile=str(cafile))
    metrics = urllib.request.urlopen(base + "/metrics", context=ctx, timeout=5).read().decode()
    assert 'promop_admission_webhook_requests_total{outcome="denied",path="/admission-prometheusrules/validate"} 1.0' \
        in metrics
    assert 'promop_admission_webhook_certificate_reloads_total{result="success"} 1.0' in metrics


def test_a_half_written_certificate_keeps_the_old_one(running):
    base, port, ca, folder = running
    cafile = folder / "ca.crt"
    (folder / "tls.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\nbroken\n")
    assert _peer_cn(port, cafile) == "first"  # still served, with the previous pair
    _write_pair(ca, folder, "third")
    assert _until(lambda: _peer_cn(port, cafile) == "third", 10)


@pytest.mark.parametrize("args,expected", [
    ([], "--web.cert-file and --web.key-file are required"),
    (["--web.cert-file=/nonexistent.crt", "--web.key-file=/nonexistent.key"], "cannot load the serving certificate"),
    (["--web.enable-tls=false", "--web.listen-address=nope"], "--web.listen-address: 'nope' has no port"),
    (["--web.cert-file=a", "--web.key-file=b", "--web.tls-min-version=TLS9"], "--web.tls-min-version: 'TLS9'"),
])
def test_bad_flags_are_one_line_and_exit_2(args, expected):
    # in-process (tests/cli_runner.py); the first case again as a real process: what a user sees
    proc = promop("admission-webhook", *args, cwd=ROOT)
    if not args:
        real = subprocess.run([sys.executable, "-m", "promop", "admission-webhook"], capture_output=True,
                              text=True, cwd=ROOT, timeout=scaled(30))
        assert (real.returncode, real.stderr) == (proc.returncode, proc.stderr)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("promop admission-webhook: ") and expected in lines[0], lines


@pytest.mark.parametrize("fmt,check", [
    ("logfmt", lambda line: line.startswith("level=info ts=") and 'msg="admission webhook serving"' in line and "tls=false" in line),
    ("json", lambda line: __import__("json").loads(line)["msg"] == "admission webhook serving"),
])
def test_logs_its_start_in_the_chosen_format(fmt, check):
    proc = subprocess.Popen([sys.executable, "-m", "promop", "admission-webhook", "--web.enable-tls=false",
                             "--web.listen-address=127.0.0.1:0", f"--log-format={fmt}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=scaled(10))
    assert check(line.strip()), line
    assert proc.returncode == 0  # SIGTERM is a clean stop


def test_client_ca_file_requires_a_client_certificate(tmp_path):
    from promop.admission.server import WebhookServer
    from promop.admission.tls import ReloadingContext

    ca = CA.create("both-ca")
    _write_pair(ca, tmp_path, "server")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    tls = ReloadingContext(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"), str(tmp_path / "ca.crt"))
    server = WebhookServer("127.0.0.1", 0, tls).start()
    try:
        anonymous = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
        with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
            urllib.request.urlopen(f"https://127.0.0.1:{server.port}/healthz", context=anonymous, timeout=10).read()
        cert, key = ca.issue("kube-apiserver", client=True)
        (tmp_path / "client.crt").write_bytes(cert)
        (tmp_path / "client.key").write_bytes(key)
        known = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
        known.load_cert_chain(str(tmp_path / "client.crt"), str(tmp_path / "client.key"))
        assert urllib.request.urlopen(f"https://127.0.0.1:{server.port}/healthz", context=known,
                                      timeout=10).status == 200
    finally:
        server.stop()
