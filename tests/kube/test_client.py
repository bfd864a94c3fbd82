"""KubeClient against the API sandbox over HTTP: CRUD, patches, CRDs and subresources,
paging, metadata-only reads, watches, error mapping, QPS limit, metrics and configuration."""

from __future__ import annotations

import threading
import time

import pytest
from deadlines import scaled
from prometheus_client import CollectorRegistry

from promop.kube import errors
from promop.kube.client import KubeClient
from promop.kube.resources import CONFIGMAPS, CRDS, NAMESPACES, STATEFULSETS, Resource

WIDGETS = Resource("example.com", "v1", "widgets", kind="Widget")


@pytest.fixture
def registry():
    return CollectorRegistry()


@pytest.fixture
def kube(api_client, registry):
    return KubeClient(api_client, qps=0, burst=0, registry=registry)


def cm(name, ns="default", **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


def sample(registry, name, **labels):
    return registry.get_sample_value(name, labels) or 0.0


def test_crud_roundtrip(kube):
    created = kube.create(CONFIGMAPS, cm("a", k="v"))
    assert created["metadata"]["resourceVersion"] and created["data"] == {"k": "v"}
    got = kube.get(CONFIGMAPS, "a", "default")
    assert got["data"] == {"k": "v"} and isinstance(got, dict)
    got["data"]["k"] = "v2"
    updated = kube.update(CONFIGMAPS, got)
    assert updated["data"] == {"k": "v2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    kube.delete(CONFIGMAPS, "a", "default")
    with pytest.raises(errors.NotFound):
        kube.get(CONFIGMAPS, "a", "default")


def test_patch_types(kube):
    kube.create(CONFIGMAPS, cm("p", a="1"))
    assert kube.patch(CONFIGMAPS, "p", {"data": {"b": "2"}}, "default")["data"] == {"a": "1", "b": "2"}
    out = kube.patch(CONFIGMAPS, "p", [{"op": "remove", "path": "/data/a"}], "default", patch_type="json")
    assert out["data"] == {"b": "2"}
    out = kube.patch(CONFIGMAPS, "p", {"metadata": {"labels": {"x": "y"}}}, "default", patch_type="strategic")
    assert out["metadata"]["labels"] == {"x": "y"}
    with pytest.raises(ValueError, match="list of operations"):
        kube.patch(CONFIGMAPS, "p", {"op": "remove"}, "default", patch_type="json")
    with pytest.raises(ValueError, match="not one of"):
        kube.patch(CONFIGMAPS, "p", {}, "default", patch_type="yaml")


def test_cluster_scoped_and_namespace_required(kube):
    kube.create(NAMESPACES, {"metadata": {"name": "team-a"}})
    assert kube.get(NAMESPACES, "team-a")["metadata"]["name"] == "team-a"
    names = {o["metadata"]["name"] for o in kube.list(NAMESPACES)["items"]}
    assert {"default", "team-a"} <= names
    with pytest.raises(ValueError, match="needs a namespace"):
        kube.get(CONFIGMAPS, "x")


def test_crd_and_status_subresource(kube):
    kube.create(CRDS, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }],
        },
    })
    deadline = time.monotonic() + 10
    while True:  # a CRD is served once established
        try:
            kube.list(WIDGETS, "default")
            break
        except errors.NotFound:
            assert time.monotonic() < deadline, "CRD never served"
            time.sleep(0.05)
    w = kube.create(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                              "metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": 3}})
    w["status"] = {"ready": True}
    kube.update(WIDGETS, w, subresource="status")
    got = kube.get(WIDGETS, "w1", "default")
    assert got["status"] == {"ready": True} and got["spec"] == {"size": 3}
    items, _ = kube.list_all(WIDGETS)
    assert [(i["kind"], i["apiVersion"]) for i in items] == [("Widget", "example.com/v1")]


