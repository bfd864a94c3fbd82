"""Test helpers for the reloader: polling, free ports, kubelet-style dirs, a counting server."""
from __future__ import annotations

import gzip
import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, TypeVar

from deadlines import scaled

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float = 10.0, what: str = "condition", interval: float = 0.02) -> T:
    """Poll `check` until it returns something truthy; fail with `what` at the deadline
    (`timeout` times PROMOP_TEST_TIMEOUT_SCALE, deadlines.py)."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - polled condition may fail transiently
            last_exc = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last_exc!r})" if last_exc else ""))
        time.sleep(interval)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_atomic(path: Path, data: bytes) -> None:
    """Replace a file the way Kubernetes/editors do: temp file in another name, then rename."""
    tmp = path.parent / f".{path.name}.test-tmp"
    tmp.write_bytes(data)
    os.replace(tmp, path)


def gz(text: str) -> bytes:
    return gzip.compress(text.encode())


class KubeletDir:
    """A directory laid out as kubelet mounts a ConfigMap: files -> ..data/ -> ..<ts>/."""

    def __init__(self, root: Path):
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.generation = 0

    def publish(self, files: dict[str, str]) -> None:
        self.publish_bytes({name: text.encode() for name, text in files.items()})

    def publish_bytes(self, files: dict[str, bytes]) -> None:
        self.generation += 1
        ts_dir = self.root / f"..2026_11_22_00_00_{self.generation:02d}.{os.getpid()}"
        ts_dir.mkdir()
        for name, data in files.items():
            (ts_dir / name).write_bytes(data)
        old = os.readlink(self.root / "..data") if (self.root / "..data").is_symlink() else None
        tmp_link = self.root / "..data_tmp"
        os.symlink(ts_dir.name, tmp_link)
        os.replace(tmp_link, self.root / "..data")
        for name in files:
            visible = self.root / name
            if not visible.is_symlink():
                os.symlink(f"..data/{name}", visible)
        if old:
            for child in (self.root / old).iterdir():
                child.unlink()
            (self.root / old).rmdir()


class CountingServer:
    """A tiny stand-in for Prometheus's /-/reload that counts POSTs."""

    def __init__(self, status: int = 200, hang: threading.Event | None = None):
        self.status = status
        self.posts = 0
        self.hang = hang
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                outer.posts += 1
                if outer.hang is not None:
                    outer.hang.wait(30)
                body = b"ok" if outer.status == 200 else b"failed to reload config: simulated"
                self.send_response(outer.status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/-/reload"

    def close(self) -> None:
        if self.hang is not None:
            self.hang.set()
        self.server.shutdown()
        self.server.server_close()


def parse_json_lines(lines: list[str]) -> list[dict]:
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def metric_values(text: str) -> dict[str, float]:
    """Flatten Prometheus text exposition into {'name{labels}': value}."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return out
