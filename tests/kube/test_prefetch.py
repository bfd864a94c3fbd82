"""promop.kube.prefetch: a reflector's first LIST answered by a request sent earlier, exactly once,
only for the very same request, never when stale or failed; the informer's view is the same."""

from __future__ import annotations

import threading
from urllib.parse import parse_qs, urlsplit

import pytest
from prometheus_client import CollectorRegistry

from promop.kube import prefetch
from promop.kube.backoff import Backoff
from promop.kube.client import KubeClient
from promop.kube.informer_metrics import informer_metrics
from promop.kube.reflector import Reflector
from promop.kube.resources import CONFIGMAPS, Resource
from kube.kube_testlib import own_requests, tag, wait_until


@pytest.fixture(autouse=True)
def no_leftovers():
    prefetch.clear()
    yield
    prefetch.clear()


@pytest.fixture
def kube(api_client):
    tag(api_client)
    return KubeClient(api_client, qps=0, burst=0, registry=CollectorRegistry())


@pytest.fixture
def early(sandbox):
    """A second client, as `promop run`'s early thread has: its own connection and User-Agent."""
    api = sandbox.api_client()
    tag(api)
    client = KubeClient(api, qps=0, burst=0, registry=CollectorRegistry())
    yield client
    client.close()


@pytest.fixture
def reflectors():
    made = []
    yield made
    for r in made:
        r.stop()
        r.join(5)


def start(kube, reflectors, **kw):
    deltas: list = []
    params = dict(metrics=informer_metrics(CollectorRegistry()), backoff=Backoff(0.02, 0.1),
                  min_watch_duration=0.05, namespace="default")
    params.update(kw)
    r = Reflector(kube, CONFIGMAPS, deltas.append, **params)
    reflectors.append(r)
    r.start()
    return r, deltas


def make(kube, *names):
    for name in names:
        kube.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": "default"}})


def own_lists(sandbox, client):
    return [r for r in own_requests(sandbox, client.api_client) if r.verb == "list" and r.resource == "configmaps"]


def listed(deltas):
    return sorted(o["metadata"]["name"] for o in next(d for d in deltas if d[0] == "list")[2][1::2])


def test_first_list_is_taken_from_the_prefetch_and_what_changed_since_comes_by_watch(kube, early, sandbox,
                                                                                     reflectors):
    make(kube, "a", "b")
    [t] = prefetch.first_lists(early, [CONFIGMAPS], "default", page_size=500)
    t.join(5)
    make(kube, "c")   # after the prefetched answer: must come as a watch event
    r, deltas = start(kube, reflectors)
    wait_until(lambda: any(d[0] == "list" for d in deltas), what="the first LIST")
    assert listed(deltas) == ["a", "b"]     # the prefetched answer, not a new LIST
    assert own_lists(sandbox, kube) == []
    [sent] = own_lists(sandbox, early)
    q = parse_qs(urlsplit(sent.path).query)
    assert q["resourceVersion"] == ["0"] and q["limit"] == ["500"]
    wait_until(lambda: any(d[0] != "list" and "'c'" in repr(d) for d in deltas), what="c by watch")
    assert prefetch.pending() == []


def test_an_answer_is_taken_once(kube, early, sandbox, reflectors):
    make(kube, "a")
    [t] = prefetch.first_lists(early, [CONFIGMAPS], "default")
    t.join(5)
    _, first = start(kube, reflectors)
    wait_until(lambda: first, what="the first reflector's LIST")
    make(kube, "b")
    _, second = start(kube, reflectors)
    wait_until(lambda: second, what="the second reflector's LIST")
    assert listed(second) == ["a", "b"]          # its own, fresh LIST
    assert len(own_lists(sandbox, kube)) == 1


@pytest.mark.parametrize("mismatch", [{"namespace": "kube-system"}, {"page_size": 100},
                                      {"label_selector": "app=x"}, {"field_selector": "metadata.name!=a"}])
def test_only_the_very_same_request_takes_it(kube, early, sandbox, reflectors, mismatch):
    make(kube, "a")
    [t] = prefetch.first_lists(early, [CONFIGMAPS], "default", max_age=30)
    t.join(5)
    _, deltas = start(kube, reflectors, **mismatch)
    wait_until(lambda: deltas, what="the LIST")
    assert len(own_lists(sandbox, kube)) == 1
    assert prefetch.pending() == ["/api/v1/namespaces/default/configmaps"]   # still waiting for its informer


def test_an_answer_not_asked_for_in_time_is_dropped(kube, early, sandbox, reflectors):
    make(kube, "a")
    [t] = prefetch.first_lists(early, [CONFIGMAPS], "default", max_age=0.2)
    t.join(5)
    wait_until(lambda: prefetch.pending() == [], what="the answer dropped")
    _, deltas = start(kube, reflectors)
    wait_until(lambda: deltas, what="the LIST")
    assert len(own_lists(sandbox, kube)) == 1


def test_a_failed_prefetch_leaves_the_informer_its_own_request(kube, early, sandbox, reflectors):
    missing = Resource("nope.example.com", "v1", "widgets", kind="Widget")
    [t] = prefetch.first_lists(early, [missing], "default")
    t.join(5)
    assert prefetch.pending() == []
    assert prefetch.take(kube.list_key(missing, "default", limit=500, resource_version="0"), wait=0.1) is None
    sandbox.faults.fail_next(1, 500, verb="list", resource="configmaps")
    make(kube, "a")
    [t] = prefetch.first_lists(early, [CONFIGMAPS], "default")
    t.join(5)
    _, deltas = start(kube, reflectors)
    wait_until(lambda: deltas, what="the LIST")
    assert listed(deltas) == ["a"] and len(own_lists(sandbox, kube)) == 1


def test_a_prefetch_still_in_flight_is_waited_for_not_sent_again(kube, early, sandbox, reflectors):
    make(kube, "a")
    sandbox.faults.add_latency(0.5, verb="list", resource="configmaps")
    threads = prefetch.first_lists(early, [CONFIGMAPS], "default")
    _, deltas = start(kube, reflectors)     # asks while the prefetch waits on the apiserver
    wait_until(lambda: deltas, what="the LIST")
    assert listed(deltas) == ["a"]
    assert own_lists(sandbox, kube) == [] and len(own_lists(sandbox, early)) == 1
    assert all(not t.is_alive() for t in threads)


def test_take_and_expiry_race_hand_the_answer_to_at_most_one(early, sandbox):
    make(early, "a")
    key = early.list_key(CONFIGMAPS, "default", limit=500, resource_version="0")
    for _ in range(20):
        [t] = prefetch.first_lists(early, [CONFIGMAPS], "default")
        t.join(5)
        got: list = []
        racers = [threading.Thread(target=lambda: got.append(prefetch.take(key))) for _ in range(4)]
        for r in racers:
            r.start()
        for r in racers:
            r.join(5)
        assert sum(1 for g in got if g is not None) == 1