def test_statefulset_status_patch(kube):
    kube.create(STATEFULSETS, {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "default"},
        "spec": {"replicas": 1, "serviceName": "s", "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    })
    kube.patch(STATEFULSETS, "s", {"status": {"replicas": 1, "readyReplicas": 1}}, "default", subresource="status")
    assert kube.get(STATEFULSETS, "s", "default")["status"]["readyReplicas"] == 1


def test_errors_are_mapped(kube, sandbox):
    kube.create(CONFIGMAPS, cm("e"))
    with pytest.raises(errors.AlreadyExists) as exc:
        kube.create(CONFIGMAPS, cm("e"))
    assert isinstance(exc.value, errors.Conflict) and exc.value.status == 409
    assert "POST /api/v1/namespaces/default/configmaps" in str(exc.value)
    stale = kube.get(CONFIGMAPS, "e", "default")
    kube.patch(CONFIGMAPS, "e", {"data": {"x": "1"}}, "default")
    with pytest.raises(errors.Conflict) as exc:
        kube.update(CONFIGMAPS, stale)
    assert not isinstance(exc.value, errors.AlreadyExists) and exc.value.reason == "Conflict"
    with pytest.raises(errors.Invalid) as exc:
        kube.create(CONFIGMAPS, cm("Not_A_Valid_Name"))
    assert exc.value.status == 422 and exc.value.body["kind"] == "Status"
    with pytest.raises(errors.NotFound) as exc:
        kube.get(CONFIGMAPS, "missing", "default")
    assert exc.value.reason == "NotFound" and "missing" in exc.value.message

    sandbox.faults.fail_next(1, 429, verb="get", resource="configmaps", retry_after=3)
    with pytest.raises(errors.TooManyRequests) as exc:
        kube.get(CONFIGMAPS, "e", "default")
    assert exc.value.retry_after == 3
    sandbox.faults.fail_next(1, 500, verb="list")
    with pytest.raises(errors.ServerError) as exc:
        kube.list(CONFIGMAPS)
    assert exc.value.status == 500
    sandbox.faults.fail_next(1, 410, verb="list")
    with pytest.raises(errors.Gone):
        kube.list(CONFIGMAPS)
    sandbox.faults.fail_next(1, 403, verb="delete")
    with pytest.raises(errors.Forbidden, match="RBAC"):
        kube.delete(CONFIGMAPS, "e", "default")


def test_unreachable(kube, sandbox):
    sandbox.stop(keep_port=True)  # no parallel test's server can answer on it
    with pytest.raises(errors.ApiUnreachable) as exc:
        kube.get(CONFIGMAPS, "x", "default")
    assert exc.value.status == 0 and "127.0.0.1" in str(exc.value)


def test_delete_options(kube):
    created = kube.create(CONFIGMAPS, cm("d"))
    with pytest.raises(errors.Conflict):
        kube.delete(CONFIGMAPS, "d", "default", preconditions={"uid": "not-the-uid"})
    kube.delete(CONFIGMAPS, "d", "default", propagation_policy="Foreground",
                preconditions={"uid": created["metadata"]["uid"]})
    # as on a cluster, the garbage collector removes a Foreground-deleted object shortly after
    deadline = time.monotonic() + 10
    while True:
        try:
            kube.get(CONFIGMAPS, "d", "default")
        except errors.NotFound:
            break
        assert time.monotonic() < deadline, "the Foreground-deleted object never went"
        time.sleep(0.01)


def test_list_pages_and_selectors(kube, sandbox):
    for i in range(7):
        body = cm(f"c{i}")
        body["metadata"]["labels"] = {"parity": "even" if i % 2 == 0 else "odd"}
        kube.create(CONFIGMAPS, body)
    page = kube.list(CONFIGMAPS, "default", limit=3)
    assert len(page["items"]) == 3 and page["metadata"]["continue"]
    page2 = kube.list(CONFIGMAPS, "default", limit=3, continue_token=page["metadata"]["continue"])
    assert {i["metadata"]["name"] for i in page2["items"]}.isdisjoint({i["metadata"]["name"] for i in page["items"]})
    sandbox.reset_requests()
    items, rv = kube.list_all(CONFIGMAPS, "default", page_size=3)
    assert sorted(i["metadata"]["name"] for i in items) == [f"c{i}" for i in range(7)]
    assert rv and sandbox.count_requests(verb="list", resource="configmaps") == 3
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in items)
    odd, _ = kube.list_all(CONFIGMAPS, "default", label_selector="parity=odd")
    assert sorted(i["metadata"]["name"] for i in odd) == ["c1", "c3", "c5"]
    some, _ = kube.list_all(CONFIGMAPS, "default", label_selector="parity in (even),parity notin (odd)")
    assert len(some) == 4
    named, _ = kube.list_all(CONFIGMAPS, field_selector="metadata.name=c2")
    assert [i["metadata"]["name"] for i in named] == ["c2"]


def test_list_all_falls_back_to_a_full_list_when_the_continue_token_expires(kube, sandbox):
    for i in range(5):
        kube.create(CONFIGMAPS, cm(f"x{i}"))

    class ExpiringClient(KubeClient):
        def _list_data(self, res, namespace=None, **kw):
            if kw.get("continue_token"):
                sandbox.faults.fail_next(1, 410, verb="list")  # the token "expired"
            return super()._list_data(res, namespace, **kw)

    flaky = ExpiringClient(kube.api_client, qps=0, burst=0, registry=CollectorRegistry())
    sandbox.reset_requests()
    items, rv = flaky.list_all(CONFIGMAPS, "default", page_size=2)
    assert sorted(i["metadata"]["name"] for i in items) == [f"x{i}" for i in range(5)]
    assert rv
    codes = [r.code for r in sandbox.requests if r.verb == "list"]
    assert codes == [200, 410, 200]


def test_list_all_pages_in_order_one_request_per_page(kube, sandbox):
    for i in range(7):
        kube.create(CONFIGMAPS, cm(f"p{i}"))
    sandbox.reset_requests()
    items, rv = kube.list_all(CONFIGMAPS, "default", page_size=2)
    assert [o["metadata"]["name"] for o in items] == [f"p{i}" for i in range(7)]
    assert rv
    assert [r.code for r in sandbox.requests if r.verb == "list"] == [200] * 4  # 2+2+2+1


def test_an_error_status_on_a_later_page_is_raised_as_for_any_request(kube, sandbox):
    for i in range(3):
        kube.create(CONFIGMAPS, cm(f"e{i}"))

    class FailingPage2(KubeClient):
        def _list_data(self, res, namespace=None, **kw):
            if kw.get("continue_token"):
                sandbox.faults.fail_next(1, 500, verb="list")
            return super()._list_data(res, namespace, **kw)

    failing = FailingPage2(kube.api_client, qps=0, burst=0, registry=CollectorRegistry())
    with pytest.raises(errors.ServerError) as caught:
        failing.list_all(CONFIGMAPS, "default", page_size=1)
    assert "/api/v1/namespaces/default/configmaps" in str(caught.value)


def test_every_page_is_counted_in_the_request_metrics(kube, sandbox, registry):
    for i in range(3):
        kube.create(CONFIGMAPS, cm(f"m{i}"))
    before = sample(registry, "prometheus_operator_kubernetes_client_http_requests_total", status_code="200")
    kube.list_all(CONFIGMAPS, "default", page_size=1)
    after = sample(registry, "prometheus_operator_kubernetes_client_http_requests_total", status_code="200")
    assert after - before == 3


def test_metadata_only(kube):
    body = cm("m", secret="s3cr3t")
    body["metadata"]["labels"] = {"a": "b"}
    kube.create(CONFIGMAPS, body)
    got = kube.get(CONFIGMAPS, "m", "default", metadata_only=True)
    assert set(got) == {"apiVersion", "kind", "metadata"} and got["kind"] == "PartialObjectMetadata"
    assert got["metadata"]["labels"] == {"a": "b"}
    items, _ = kube.list_all(CONFIGMAPS, "default", metadata_only=True)
    assert [set(i) for i in items] == [{"apiVersion", "kind", "metadata"}]
    assert "s3cr3t" not in repr(items)


def test_watch_events_bookmarks_and_close(kube):
    _, rv = kube.list_all(CONFIGMAPS, "default")
    stream = kube.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=30, idle_timeout=10)
    kube.create(CONFIGMAPS, cm("w1"))
    kube.patch(CONFIGMAPS, "w1", {"data": {"a": "1"}}, "default")
    kube.delete(CONFIGMAPS, "w1", "default")
    seen = []
    for event in stream:
        if event["type"] == "BOOKMARK":
            continue
        seen.append((event["type"], event["object"]["metadata"]["name"]))
        if len(seen) == 3:
            break
    assert seen == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]
    assert stream.resource_version and int(stream.resource_version) > int(rv)

    # close() from another thread unblocks a reader waiting for the next event
    done = threading.Event()

    def read():
        for _ in stream:
            pass
        done.set()

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.1)  # let the reader block in recv(); the assertion below is the real check
    stream.close()
    assert done.wait(scaled(5)), "close() did not unblock the reader"
    reader.join(5)


