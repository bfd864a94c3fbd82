"""Serving certificates that follow their files: cert-manager rewrites the Secret, kubelet updates the
mounted files, and the next connection is served with the new pair, without a restart.

Each accepted connection asks for the current context; the files are stat'ed then and re-read only when
they changed. A half-written pair (mid-rotation) keeps the previous context and is retried next time.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading

from promop.host.logs import fields

log = logging.getLogger("promop.admission.tls")

TLS_MIN_VERSIONS = {"VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}


class CertificateError(ValueError):
    """The certificate/key pair cannot be loaded; the message names the files."""


def _stamp(path: str) -> tuple:
    st = os.stat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class ReloadingContext:
    """An SSLContext per certificate generation; `context()` is safe from many threads."""

    def __init__(self, cert_file: str, key_file: str, client_ca_file: str = "",
                 min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2, on_reload=None) -> None:
        self.cert_file, self.key_file, self.client_ca_file = cert_file, key_file, client_ca_file
        self.min_version = min_version
        self.on_reload = on_reload or (lambda ok: None)
        self._lock = threading.Lock()
        self._stamps: tuple = ()
        self._failed: tuple = ()
        self._context = self._load()  # a bad pair at start is the user's error: raise it

    def _files(self) -> tuple[str, ...]:
        return tuple(p for p in (self.cert_file, self.key_file, self.client_ca_file) if p)

    def _load(self) -> ssl.SSLContext:
        try:
            stamps = tuple(_stamp(p) for p in self._files())
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = self.min_version
            ctx.load_cert_chain(self.cert_file, self.key_file)
            if self.client_ca_file:
                ctx.load_verify_locations(self.client_ca_file)
                ctx.verify_mode = ssl.CERT_REQUIRED
        except (OSError, ssl.SSLError) as exc:
            raise CertificateError(f"cannot load the serving certificate {self.cert_file} / key {self.key_file}: "
                                   f"{getattr(exc, 'strerror', None) or exc}") from None
        self._stamps = stamps
        return ctx

    def context(self) -> ssl.SSLContext:
        with self._lock:
            try:
                now = tuple(_stamp(p) for p in self._files())
            except OSError:
                now = self._stamps  # a file is being replaced: keep serving the old pair
            if now not in (self._stamps, self._failed):
                try:
                    self._context = self._load()
                    log.info("serving certificate reloaded", **fields(cert_file=self.cert_file))
                    self.on_reload(True)
                except CertificateError as exc:
                    log.error("serving certificate reload failed; keeping the previous one", **fields(err=str(exc)))
                    self._failed = now  # retried when the files change again
                    self.on_reload(False)
            return self._context
