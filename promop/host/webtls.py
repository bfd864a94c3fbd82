"""HTTPS for the operator's web endpoint, with upstream's flags (`pkg/server/server.go`).

`--web.enable-tls` turns it on; `--web.cert-file`/`--web.key-file` (default
`/etc/tls/private/tls.crt`/`tls.key`) are the serving pair, `--web.client-ca-file`
(default `/etc/tls/private/tls-ca.crt`) asks for and verifies client
certificates when that file exists (a missing one only disables client
verification, with a warning, as upstream). `--web.tls-min-version` takes Go's
names and only `VersionTLS12`/`VersionTLS13` (default) are accepted;
`--web.tls-cipher-suites` takes Go's (IANA) names for TLS <= 1.2 (TLS 1.3 suites
are not configurable). Enabled with empty cert and key paths, TLS is off (a
warning), unless a client CA is given, which is refused.

The files are read again when they change (cert-manager rotates them in
place): every new connection checks their size, mtime and inode and builds a
new context if one moved. A pair that does not load (a rotation half done)
keeps the previous context and logs a warning.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from dataclasses import dataclass

from promop.host.logs import fields

log = logging.getLogger("promop.host.webtls")

DEFAULT_TLS_DIR = "/etc/tls/private"
DEFAULT_MIN_VERSION = "VersionTLS13"
TLS_VERSIONS = {"VersionTLS10": ssl.TLSVersion.TLSv1, "VersionTLS11": ssl.TLSVersion.TLSv1_1,
                "VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}
_VERSION_NAMES = {"VersionTLS10": "TLS 1.0", "VersionTLS11": "TLS 1.1", "VersionTLS12": "TLS 1.2",
                  "VersionTLS13": "TLS 1.3"}
# Go's cipher suite names (crypto/tls, what k8s.io/component-base's TLSCipherSuites accepts) -> OpenSSL's.
GO_CIPHER_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
}
TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")


class TLSConfigError(ValueError):
    """A TLS flag value that cannot be used; the message names the flag."""


@dataclass(frozen=True)
class WebTLS:
    """The web server's TLS settings (upstream's defaults)."""

    enabled: bool = False
    cert_file: str = os.path.join(DEFAULT_TLS_DIR, "tls.crt")
    key_file: str = os.path.join(DEFAULT_TLS_DIR, "tls.key")
    client_ca_file: str = os.path.join(DEFAULT_TLS_DIR, "tls-ca.crt")
    min_version: str = DEFAULT_MIN_VERSION
    cipher_suites: tuple[str, ...] = ()

    def active(self) -> bool:
        """Does the server speak TLS? (enabled, with a cert and key; see `check`)"""
        return self.enabled and bool(self.cert_file or self.key_file)


def check(tls: WebTLS) -> None:
    """TLSConfigError for a value upstream refuses at start (files are read later, by `Reloader`)."""
    if not tls.enabled:
        return
    if not tls.cert_file and not tls.key_file:
        if tls.client_ca_file:
            raise TLSConfigError("--web.client-ca-file needs --web.cert-file and --web.key-file: "
                                 "server key and certificate must be provided when a client CA is configured")
        return
    if tls.min_version not in TLS_VERSIONS:
        raise TLSConfigError(f"--web.tls-min-version: unknown tls version {tls.min_version!r}; "
                             "pass VersionTLS12 or VersionTLS13")
    if tls.min_version not in ("VersionTLS12", "VersionTLS13"):
        raise TLSConfigError(f"--web.tls-min-version: TLS version {_VERSION_NAMES[tls.min_version]!r} "
                             "isn't supported; pass VersionTLS12 or VersionTLS13")
    for suite in tls.cipher_suites:
        if suite not in GO_CIPHER_SUITES and suite not in TLS13_SUITES:
            raise TLSConfigError(f"--web.tls-cipher-suites: cipher suite {suite} not supported or doesn't exist; "
                                 "pass Go's names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")


def _stamp(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _client_ca(tls: WebTLS) -> str:
    """The client CA file to verify with, or "" (missing or not a regular file: verification off)."""
    path = tls.client_ca_file
    if not path:
        return ""
    if not os.path.isfile(path):
        log.warning("server TLS client verification disabled", **fields(clientCAFile=path))
        return ""
    return path


def build_context(tls: WebTLS) -> ssl.SSLContext:
    """A server context from the files as they are now; TLSConfigError naming the file that fails."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = TLS_VERSIONS[tls.min_version]
    legacy = [GO_CIPHER_SUITES[s] for s in tls.cipher_suites if s in GO_CIPHER_SUITES]
    if legacy:
        ctx.set_ciphers(":".join(dict.fromkeys(legacy)))
    try:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise TLSConfigError(f"--web.cert-file {tls.cert_file} / --web.key-file {tls.key_file}: cannot load the "
                             f"serving certificate and key ({getattr(exc, 'strerror', None) or exc})") from None
    ca = _client_ca(tls)
    if ca:
        try:
            ctx.load_verify_locations(cafile=ca)
        except (OSError, ssl.SSLError) as exc:
            raise TLSConfigError(f"--web.client-ca-file {ca}: cannot load the client CA ({exc})") from None
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class Reloader:
    """The current context; rebuilt when the cert, key or client CA file changes on disk."""

    def __init__(self, tls: WebTLS) -> None:
        self.tls = tls
        self._lock = threading.Lock()
        self._stamps = self._now()
        self._ctx = build_context(tls)  # a broken pair at start is the caller's one-line error
        self.reloads = 0

    def _now(self) -> tuple:
        return tuple(_stamp(p) for p in (self.tls.cert_file, self.tls.key_file, self.tls.client_ca_file))

    def context(self) -> ssl.SSLContext:
        stamps = self._now()
        with self._lock:
            if stamps != self._stamps:
                self._stamps = stamps
                try:
                    self._ctx = build_context(self.tls)
                    self.reloads += 1
                    log.info("TLS certificate files changed: reloaded")
                except TLSConfigError as exc:
                    log.warning("TLS certificate files changed but do not load; keeping the previous ones",
                                **fields(error=str(exc)))
            return self._ctx
