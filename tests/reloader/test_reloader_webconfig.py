"""--web-config-file: TLS and basic auth on the sidecar's /metrics and /healthz."""
from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
import requests

from reloader import server
from reloader.metrics import create
from reloader.webconfig import WebConfigError, load


@pytest.fixture
def cert(tmp_path: Path) -> tuple[str, str]:
    openssl = shutil.which("openssl")
    if not openssl:
        pytest.skip("openssl not found; needed to make a test certificate")
    key, crt = tmp_path / "tls.key", tmp_path / "tls.crt"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(crt), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    return crt.name, key.name


def _serve(web_file: Path):
    srv = server.start("127.0.0.1:0", create("http").registry, load(str(web_file)))
    return srv, server.bound_port(srv)


def test_empty_web_config_is_plain_http(tmp_path: Path) -> None:
    web = tmp_path / "web-config.yaml"
    web.write_text("")
    srv, port = _serve(web)
    try:
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json() == {"status": "up"}
    finally:
        srv.shutdown()
        srv.server_close()


def test_tls_with_relative_cert_paths(tmp_path: Path, cert: tuple[str, str]) -> None:
    web = tmp_path / "web-config.yaml"
    web.write_text(f"tls_server_config:\n  cert_file: {cert[0]}\n  key_file: {cert[1]}\n")
    srv, port = _serve(web)
    try:
        resp = requests.get(f"https://127.0.0.1:{port}/metrics", timeout=5, verify=str(tmp_path / cert[0]))
        assert resp.status_code == 200 and "reloader_reloads_total" in resp.text
        with pytest.raises(requests.RequestException):
            requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    finally:
        srv.shutdown()
        srv.server_close()


def test_basic_auth_users(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        crypt = pytest.importorskip("crypt")
    hashed = crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
    web = tmp_path / "web-config.yaml"
    web.write_text(f"basic_auth_users:\n  alice: '{hashed}'\n")
    srv, port = _serve(web)
    base = f"http://127.0.0.1:{port}"
    try:
        assert requests.get(f"{base}/metrics", timeout=5).status_code == 401
        assert requests.get(f"{base}/metrics", timeout=5, auth=("alice", "wrong")).status_code == 401
        assert requests.get(f"{base}/metrics", timeout=5, auth=("bob", "s3cret")).status_code == 401
        assert requests.get(f"{base}/healthz", timeout=5, auth=("alice", "s3cret")).status_code == 200
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize(
    "text,message",
    [
        ("tls_server_config:\n  cert_file: a.crt\n", "needs cert_file and key_file"),
        ("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n", "cannot load cert_file/key_file"),
        ("- a list\n", "must be a YAML mapping"),
        ("a: [", "not valid YAML"),
    ],
)
def test_unusable_web_config_is_an_error(tmp_path: Path, text: str, message: str) -> None:
    web = tmp_path / "web-config.yaml"
    web.write_text(text)
    with pytest.raises(WebConfigError, match=message):
        load(str(web))


def test_unknown_client_auth_type(tmp_path: Path, cert: tuple[str, str]) -> None:
    web = tmp_path / "web-config.yaml"
    web.write_text(f"tls_server_config:\n  cert_file: {cert[0]}\n  key_file: {cert[1]}\n  client_auth_type: Maybe\n")
    with pytest.raises(WebConfigError, match="unknown client_auth_type 'Maybe'"):
        load(str(web))


def test_missing_web_config_file_stops_the_sidecar(tmp_path: Path) -> None:
    import json
    import sys

    cfg = tmp_path / "c.yaml"
    cfg.write_text("global: {}\n")
    done = subprocess.run(
        [sys.executable, "-m", "reloader", f"--config-file={cfg}", "--listen-address=127.0.0.1:0",
         f"--web-config-file={tmp_path / 'absent.yaml'}", "--log-format=json"],
        capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 1
    errors = [json.loads(line) for line in done.stderr.splitlines() if '"invalid web config"' in line]
    assert errors and "cannot read --web-config-file" in errors[0]["err"]
