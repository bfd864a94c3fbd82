"""A stub API server that replays LIST pages recorded from the sandbox, byte for byte.

Why: in the sandbox the server encodes every page anew in Python, in the
benchmark's own process, and that cost (the same for both clients) dominates
the wall time of an initial sync. Replaying recorded bytes leaves almost only
the client's work in the measurement: HTTP reads, decoding, caching.
Watches are answered with an open, silent stream (the children stop at sync).
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def record_pages(api_client, namespace: str, page_size: int = 500) -> dict[str, bytes]:
    """{continue token ("" for the first page): page bytes} for the LIST of ConfigMaps in `namespace`."""
    pages: dict[str, bytes] = {}
    token = ""
    while True:
        query = f"limit={page_size}" + (f"&continue={token}" if token else "")
        _, url, headers, _, _ = api_client.param_serialize(
            "GET", f"/api/v1/namespaces/{namespace}/configmaps?{query}", header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        data = api_client.call_api("GET", url, headers).response.data
        pages[token] = data
        token = json.loads(data)["metadata"].get("continue") or ""
        if not token:
            return pages


def without_managed_fields(pages: dict[str, bytes]) -> dict[str, bytes]:
    """The same pages with every item's metadata.managedFields removed (the minimal objects)."""
    out = {}
    for token, data in pages.items():
        page = json.loads(data)
        for item in page.get("items") or []:
            (item.get("metadata") or {}).pop("managedFields", None)
        out[token] = json.dumps(page, separators=(",", ":")).encode()
    return out


class StubServer:
    """Serves `pages` (see `record_pages`) for any LIST with a matching continue token."""

    def __init__(self, pages: dict[str, bytes]) -> None:
        self.pages = pages
        self._closing = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                # headers and body go out in two writes: without this, Nagle's algorithm and
                # the client's delayed ACK add ~40 ms to every page
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                query = parse_qs(urlsplit(self.path).query)
                if query.get("watch") == ["true"]:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.flush()
                    stub._closing.wait(600)
                    self.close_connection = True
                    return
                body = stub.pages.get(query.get("continue", [""])[0])
                if body is None:
                    self.send_error(410, "unknown continue token")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "StubServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
