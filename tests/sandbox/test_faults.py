"""Fault injection and request accounting."""

from __future__ import annotations

import json
import time

import pytest
import urllib3
from kubernetes import client
from kubernetes.client import ApiException
from deadlines import scaled

from .helpers import configmap
from .test_watch import raw_stream, read_events


@pytest.mark.parametrize("code, reason", [(429, "TooManyRequests"), (500, "InternalError"),
                                          (503, "ServiceUnavailable")])
def test_fail_next_matching_requests(sandbox, core, code, reason):
    sandbox.faults.fail_next(2, code, verb="list", resource="configmaps")
    core.list_namespaced_secret("default")  # another resource: unaffected
    for _ in range(2):
        with pytest.raises(ApiException) as excinfo:
            core.list_namespaced_config_map("default")
        assert excinfo.value.status == code
        status = json.loads(excinfo.value.body)
        assert status["reason"] == reason and status["kind"] == "Status"
    core.list_namespaced_config_map("default")  # the third succeeds


def test_pending_counts_failures_not_yet_served(sandbox, core):
    assert sandbox.faults.pending() == 0
    sandbox.faults.fail_next(2, 500, verb="list", resource="configmaps")
    sandbox.faults.fail_next(1, 503, verb="get")
    assert sandbox.faults.pending() == 3
    core.list_namespaced_secret("default")  # matches neither rule
    assert sandbox.faults.pending() == 3
    with pytest.raises(ApiException):
        core.list_namespaced_config_map("default")
    assert sandbox.faults.pending() == 2
    sandbox.faults.clear()
    assert sandbox.faults.pending() == 0


def test_429_carries_retry_after(sandbox, api_client):
    sandbox.faults.fail_next(1, 429, verb="list", resource="configmaps", retry_after=7)
    response = api_client.rest_client.pool_manager.request(
        "GET", f"{sandbox.url}/api/v1/namespaces/default/configmaps", retries=False)
    assert response.status == 429
    assert response.headers["Retry-After"] == "7"
    assert json.loads(response.data)["details"]["retryAfterSeconds"] == 7


def test_real_client_retries_429_with_retry_after(sandbox, core):
    sandbox.faults.fail_next(1, 429, verb="list", resource="configmaps", retry_after=0)
    sandbox.reset_requests()
    core.list_namespaced_config_map("default")
    assert [r.code for r in sandbox.requests] == [429, 200]


def test_fail_next_without_filters_hits_any_request(sandbox, core):
    sandbox.faults.fail_next(1, 500)
    with pytest.raises(ApiException) as excinfo:
        core.create_namespaced_config_map("default", configmap("a"))
    assert excinfo.value.status == 500
    core.create_namespaced_config_map("default", configmap("a"))


def test_failures_without_retry_after_have_no_header(sandbox, core):
    sandbox.faults.fail_next(1, 429, verb="get")
    with pytest.raises(ApiException) as excinfo:
        core.read_namespace("default")
    assert "Retry-After" not in excinfo.value.headers


def test_latency(sandbox, core):
    # generous numbers: an unaffected request must stay under the injected delay even on a
    # loaded 2-core CI machine (1 s at a load of 15 was not always enough)
    delay = scaled(1.0)
    sandbox.faults.add_latency(delay, verb="list", resource="configmaps")
    start = time.monotonic()
    core.list_namespaced_secret("default")
    assert time.monotonic() - start < delay
    start = time.monotonic()
    core.list_namespaced_config_map("default")
    assert time.monotonic() - start >= delay
    sandbox.faults.clear()
    start = time.monotonic()
    core.list_namespaced_config_map("default")
    assert time.monotonic() - start < delay


def _wait_for_watchers(sandbox, count: int = 1) -> None:
    deadline = time.monotonic() + scaled(10)
    while len(sandbox.store.all_watchers()) < count:
        assert time.monotonic() < deadline, "the watch never registered"
        time.sleep(0.01)


def test_close_watches_ends_streams_cleanly(sandbox, core):
    response = raw_stream(core, timeout_seconds=60)
    _wait_for_watchers(sandbox)
    start = time.monotonic()
    sandbox.faults.close_watches()
    assert response.read() == b""  # a clean end of the chunked stream, not a reset
    assert time.monotonic() - start < 30  # at once, not at timeoutSeconds


def test_stalled_watches_deliver_after_unstall(sandbox, core):
    sandbox.bookmark_interval = 0.05
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    sandbox.faults.stall_watches(True)
    response = raw_stream(core, resource_version=rv, allow_watch_bookmarks=True,
                          timeout_seconds=30)
    core.create_namespaced_config_map("default", configmap("queued"))
    # nothing arrives while stalled: not even bookmarks
    assert not _readable(response, 0.4)
    sandbox.faults.stall_watches(False)
    [event] = read_events(response, 1)
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "queued"


def _readable(response, seconds: float) -> bool:
    import select

    sock = response.connection.sock
    return bool(select.select([sock], [], [], seconds)[0])