def test_watch_metadata_only(kube):
    stream = kube.watch(CONFIGMAPS, "default", timeout_seconds=30, idle_timeout=10, metadata_only=True,
                        resource_version=kube.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"])
    kube.create(CONFIGMAPS, cm("mw", secret="s3cr3t"))
    event = next(e for e in stream if e["type"] != "BOOKMARK")
    stream.close()
    assert set(event["object"]) == {"apiVersion", "kind", "metadata"}


def test_watch_gone_raises(kube, sandbox):
    _, rv = kube.list_all(CONFIGMAPS, "default")
    kube.create(CONFIGMAPS, cm("g1"))
    sandbox.faults.compact()
    with pytest.raises(errors.Gone):
        for _ in kube.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=30):
            pass


def test_watch_http_error_raises_before_streaming(kube, sandbox):
    sandbox.faults.fail_next(1, 429, verb="watch", retry_after=1)
    with pytest.raises(errors.TooManyRequests):
        kube.watch(CONFIGMAPS, "default", timeout_seconds=30)


def test_stalled_watch_raises_within_the_idle_timeout(kube, sandbox):
    sandbox.faults.stall_watches(True)
    stream = kube.watch(CONFIGMAPS, "default", timeout_seconds=60, idle_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(errors.WatchIdleTimeout):
        for _ in stream:
            pass
    assert time.monotonic() - started < scaled(3)  # not the stream's timeoutSeconds (60 s)


def test_server_timeout_ends_the_stream_cleanly(kube):
    stream = kube.watch(CONFIGMAPS, "default", timeout_seconds=1, idle_timeout=10)
    started = time.monotonic()
    events = [e for e in stream if e["type"] != "BOOKMARK"]
    assert events == [] and time.monotonic() - started < 5


def test_qps_limit(api_client, sandbox):
    registry = CollectorRegistry()
    kube = KubeClient(api_client, qps=10, burst=1, registry=registry)
    kube.create(CONFIGMAPS, cm("q"))
    started = time.monotonic()
    for _ in range(4):
        kube.get(CONFIGMAPS, "q", "default")
    # at most one token is saved up, the other 3 come at 10/s: >= 0.3 s
    assert time.monotonic() - started >= 0.29
    waited = registry.get_sample_value(
        "prometheus_operator_kubernetes_client_rate_limiter_duration_seconds_count",
        {"endpoint": "/api/v1/namespaces/{namespace}/configmaps/{name}"},
    )
    assert waited >= 1  # (3 unless a request itself took 100 ms on a loaded machine)


def test_watch_streaming_is_not_rate_limited(api_client):
    # 5 tokens cover list + 3 creates + the watch request; another would cost 5 s
    kube = KubeClient(api_client, qps=0.2, burst=5, registry=CollectorRegistry())
    rv = kube.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"]
    for i in range(3):
        kube.create(CONFIGMAPS, cm(f"r{i}"))
    stream = kube.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=30)
    started = time.monotonic()
    got = []
    for e in stream:
        if e["type"] == "ADDED":
            got.append(e)
        if len(got) == 3:
            break
    stream.close()
    assert time.monotonic() - started < 4


