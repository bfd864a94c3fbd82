"""A bare HTTPS client for the benchmark's own traffic: creates, patches and watches.

Why not promop's KubeClient: the bench process shares the 2 cores with the apiserver and the
operator under test, and 90,000 creates through the kubernetes client cost the bench more CPU
than the apiserver spends on them. One keep-alive connection per thread, orjson bodies.
"""

from __future__ import annotations

import base64
import http.client
import ssl
import tempfile
import threading
import time
from typing import Any, Callable
from urllib.parse import urlencode, urlparse

import orjson
import yaml


class ApiError(RuntimeError):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:300]!r}")
        self.status = status


class RawApi:
    """Token-authenticated requests to the apiserver of an admin kubeconfig (the kit's)."""

    def __init__(self, kubeconfig: str) -> None:
        with open(kubeconfig, encoding="utf-8") as fh:
            cfg = yaml.safe_load(fh)
        cluster = cfg["clusters"][0]["cluster"]
        url = urlparse(cluster["server"])
        self.host, self.port = url.hostname, url.port or 443
        self.token = cfg["users"][0]["user"]["token"]
        ca = base64.b64decode(cluster["certificate-authority-data"])
        with tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False) as fh:
            fh.write(ca)
        self.ctx = ssl.create_default_context(cafile=fh.name)
        self._local = threading.local()

    def _conn(self, fresh: bool = False) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None or fresh:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
            self._local.conn = conn
        return conn

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> dict:
        data = None if body is None else orjson.dumps(body)
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in range(5):
            conn = self._conn(fresh=attempt > 0)
            try:
                conn.request(method, path, data, headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException):
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
                continue
            if resp.status == 429 or resp.status >= 500:  # apiserver overloaded (max-inflight): back off
                time.sleep(0.2 * (attempt + 1))
                continue
            if resp.status >= 300:
                raise ApiError(resp.status, raw)
            return orjson.loads(raw)
        raise ApiError(resp.status, raw)

    def create(self, path: str, obj: dict) -> dict:
        """POST, treating 409 AlreadyExists as done (a retried create)."""
        try:
            return self.request("POST", path, obj)
        except ApiError as exc:
            if exc.status == 409:
                return {}
            raise

    def merge_patch(self, path: str, patch: dict) -> dict:
        return self.request("PATCH", path, patch, "application/merge-patch+json")

    def watch(self, path: str, on_event: Callable[[float, bytes], None], stop: threading.Event,
              ready: threading.Event, **params: str) -> threading.Thread:
        """Watch `path` from now on (a LIST for the resourceVersion first): `on_event(arrival time,
        raw event line)` for every event, called on the watch thread with the time taken as soon as
        the line is read (decoding is the caller's, later)."""
        listed = self.request("GET", f"{path}?{urlencode({**params, 'limit': '1'})}")
        rv = listed["metadata"]["resourceVersion"]

        def run() -> None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=3600)
            query = urlencode({**params, "watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "false",
                               "timeoutSeconds": "3600"})
            conn.request("GET", f"{path}?{query}", headers={"Authorization": f"Bearer {self.token}"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise ApiError(resp.status, resp.read())
            ready.set()
            while not stop.is_set():
                line = resp.readline()
                if not line:
                    return
                on_event(time.perf_counter(), line)

        thread = threading.Thread(target=run, daemon=True, name=f"watch {path}")
        thread.start()
        return thread