def test_restart_keeps_state_and_port(sandbox, core):
    made = core.create_namespaced_config_map("default", configmap("kept"))
    port = sandbox.port
    sandbox.restart()
    assert sandbox.port == port
    got = core.read_namespaced_config_map("kept", "default")
    assert got.metadata.resource_version == made.metadata.resource_version


def test_a_stopped_sandbox_keeps_its_port_from_other_servers_until_it_restarts():
    """stop(keep_port=True): the port stays bound, never listening, so a client of the stopped
    sandbox gets a refused connection and the kernel hands the port to no other socket (bind(0)
    skips it, a plain bind fails); start() takes it back; leaving the `with` block frees it."""
    import socket

    from promop.sandbox import Sandbox

    def plain_bind(port: int) -> bool:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
            return True

    def reuse_listen(port: int) -> bool:  # as servers do (past TIME_WAIT)
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                s.listen()
            except OSError:
                return False
            return True

    with Sandbox(port=0) as sb:
        port = sb.port
        assert client.CoreV1Api(sb.api_client()).list_namespace().items
        sb.stop(keep_port=True)
        assert not plain_bind(port), "the stopped sandbox's port was free for anyone"
        with pytest.raises(urllib3.exceptions.MaxRetryError) as excinfo:
            client.CoreV1Api(sb.api_client()).list_namespace(_request_timeout=2)
        assert isinstance(excinfo.value.reason, urllib3.exceptions.NewConnectionError)
        sb.start()
        assert sb.port == port and client.CoreV1Api(sb.api_client()).list_namespace().items
        sb.stop(keep_port=True)
    assert reuse_listen(port), "leaving the with block must free the port"


def test_stop_refuses_connections_and_ends_watches(sandbox, core):
    response = raw_stream(core, timeout_seconds=30)
    sandbox.stop(keep_port=True)
    assert response.read() == b""
    with pytest.raises(urllib3.exceptions.MaxRetryError) as excinfo:
        client.CoreV1Api(sandbox.api_client()).list_namespace(_request_timeout=2)
    assert isinstance(excinfo.value.reason, urllib3.exceptions.NewConnectionError)
    sandbox.start()
    assert core.list_namespace().items


def test_stop_ends_a_watch_that_registers_while_stopping(sandbox, core, monkeypatch):
    """The watch's headers are out but its handler has not registered yet when stop() closes
    the open watches: it must still end cleanly, not be cut mid-stream."""
    register = sandbox.store.add_watcher
    server = sandbox._server

    def late_register(watcher, since):
        deadline = time.monotonic() + 10
        while not server.stopping and time.monotonic() < deadline:
            time.sleep(0.001)
        register(watcher, since)

    monkeypatch.setattr(sandbox.store, "add_watcher", late_register)
    response = raw_stream(core, timeout_seconds=60)
    start = time.monotonic()
    sandbox.stop()
    assert response.read() == b""
    assert time.monotonic() - start < 30


def test_request_accounting(sandbox, core):
    sandbox.reset_requests()
    core.create_namespaced_config_map("default", configmap("a"))
    core.read_namespaced_config_map("a", "default")
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    core.list_namespaced_config_map("default")
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("missing", "default")
    records = sandbox.requests
    assert [r.verb for r in records] == ["create", "get", "patch", "list", "get"]
    assert records[0].resource == "configmaps" and records[0].namespace == "default"
    assert records[0].code == 201 and records[-1].code == 404
    assert records[1].name == "a" and records[1].group == "" and records[1].version == "v1"
    assert "OpenAPI-Generator" in records[0].user_agent
    assert sandbox.count_requests(write_only=True) == 2
    assert sandbox.count_requests(verb="get", resource="configmaps") == 2
    assert sandbox.count_requests(resource="secrets") == 0
    sandbox.reset_requests()
    assert sandbox.requests == []


def test_open_watches_are_counted_while_open(sandbox, core):
    sandbox.reset_requests()
    response = raw_stream(core, timeout_seconds=30)
    deadline = time.monotonic() + scaled(5)
    while sandbox.count_requests(verb="watch", resource="configmaps") != 1:
        assert time.monotonic() < deadline, "the open watch was never recorded"
        time.sleep(0.01)
    assert sandbox.requests[0].code == 200
    sandbox.faults.close_watches()
    response.read()
    assert sandbox.count_requests(verb="watch") == 1


def test_the_sandboxs_own_controllers_are_not_watch_streams(sandbox, core):
    """The disruption controller's feeds are not clients' streams: they are not counted or closed as such (the
    test above waited for "a watcher" and found the controller's, then closed it before the client's opened)."""
    assert sandbox.store.all_watchers() == []
    response = raw_stream(core, timeout_seconds=60)
    _wait_for_watchers(sandbox)
    assert len(sandbox.store.all_watchers()) == 1
    sandbox.faults.close_watches()
    assert response.read() == b""