def test_metrics(kube, registry):
    kube.create(CONFIGMAPS, cm("mt"))
    kube.get(CONFIGMAPS, "mt", "default")
    with pytest.raises(errors.NotFound):
        kube.get(CONFIGMAPS, "other", "default")
    total = "prometheus_operator_kubernetes_client_http_requests_total"
    assert sample(registry, total, status_code="201") + sample(registry, total, status_code="200") >= 2
    assert sample(registry, total, status_code="404") == 1
    hist = "prometheus_operator_kubernetes_client_http_request_duration_seconds_count"
    assert sample(registry, hist, endpoint="/api/v1/namespaces/{namespace}/configmaps/{name}") == 2
    assert sample(registry, hist, endpoint="/api/v1/namespaces/{namespace}/configmaps") == 1
    # no raw object names leak into the label set
    labels = {s.labels.get("endpoint") for m in registry.collect() for s in m.samples if "endpoint" in s.labels}
    assert not any("mt" in l.split("/") or "other" in l.split("/") for l in labels)


def test_unreachable_is_counted_as_error(registry, api_client, sandbox):
    kube = KubeClient(api_client, qps=0, burst=0, registry=registry)
    sandbox.stop(keep_port=True)  # no parallel test's server can answer on it
    with pytest.raises(errors.ApiUnreachable):
        kube.list(CONFIGMAPS)
    assert sample(registry, "prometheus_operator_kubernetes_client_http_requests_total", status_code="<error>") == 1


def test_from_kubeconfig_sends_the_token_and_sizes_the_pool(sandbox, sandbox_kubeconfig):
    kube = KubeClient.from_kubeconfig(sandbox_kubeconfig, pool_size=7, registry=CollectorRegistry())
    try:
        assert kube.host == sandbox.url
        assert kube.api_client.configuration.connection_pool_maxsize == 7
        assert "sandbox" in kube.api_client.configuration.auth_settings()["BearerToken"]["value"]
        assert kube.get(NAMESPACES, "default")["metadata"]["name"] == "default"
    finally:
        kube.close()


