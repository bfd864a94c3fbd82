"""The autoscaling demo's simulated exporter stays quiet when its scraper goes away mid-answer
(Ctrl-C stops Prometheus while a scrape is in flight): no BrokenPipeError traceback (issue 21 §7)."""

from __future__ import annotations

import socket
import struct
import threading

from deadlines import scaled

from promop.demos.autoscaling import MemoryExporter


def test_a_scraper_that_resets_the_connection_gets_no_traceback():
    exporter = MemoryExporter()
    closed, done, errors = threading.Event(), threading.Event(), []
    real_text, real_shutdown = exporter.text, exporter.server.shutdown_request
    exporter.text = lambda: (closed.wait(scaled(10)), real_text())[1]  # answer only once the client is gone
    exporter.server.handle_error = lambda request, address: errors.append(address)

    def shutdown_request(request) -> None:
        real_shutdown(request)
        done.set()

    exporter.server.shutdown_request = shutdown_request
    try:
        client = socket.create_connection(("127.0.0.1", exporter.port))
        client.sendall(b"GET /metrics HTTP/1.1\r\nHost: demo\r\n\r\n")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        client.close()
        closed.set()
        assert done.wait(scaled(10)), "the handler never finished"
        assert errors == []
    finally:
        exporter.close()


def test_a_normal_scrape_is_answered():
    exporter = MemoryExporter()
    exporter.pods = ["web-1"]
    try:
        with socket.create_connection(("127.0.0.1", exporter.port)) as client:
            client.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            answer = b"".join(iter(lambda: client.recv(65536), b""))
        assert answer.startswith(b"HTTP/1.0 200") and b'pod="web-1"' in answer
    finally:
        exporter.close()
