"""Which resourceVersion and paging each LIST of the reflector uses: client-go's rules.

client-go's reflector (reference/client-go.md §2.1): the first list RV="0" (the
watch cache), relists at the last RV seen with paging off, a list that gets 410 or
"Too large resource version" listed again at once with RV="" (consistent, paged),
and paging kept on when the RV="0" answer came back paginated (no watch cache).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from prometheus_client import CollectorRegistry

from promop.kube.backoff import Backoff
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, Gone
from promop.kube.informer_metrics import informer_metrics
from promop.kube.reflector import Reflector, rv_unavailable_error
from promop.kube.resources import CONFIGMAPS
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
    params = dict(metrics=informer_metrics(CollectorRegistry()), backoff=Backoff(0.02, 0.1),
                  min_watch_duration=0.05, namespace="default")
    params.update(kw)
    r = Reflector(kube, CONFIGMAPS, deltas.append, **params)
    reflectors.append(r)
    r.start()
    return r, deltas


def lists(sandbox, kube):
    return [parse_qs(urlsplit(r.path).query) for r in own_requests(sandbox, kube.api_client)
            if r.verb == "list" and r.resource == "configmaps"]


def make(kube, *names):
    for name in names:
        kube.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": "default"}})


def listed_names(delta):
    return sorted(o["metadata"]["name"] for o in delta[2][1::2])


def relist_after_a_watch_error(sandbox, kube, r, deltas):
    """A 500 on the next watch makes the reflector relist; wait for that relist's delta."""
    before = len([d for d in deltas if d[0] == "list"])
    sandbox.faults.fail_next(1, 500, verb="watch", resource="configmaps")
    sandbox.faults.close_watches()
    wait_until(lambda: len([d for d in deltas if d[0] == "list"]) > before, what="the relist")


def test_first_list_is_rv0_served_whole_by_the_watch_cache(kube, sandbox, reflectors):
    make(kube, "a", "b", "c")
    sandbox.reset_requests()
    r, deltas = start(kube, reflectors, page_size=2)
    wait_until(lambda: deltas, what="the first LIST")
    [first] = lists(sandbox, kube)  # RV=0 ignores limit: one request for three objects
    assert first["resourceVersion"] == ["0"] and first["limit"] == ["2"]
    assert listed_names(deltas[0]) == ["a", "b", "c"]
    assert r.paginated_result is False


def test_relist_is_at_the_last_rv_without_paging(kube, sandbox, reflectors):
    make(kube, "a")
    r, deltas = start(kube, reflectors, page_size=2)
    wait_until(lambda: r.last_rv is not None, what="the first LIST")
    make(kube, "b", "c")
    wait_until(lambda: sum(d[0] == "event" for d in deltas) >= 2, what="two watch events")
    seen = r.last_rv
    sandbox.reset_requests()
    relist_after_a_watch_error(sandbox, kube, r, deltas)
    [relist] = lists(sandbox, kube)
    # the last RV seen: at least the last event's (a bookmark may have moved it on since)
    assert int(relist["resourceVersion"][0]) >= int(seen) and "limit" not in relist
    assert listed_names(deltas[-1]) == ["a", "b", "c"]


def test_410_on_a_relist_lists_again_at_once_consistent_and_paged(kube, sandbox, reflectors):
    make(kube, "a", "b", "c")
    r, deltas = start(kube, reflectors, page_size=2)
    wait_until(lambda: r.last_rv is not None, what="the first LIST")
    seen = r.last_rv
    sandbox.reset_requests()
    sandbox.faults.fail_next(1, 410, verb="list", resource="configmaps")
    relist_after_a_watch_error(sandbox, kube, r, deltas)
    expired, consistent, second_page = lists(sandbox, kube)
    assert int(expired["resourceVersion"][0]) >= int(seen)  # lastSyncRV, not "0" or ""
    assert "resourceVersion" not in consistent and consistent["limit"] == ["2"]
    assert "continue" in second_page and "resourceVersion" not in second_page
    assert listed_names(deltas[-1]) == ["a", "b", "c"]
    assert r.rv_unavailable is False  # the consistent list worked: back to lastSyncRV next time
    assert r.relist_resource_version() == r.last_rv


def test_too_large_resource_version_counts_as_unavailable(kube):
    """The sandbox answers as the apiserver does (504, cause ResourceVersionTooLarge)."""
    with pytest.raises(ApiError) as caught:
        kube.list(CONFIGMAPS, "default", resource_version="999999999")
    assert rv_unavailable_error(caught.value)
    assert rv_unavailable_error(Gone("too old resource version: 1 (2)"))
    assert not rv_unavailable_error(ApiError("Timeout: request did not complete", status=504, reason="Timeout"))
    assert not rv_unavailable_error(ApiError("boom", status=500))


class ScriptedClient:
    """A client without a watch cache: every list_paged answer says it was paginated."""

    def __init__(self):
        self.calls = []

    def list_paged(self, res, namespace, *, page_size, resource_version=None, **kw):
        self.calls.append((resource_version, page_size))
        return [], str(10 + len(self.calls)), True

    def watch(self, *a, **kw):
        raise ApiError("watch refused", status=500)  # any other error: relist


class ExpiringClient:
    """The last RV is compacted away: watches and lists at it get 410; RV="" works."""

    def __init__(self):
        self.calls = []

    def list_paged(self, res, namespace, *, page_size, resource_version=None, **kw):
        self.calls.append((resource_version, page_size))
        if resource_version not in (None, "0"):
            raise Gone("too old resource version")
        return [], str(10 + len(self.calls)), False

    def watch(self, *a, **kw):
        raise Gone("too old resource version")


def test_a_410_list_is_retried_at_once_with_a_consistent_read(reflectors):
    client = ExpiringClient()
    r = Reflector(client, CONFIGMAPS, lambda d: None, metrics=informer_metrics(CollectorRegistry()),
                  backoff=Backoff(30, 30), page_size=7)  # any backoff before the retry times this out
    reflectors.append(r)
    r.start()
    wait_until(lambda: len(client.calls) >= 3, what="three LISTs")
    r.stop()
    assert client.calls[:3] == [("0", 7), ("11", 0), (None, 7)]
    assert r.last_rv == "13" and r.rv_unavailable is False


def test_a_paginated_rv0_answer_keeps_paging_on_relists(reflectors):
    client = ScriptedClient()
    r = Reflector(client, CONFIGMAPS, lambda d: None, metrics=informer_metrics(CollectorRegistry()),
                  backoff=Backoff(0.01, 0.01), page_size=7)
    reflectors.append(r)
    r.start()
    wait_until(lambda: len(client.calls) >= 3, what="three LISTs")
    r.stop()
    assert client.calls[0] == ("0", 7)
    assert client.calls[1] == ("11", 7) and client.calls[2] == ("12", 7)  # not page_size 0
    assert r.paginated_result is True


def test_list_paged_reports_pages_and_sends_rv_on_the_first_request_only(kube, sandbox):
    make(kube, "a", "b", "c")
    sandbox.reset_requests()
    items, rv, paginated = kube.list_paged(CONFIGMAPS, "default", page_size=2, resource_version="1")
    assert [o["metadata"]["name"] for o in items] == ["a", "b", "c"] and paginated
    first, second = lists(sandbox, kube)
    assert first["resourceVersion"] == ["1"] and "resourceVersion" not in second
    _, _, whole = kube.list_paged(CONFIGMAPS, "default", page_size=2, resource_version="0")
    assert whole is False
    _, _, unpaged = kube.list_paged(CONFIGMAPS, "default", page_size=0)
    assert unpaged is False and "limit" not in lists(sandbox, kube)[-1]