def test_from_config_prefers_kubeconfig_and_reports_missing_files(sandbox, sandbox_kubeconfig, monkeypatch, tmp_path):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBECONFIG", sandbox_kubeconfig)
    kube = KubeClient.from_config(registry=CollectorRegistry())
    assert kube.host == sandbox.url
    monkeypatch.delenv("KUBECONFIG")
    with pytest.raises(errors.ApiUnreachable, match="in-cluster"):
        KubeClient.from_config(registry=CollectorRegistry())  # no service-account files here
    with pytest.raises(errors.ApiUnreachable, match="kubeconfig .*nope"):
        KubeClient.from_kubeconfig(str(tmp_path / "nope"))


def test_pool_size_rebuilds_the_pool(api_client):
    kube = KubeClient(api_client, pool_size=3, registry=CollectorRegistry())
    assert kube.api_client.rest_client.pool_manager.connection_pool_kw["maxsize"] == 3


def test_watch_event_larger_than_one_read(kube):
    rv = kube.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"]
    big = "x" * 300_000  # several 64 KiB reads for one line
    kube.create(CONFIGMAPS, cm("big", blob=big))
    kube.create(CONFIGMAPS, cm("small"))
    stream = kube.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=30, idle_timeout=10)
    got = []
    for event in stream:
        if event["type"] == "ADDED":
            got.append(event["object"])
        if len(got) == 2:
            break
    stream.close()
    assert got[0]["data"]["blob"] == big and got[1]["metadata"]["name"] == "small"


def test_from_config_in_cluster(monkeypatch, tmp_path):
    import kubernetes.config.incluster_config as incluster

    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token")
    ca.write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    monkeypatch.setattr(incluster, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    kube = KubeClient.from_config(pool_size=5, registry=CollectorRegistry())
    cfg = kube.api_client.configuration
    assert kube.host == "https://10.96.0.1:443" and cfg.ssl_ca_cert == str(ca)
    assert cfg.auth_settings()["BearerToken"]["value"].lower() == "bearer sa-token"
    assert cfg.connection_pool_maxsize == 5


@pytest.mark.parametrize("verb", ["get", "create", "update"])
def test_a_per_call_timeout_bounds_the_whole_call_without_retries(kube, sandbox, verb):
    current = kube.create(CONFIGMAPS, cm("slow"))
    sandbox.faults.add_latency(2.0, verb=verb, resource="configmaps")
    call = {
        "get": lambda: kube.get(CONFIGMAPS, "slow", "default", timeout=1.0),
        "create": lambda: kube.create(CONFIGMAPS, cm("new"), timeout=1.0),
        "update": lambda: kube.update(CONFIGMAPS, {**current, "data": {"k": "v"}}, timeout=1.0),
    }[verb]
    started = time.monotonic()
    with pytest.raises(errors.RequestTimeout, match="within the call's timeout"):
        call()
    elapsed = time.monotonic() - started
    # A read timeout is never retried (three tries would take at least 3 s).
    assert 0.95 <= elapsed < 2.5, elapsed
    sandbox.faults.clear()
    assert kube.get(CONFIGMAPS, "slow", "default", timeout=5)["metadata"]["name"] == "slow"


def test_a_per_call_timeout_counts_the_rate_limit_wait(api_client, registry):
    kube = KubeClient(api_client, qps=1, burst=1, registry=registry)
    kube.create(CONFIGMAPS, cm("a"))  # takes the only token: the next one is 1 s away
    started = time.monotonic()
    with pytest.raises(errors.RequestTimeout, match="rate limit"):
        kube.get(CONFIGMAPS, "a", "default", timeout=0.2)
    assert time.monotonic() - started < 0.2, "it knew at once that the token was too far away"
    # The token was given back: the next call waits for one token, not two.
    started = time.monotonic()
    kube.get(CONFIGMAPS, "a", "default", timeout=5)
    assert time.monotonic() - started < 1.8


def test_list_items_without_type_meta_get_it_from_the_list():
    """A real apiserver omits kind/apiVersion on the items of a built-in List; the client puts them back."""
    body = (b'{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},'
            b'"items":[{"metadata":{"name":"a","namespace":"default"}},'
            b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b","namespace":"default"}}]}')
    page = KubeClient._list_page(body, CONFIGMAPS, False, None)
    assert [(o["kind"], o["apiVersion"]) for o in page["items"]] == [("ConfigMap", "v1")] * 2
    widgets = KubeClient._list_page(b'{"kind":"WidgetList","apiVersion":"example.com/v1","items":[{"metadata":{"name":"w"}}]}',
                                    WIDGETS, False, None)
    assert widgets["items"][0]["kind"] == "Widget" and widgets["items"][0]["apiVersion"] == "example.com/v1"
    empty = KubeClient._list_page(b'{"kind":"ConfigMapList","apiVersion":"v1","items":null}', CONFIGMAPS, False, None)
    assert empty["items"] == []
