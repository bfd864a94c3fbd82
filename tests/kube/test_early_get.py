"""EarlyGet against the sandbox over HTTP: send now, read later, on the client's own pooled
connections; every failure is EarlyGetFailed, and a connection always goes back to its pool."""

from __future__ import annotations

import socket

import pytest
import urllib3

from promop.kube import early_get
from promop.kube.early_get import EarlyGet, EarlyGetFailed

TIMEOUT = (5.0, 10.0)


@pytest.fixture
def pool_manager():
    manager = urllib3.PoolManager(maxsize=2)
    yield manager
    manager.clear()


def _target(sandbox_url: str, path: str) -> tuple[str, str]:
    return sandbox_url + path, path


def _auth(api_client) -> dict[str, str]:
    headers: dict[str, str] = {"Accept": "application/json"}
    api_client.update_params_for_auth(headers, None, ["BearerToken"], "/", "GET", None)
    return headers


def _free_slots(pool_manager, url: str) -> int:
    return pool_manager.connection_from_url(url).pool.qsize()


def test_supported_only_for_a_plain_urllib3_2_pool_manager(pool_manager):
    assert early_get.supported(pool_manager)
    assert not early_get.supported(urllib3.ProxyManager("http://127.0.0.1:3128"))
    assert not early_get.supported(object())


def test_sent_now_read_later(sandbox, api_client, pool_manager):
    host = api_client.configuration.host
    url, target = _target(host, "/api/v1/namespaces/default/configmaps?limit=1")
    slots = _free_slots(pool_manager, url)
    sent = EarlyGet(pool_manager, url, target, _auth(api_client), TIMEOUT)
    status, headers, body = sent.finish()
    assert status == 200 and b'"kind":"ConfigMapList"' in body.replace(b" ", b"")
    assert headers["Content-Type"].startswith("application/json")
    assert _free_slots(pool_manager, url) == slots  # the connection went back
    with pytest.raises(EarlyGetFailed, match="already finished"):
        sent.finish()


def test_an_error_status_is_returned_with_its_body(sandbox, api_client, pool_manager):
    host = api_client.configuration.host
    url, target = _target(host, "/api/v1/namespaces/default/configmaps/missing")
    status, _, body = EarlyGet(pool_manager, url, target, _auth(api_client), TIMEOUT).finish()
    assert status == 404 and b"NotFound" in body


def test_abandoned_unread_the_connection_is_closed_and_returned(sandbox, api_client, pool_manager):
    host = api_client.configuration.host
    url, target = _target(host, "/api/v1/namespaces/default/configmaps")
    slots = _free_slots(pool_manager, url)
    sent = EarlyGet(pool_manager, url, target, _auth(api_client), TIMEOUT)
    sent.abandon()
    assert _free_slots(pool_manager, url) == slots
    again = EarlyGet(pool_manager, url, target, _auth(api_client), TIMEOUT)  # the pool still works
    assert again.finish()[0] == 200


def test_nothing_listening_fails_at_send_and_frees_the_slot(pool_manager):
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api/v1/namespaces"
    slots = _free_slots(pool_manager, url)
    with pytest.raises(EarlyGetFailed, match="(?i)refused|connect"):
        EarlyGet(pool_manager, url, "/api/v1/namespaces", {}, TIMEOUT)
    assert _free_slots(pool_manager, url) == slots


def test_a_server_that_hangs_up_fails_at_read(pool_manager):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/api/v1/namespaces"
        slots = _free_slots(pool_manager, url)
        sent = EarlyGet(pool_manager, url, "/api/v1/namespaces", {}, TIMEOUT)
        conn, _ = server.accept()
        conn.close()  # no response at all
        with pytest.raises(EarlyGetFailed, match="RemoteDisconnected|ProtocolError|Connection"):
            sent.finish()
    assert _free_slots(pool_manager, url) == slots


@pytest.fixture
def tls_server(tmp_path):
    """A tiny HTTPS server with a self-signed certificate for 127.0.0.1; yields (url, ca file)."""
    import shutil
    import ssl
    import subprocess
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)

    class Echo(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            body = b'{"path":"%s"}' % self.path.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", str(cert)
    finally:
        server.shutdown()
        server.server_close()


def test_https_with_the_pools_certificate_settings(tls_server):
    url, ca = tls_server
    verified = urllib3.PoolManager(ca_certs=ca, cert_reqs="CERT_REQUIRED")
    for i in range(2):  # the second reuses the pooled TLS connection
        assert EarlyGet(verified, f"{url}/p{i}", f"/p{i}", {}, TIMEOUT).finish()[::2] == (200, b'{"path":"/p%d"}' % i)
    unknown_ca = urllib3.PoolManager(cert_reqs="CERT_REQUIRED")
    with pytest.raises(EarlyGetFailed, match="CERTIFICATE_VERIFY_FAILED"):
        EarlyGet(unknown_ca, f"{url}/p", "/p", {}, TIMEOUT)
