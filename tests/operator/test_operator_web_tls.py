"""The operator's web endpoint over HTTPS (`--web.enable-tls`, upstream's pkg/server): a real TLS client
against generated certificates; client certificates when a client CA is given; files reloaded when
they change; minimum version and cipher suites as configured."""

from __future__ import annotations

import os
import ssl
import urllib.error
import urllib.request

import pytest
from operator_testlib import eventually

from promop.certs import CA
from promop.host.web import WebServer
from promop.host.webtls import TLSConfigError, WebTLS
from prometheus_client import CollectorRegistry


def write_pair(tmp_path, ca: CA, stem: str = "tls") -> tuple[str, str]:
    cert, key = ca.issue("localhost", hosts=["127.0.0.1", "localhost"])
    crt_path, key_path = tmp_path / f"{stem}.crt", tmp_path / f"{stem}.key"
    # write to a temporary name and rename, as the kubelet swaps a Secret volume's files
    for path, data in ((crt_path, cert), (key_path, key)):
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return str(crt_path), str(key_path)


def client(ca: CA, tmp_path, cert: tuple[bytes, bytes] | None = None, **kw) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
    for attr, value in kw.items():
        setattr(ctx, attr, value)
    if cert is not None:
        (tmp_path / "client.crt").write_bytes(cert[0])
        (tmp_path / "client.key").write_bytes(cert[1])
        ctx.load_cert_chain(str(tmp_path / "client.crt"), str(tmp_path / "client.key"))
    return ctx


def get(url: str, ctx: ssl.SSLContext) -> int:
    with urllib.request.urlopen(url + "/healthz", timeout=10, context=ctx) as resp:
        return resp.status


@pytest.fixture
def serve():
    servers: list[WebServer] = []

    def start(tls: WebTLS) -> WebServer:
        servers.append(WebServer("127.0.0.1", 0, CollectorRegistry(), lambda: (True, ""), tls=tls).start())
        return servers[-1]
    yield start
    for s in servers:
        s.stop()


def test_https_with_a_generated_certificate_and_reload_on_rotation(tmp_path, serve):
    ca = CA.create("web-ca")
    crt, key = write_pair(tmp_path, ca)
    web = serve(WebTLS(enabled=True, cert_file=crt, key_file=key, client_ca_file=str(tmp_path / "absent-ca.crt")))
    assert web.url.startswith("https://")
    assert get(web.url, client(ca, tmp_path)) == 200
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP to a TLS port gets no answer
        urllib.request.urlopen(web.url.replace("https", "http") + "/healthz", timeout=5)

    rotated = CA.create("rotated-ca")  # cert-manager renews: a new pair in place
    write_pair(tmp_path, rotated)
    assert get(web.url, client(rotated, tmp_path)) == 200
    with pytest.raises(urllib.error.URLError):  # the old chain is no longer served
        get(web.url, client(ca, tmp_path))
    assert web.tls.reloads == 1


def test_a_half_written_rotation_keeps_the_previous_pair(tmp_path, serve):
    ca = CA.create("web-ca")
    crt, key = write_pair(tmp_path, ca)
    web = serve(WebTLS(enabled=True, cert_file=crt, key_file=key, client_ca_file=""))
    (tmp_path / "tls.key").write_bytes(CA.create("other").key_pem)  # key no longer matches the cert
    assert get(web.url, client(ca, tmp_path)) == 200


def test_client_certificates_are_required_when_the_client_ca_exists(tmp_path, serve):
    ca, clients = CA.create("web-ca"), CA.create("client-ca")
    crt, key = write_pair(tmp_path, ca)
    (tmp_path / "client-ca.crt").write_bytes(clients.cert_pem)
    web = serve(WebTLS(enabled=True, cert_file=crt, key_file=key, client_ca_file=str(tmp_path / "client-ca.crt")))
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        get(web.url, client(ca, tmp_path))
    assert get(web.url, client(ca, tmp_path, cert=clients.issue("scraper", client=True))) == 200
    stranger = CA.create("stranger").issue("scraper", client=True)
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        get(web.url, client(ca, tmp_path, cert=stranger))


def test_minimum_version_and_cipher_suites(tmp_path, serve):
    ca = CA.create("web-ca")
    crt, key = write_pair(tmp_path, ca)
    default = serve(WebTLS(enabled=True, cert_file=crt, key_file=key, client_ca_file=""))
    with pytest.raises(urllib.error.URLError):  # VersionTLS13 by default: a TLS 1.2 client is refused
        get(default.url, client(ca, tmp_path, maximum_version=ssl.TLSVersion.TLSv1_2))
    only = serve(WebTLS(enabled=True, cert_file=crt, key_file=key, client_ca_file="", min_version="VersionTLS12",
                        cipher_suites=("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",)))
    tls12 = client(ca, tmp_path, maximum_version=ssl.TLSVersion.TLSv1_2)
    assert get(only.url, tls12) == 200
    tls12.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")  # not among the server's suites
    with pytest.raises(urllib.error.URLError):
        get(only.url, tls12)


def test_a_missing_certificate_is_a_one_line_error(tmp_path):
    with pytest.raises(TLSConfigError, match="--web.cert-file .*cannot load"):
        WebServer("127.0.0.1", 0, CollectorRegistry(), lambda: (True, ""),
                  tls=WebTLS(enabled=True, cert_file=str(tmp_path / "none.crt"), key_file=str(tmp_path / "none.key")))


def test_the_operator_serves_https_with_web_enable_tls(tmp_path, start_operator):
    ca = CA.create("web-ca")
    crt, key = write_pair(tmp_path, ca)
    op = start_operator(web=True, web_tls=WebTLS(enabled=True, cert_file=crt, key_file=key, client_ca_file=""))
    web = eventually(lambda: op.operator.web, what="the web server")
    assert web.url.startswith("https://") and get(web.url, client(ca, tmp_path)) == 200
