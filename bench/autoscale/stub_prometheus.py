"""A stub Prometheus for the benchmark, in its own process: answers every instant query with one sample per pod
named in the query's `pod=~"..."` regex (value: 40 MiB), so its CPU is not the controller's."""

from __future__ import annotations

import json
import re
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

POD_RE = re.compile(r'pod=~"([^"]*)"')


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _answer(self, query: str) -> None:
        m = POD_RE.search(query)
        pods = m.group(1).replace("\\\\.", ".").split("|") if m else []
        now = time.time()
        result = [{"metric": {"pod": p}, "value": [now, str(40 * 1024 * 1024)]} for p in pods if p]
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(parse_qs(urlparse(self.path).query).get("query", [""])[0])

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        self._answer(parse_qs(self.rfile.read(length).decode()).get("query", [""])[0])

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()
    sys.exit(0)
