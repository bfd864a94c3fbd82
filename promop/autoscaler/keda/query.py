"""Send one Prometheus instant query as promop.keda.prometheus.build_request describes it.

One `requests.Session` (connection pool) per TLS mode, shared by every trigger: KEDA 2.20.2's fix
for dial errors at 30k ScaledObjects (#7789). Client certificates and CAs arrive as PEM text (from
Secrets); requests wants files, so each distinct PEM is written once to a private temp file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from typing import Any

import requests
from requests.adapters import HTTPAdapter


class QuerySender:
    def __init__(self, pool_size: int = 64) -> None:
        self._pool_size = pool_size
        self._sessions: dict[tuple, requests.Session] = {}
        self._files: dict[str, str] = {}
        self._lock = threading.Lock()
        self._dir: str | None = None
        self.sent = 0

    def _pem_file(self, pem: str | None) -> str | None:
        if not pem:
            return None
        digest = hashlib.sha256(pem.encode()).hexdigest()
        with self._lock:
            path = self._files.get(digest)
            if path is None:
                if self._dir is None:
                    self._dir = tempfile.mkdtemp(prefix="promop-keda-tls-")
                path = os.path.join(self._dir, digest + ".pem")
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(pem if pem.endswith("\n") else pem + "\n")
                self._files[digest] = path
            return path

    def _session(self, mode: tuple) -> requests.Session:
        with self._lock:
            s = self._sessions.get(mode)
            if s is None:
                s = requests.Session()
                adapter = HTTPAdapter(pool_connections=16, pool_maxsize=self._pool_size, max_retries=0)
                s.mount("http://", adapter)
                s.mount("https://", adapter)
                self._sessions[mode] = s
            return s

    def send(self, request: Any) -> tuple[int, bytes]:
        """(HTTP status, body) of the GET `request` (a promop.keda QueryRequest); OSError-like
        failures raise requests' exceptions, whose text is the trigger's error."""
        ca = self._pem_file(getattr(request, "ca", None))
        cert = getattr(request, "client_cert", None)
        cert_files = None
        if cert:
            cert_pem, key_pem = cert if isinstance(cert, (tuple, list)) else (cert, None)
            cert_files = (self._pem_file(cert_pem), self._pem_file(key_pem)) if key_pem else self._pem_file(cert_pem)
        verify: Any = False if not getattr(request, "verify_tls", True) else (ca or True)
        mode = (str(verify), str(cert_files))
        with self._lock:
            self.sent += 1
        resp = self._session(mode).get(request.url, headers=dict(request.headers or {}), verify=verify,
                                       cert=cert_files, timeout=request.timeout_s, allow_redirects=True)
        return resp.status_code, resp.content

    def close(self) -> None:
        with self._lock:
            for s in self._sessions.values():
                s.close()
            self._sessions.clear()
