"""A running webhook for the admission tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def webhook():
    """An in-process webhook over plain HTTP (TLS has its own tests); yields (base URL, server)."""
    from promop.admission.server import Options, WebhookServer

    def start(scheme: str = "legacy") -> str:
        server = WebhookServer("127.0.0.1", 0, None, Options(scheme)).start()
        started.append(server)
        return f"http://127.0.0.1:{server.port}"

    started: list = []
    yield start
    for s in started:
        s.stop()
