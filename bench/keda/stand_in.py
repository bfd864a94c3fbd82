"""A stand-in Prometheus for bench.keda, in its own process (the bench's other work must not slow it).

    python3 -m bench.keda.stand_in        # prints its port, then serves until killed

GET /api/v1/query?query=Q   a one-sample vector with the value set for Q ("0" when none was set);
                            every request is recorded (query, wall time) so the bench can count
                            queries per distinct query per polling interval.
POST /set?query=Q&value=V   sets Q's value (the bench's "the metric changed");
POST /set-many {Q: V, ...}  many at once.
GET /hits?since=T           {query: [wall times of the requests since T]}.

Threaded, HTTP/1.1 keep-alive (the controller's requests.Session reuses connections as it
would with a real Prometheus).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class StandIn:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.hits: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def answer(self, query: str) -> bytes:
        now = time.time()
        with self.lock:
            self.hits.append((now, query))
            value = self.values.get(query, "0")
        return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {}, "value": [now, value]}]}}).encode()

    def hits_since(self, since: float) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        with self.lock:
            for at, q in self.hits:
                if at >= since:
                    out.setdefault(q, []).append(at)
        return out


def handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (stdlib name)
            url = urlsplit(self.path)
            args = parse_qs(url.query)
            if url.path == "/api/v1/query":
                self._send(200, state.answer(args.get("query", [""])[0]))
            elif url.path == "/hits":
                self._send(200, json.dumps(state.hits_since(float(args.get("since", ["0"])[0]))).encode())
            else:
                self._send(404, b'{"status":"error","error":"not found"}')

        def do_POST(self) -> None:  # noqa: N802
            url = urlsplit(self.path)
            args = parse_qs(url.query)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if url.path == "/set":
                with state.lock:
                    state.values[args["query"][0]] = args["value"][0]
                self._send(200, b"{}")
            elif url.path == "/set-many":  # JSON body {query: value}
                values = json.loads(body or b"{}")
                with state.lock:
                    state.values.update({q: str(v) for q, v in values.items()})
                self._send(200, b"{}")
            else:
                self._send(404, b"{}")

        def _send(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(StandIn()))
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
