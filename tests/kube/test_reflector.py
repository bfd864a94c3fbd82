"""The reflector on its own, against the API sandbox: request parameters, bookmarks, backoff."""

from __future__ import annotations

import logging
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from prometheus_client import CollectorRegistry

from promop.kube.backoff import Backoff
from promop.kube.client import KubeClient
from promop.kube.informer_metrics import informer_metrics
from promop.kube.reflector import Reflector
from promop.host.logs import LogfmtFormatter
from promop.kube.resources import CONFIGMAPS
from deadlines import scaled
from kube.kube_testlib import own_requests, tag, wait_until


@pytest.fixture
def kube(api_client):
    tag(api_client)
    return KubeClient(api_client, qps=0, burst=0, registry=CollectorRegistry())


@pytest.fixture
def reflectors():
    made = []
    yield made
    for r in made:
        r.stop()
        r.join(5)


def start(kube, reflectors, **kw):
    deltas = []
    params = dict(metrics=informer_metrics(CollectorRegistry()), backoff=Backoff(0.02, 0.1), min_watch_duration=0.05)
    params.update(kw)
    r = Reflector(kube, CONFIGMAPS, deltas.append, **params)
    reflectors.append(r)
    r.start()
    return r, deltas


def closed_watch_queries(sandbox, kube):
    """Watches are logged when they end: end them until one shows up."""

    def closed():
        sandbox.faults.close_watches()
        return queries(sandbox, kube, "watch")

    wait_until(closed, what="a watch request")
    return queries(sandbox, kube, "watch")


def queries(sandbox, kube, verb):
    """The query parameters of this test's `verb` requests on ConfigMaps."""
    return [parse_qs(urlsplit(r.path).query) for r in own_requests(sandbox, kube.api_client)
            if r.verb == verb and r.resource == "configmaps"]


def test_list_then_watch_parameters(kube, sandbox, reflectors):
    kube.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}})
    sandbox.reset_requests()
    r, deltas = start(kube, reflectors, namespace="default")
    watch = closed_watch_queries(sandbox, kube)[0]
    [lst] = queries(sandbox, kube, "list")
    assert lst["limit"] == ["500"] and lst["resourceVersion"] == ["0"]  # the watch cache's list, as client-go
    assert watch["allowWatchBookmarks"] == ["true"]
    assert 300 <= int(watch["timeoutSeconds"][0]) < 600
    assert watch["resourceVersion"] == [current_rv(kube)]
    kind, scope, items, initial = deltas[0]
    assert (kind, scope, initial) == ("list", "default", True)
    assert items[0::2] == ["default/a"] and [o["metadata"]["name"] for o in items[1::2]] == ["a"]


def current_rv(kube):
    """The RV the first LIST returned: nothing changed since, so a fresh LIST has it too."""
    return kube.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"]


def test_watch_timeout_range_is_a_parameter(kube, sandbox, reflectors):
    start(kube, reflectors, watch_timeout_range=(1, 2))
    # a 1 s server timeout closes the watch cleanly: re-watched, never relisted
    wait_until(lambda: len(queries(sandbox, kube, "watch")) >= 2, what="two watches")
    assert len(queries(sandbox, kube, "list")) == 1
    assert all(q["timeoutSeconds"] == ["1"] for q in queries(sandbox, kube, "watch"))


def test_bookmarks_advance_the_resource_version(kube, sandbox, reflectors):
    kube.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}})
    r, deltas = start(kube, reflectors, namespace="default")
    wait_until(lambda: r.last_rv is not None)
    other = kube.create(CONFIGMAPS, {"metadata": {"name": "elsewhere", "namespace": "kube-system"}})
    # only a bookmark can tell this watch about a change in another namespace
    wait_until(lambda: int(r.last_rv) >= int(other["metadata"]["resourceVersion"]), timeout=5,
               what="a bookmark past the other namespace's change")
    assert all(d[0] == "list" for d in deltas)


def test_failures_back_off_instead_of_spinning(kube, sandbox, reflectors):
    sandbox.faults.fail_next(10**6, 500, verb="list")
    started = time.monotonic()
    r, _ = start(kube, reflectors, backoff=Backoff(0.1, 0.4, rng=lambda: 0.0))
    wait_until(lambda: len(queries(sandbox, kube, "list")) >= 5, what="five LIST attempts")
    # delays 0.1 + 0.2 + 0.4 + 0.4 between the five attempts
    assert time.monotonic() - started >= 1.0
    assert r.backoff.failures >= 4


def test_retry_after_is_honoured(kube, sandbox, reflectors):
    sandbox.faults.fail_next(1, 429, verb="list", retry_after=1)
    started = time.monotonic()
    start(kube, reflectors)
    wait_until(lambda: len(queries(sandbox, kube, "list")) == 2, what="the retried LIST")
    assert time.monotonic() - started >= 0.9


def test_stop_interrupts_a_backoff_wait(kube, sandbox, reflectors):
    sandbox.faults.fail_next(10**6, 500, verb="list")
    r, _ = start(kube, reflectors, backoff=Backoff(30, 30))
    wait_until(lambda: queries(sandbox, kube, "list"), what="the first LIST")
    r.stop()
    assert r.join(scaled(2))  # not the 30 s backoff


def test_a_failing_transform_keeps_the_object_and_logs_fields(kube, reflectors, caplog):
    kube.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}, "data": {"k": "v"}})

    def transform(obj):
        raise RuntimeError("bug in the hook")

    caplog.set_level(logging.ERROR, logger="promop.kube.reflector")
    r, deltas = start(kube, reflectors, namespace="default", transform=transform)
    wait_until(lambda: deltas, what="the first LIST")
    assert deltas[0][2][1]["data"] == {"k": "v"}
    # The message is a plain sentence; the details are structured fields, which the
    # operator's formatter renders as logfmt/JSON keys (not a logfmt string in msg).
    record = next(r for r in caplog.records if "transform failed" in r.getMessage())
    assert record.getMessage() == "informer transform failed; keeping the object untransformed"
    assert record.kv == {"informer": r.name, "namespace": "default", "name": "a", "err": "bug in the hook"}
    line = LogfmtFormatter().format(record)
    assert 'msg="informer transform failed; keeping the object untransformed"' in line
    assert "namespace=default name=a" in line and 'err="bug in the hook"' in line


def test_repeated_gone_backs_off(kube, sandbox, reflectors):
    # Four watches in a row get 410; the fifth stays open. The first 410 relists at
    # once; each later one, coming right after a relist, waits 0.1, 0.2, then 0.4 s.
    sandbox.faults.fail_next(4, 410, verb="watch")
    started = time.monotonic()
    r, deltas = start(kube, reflectors, backoff=Backoff(0.1, 0.4, rng=lambda: 0.0))
    wait_until(lambda: len(queries(sandbox, kube, "list")) >= 5 and sandbox.faults.pending() == 0,
               what="five LISTs and the four 410s served", timeout=30)
    assert r.backoff.failures == 3, "three backoffs: the first 410 relists at once"
    kube.create(CONFIGMAPS, {"metadata": {"name": "after", "namespace": "default"}})
    wait_until(lambda: any(d[0] == "event" for d in deltas), what="an event through the fifth watch")
    assert len(queries(sandbox, kube, "list")) == 5
    # a lower bound only: a loaded machine makes it slower, never faster
    assert time.monotonic() - started >= 0.7 - 0.05
