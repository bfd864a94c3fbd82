"""The first render's second process (promop.operator.render_pool): the same render, faster.

A worker renders half of a pass's misses without the Store; whatever touched the Store, and
everything when the worker is gone, is rendered here. The render must equal the one without it,
field by field, for monitors of every kind of outcome: accepted, rejected by validation, rejected
for a missing Secret, reading a Secret, with warnings and TLS assets.
"""

from __future__ import annotations

import pytest

from promop.operator.render_pool import RenderPool, fragment_from, usable_cpus
from promop.render import RenderCache, RenderInputs, render
from promop.render.model import RenderOptions

from tests.render.helpers import pod_monitor, prometheus_obj, secret, service_monitor

N = 400


def monitors() -> tuple[list[dict], list[dict]]:
    sms, pms = [], []
    for i in range(N):
        endpoints: list[dict] = [{"port": "web", "path": f"/m{i % 13}", "interval": f"{10 + i % 5}s"}]
        variant = i % 9
        if variant == 1:
            endpoints.append({"port": "metrics", "bearerTokenSecret": {"name": "creds", "key": "token"}})
        elif variant == 2:
            endpoints = [{"port": "web", "scheme": "bogus-scheme"}]                       # rejected
        elif variant == 3:
            endpoints.append({"port": "web", "basicAuth": {"username": {"name": "absent", "key": "u"},
                                                           "password": {"name": "absent", "key": "p"}}})
        elif variant == 4:
            endpoints[0]["tlsConfig"] = {"insecureSkipVerify": True, "serverName": f"s{i}"}
        elif variant == 5:
            endpoints[0]["relabelings"] = [{"action": "labeldrop", "regex": "tmp_.*"}]
        elif variant == 6:
            endpoints[0]["metricRelabelings"] = [{"action": "replace", "targetLabel": "x", "replacement": str(i)}]
        sm = service_monitor(f"sm-{i:04d}", namespace=f"ns-{i % 7}", endpoints=endpoints,
                             sampleLimit=i if i % 11 == 0 else None)
        if sm["spec"].get("sampleLimit") is None:
            sm["spec"].pop("sampleLimit", None)
        if variant == 7:  # a warning: this protocol needs Prometheus 3
            sm["spec"]["scrapeProtocols"] = ["PrometheusText1.0.0", "PrometheusProto"]
        sm["metadata"].update(uid=f"uid-sm-{i}", resourceVersion=str(i + 1))
        sms.append(sm)
        if i % 4 == 0:
            pm = pod_monitor(f"pm-{i:04d}", namespace=f"ns-{i % 7}",
                             podMetricsEndpoints=[{"port": "http", "path": f"/p{i % 3}"}])
            pm["metadata"].update(uid=f"uid-pm-{i}", resourceVersion=str(10_000 + i))
            pms.append(pm)
    return sms, pms


def inputs() -> RenderInputs:
    sms, pms = monitors()
    prom = prometheus_obj("k8s", serviceMonitorSelector={}, podMonitorSelector={},
                          serviceMonitorNamespaceSelector={}, podMonitorNamespaceSelector={}, shards=2)
    prom["metadata"].update(uid="uid-prom", resourceVersion="1")
    secrets = {(f"ns-{k}", "creds"): secret("creds", namespace=f"ns-{k}", token=f"t{k}") for k in range(7)}
    return RenderInputs(prometheus=prom, service_monitors=sms, pod_monitors=pms, secrets=secrets,
                        options=RenderOptions())


def same(got, want) -> None:
    assert got.config_text == want.config_text
    assert got.config == want.config
    assert got.objects() == want.objects()
    assert got.rejected == want.rejected and got.warnings == want.warnings
    assert got.job_count == want.job_count


@pytest.fixture(scope="module")
def pool():
    p = RenderPool(min_batch=50, cpus=2, steal=False)  # every request answered by the worker
    assert p.start()
    try:
        yield p
    finally:
        p.close()


def wait_ready(pool: RenderPool) -> None:
    pool._ready.result(timeout=120)  # noqa: SLF001 - the test waits for the worker's warm-up
    assert pool.ready()


@pytest.mark.parametrize("keep_jobs,chunk", [(False, 2000), (True, 2000), (False, 37)])
def test_a_render_with_the_worker_equals_the_render_without(pool, keep_jobs, chunk, monkeypatch):
    import promop.operator.render_pool as render_pool

    monkeypatch.setattr(render_pool, "CHUNK", chunk)  # 37: a batch sent in several requests
    wait_ready(pool)
    answered: list[str] = []

    def counted(kind, obj, answer, keep):
        answered.append(obj["metadata"]["name"])
        return fragment_from(kind, obj, answer, keep)

    cache = RenderCache(max_renders=2, keep_jobs=keep_jobs)
    cache.offload, cache.from_answer = pool.offload, counted
    before = pool.batches
    got = render(inputs(), cache)
    same(got, render(inputs()))
    assert pool.batches - before == 2   # the ServiceMonitors' and the PodMonitors' misses
    # the worker's half came back rendered, except those that touched the Store (a Secret read)
    offloaded = N // 2 + N // 4 // 2
    assert len(answered) >= offloaded * 0.6
    assert not any(int(name.split("-")[1]) % 9 in (1, 3) for name in answered if name.startswith("sm-"))
    warned = {p.name for p in got.warnings}
    assert any(int(name.split("-")[1]) % 9 == 7 and name in warned for name in answered if name.startswith("sm-"))
    assert any(int(name.split("-")[1]) % 9 == 2 for name in answered if name.startswith("sm-"))  # a rejected one
    # the cache holds what the worker rendered: a second render renders nothing
    misses = cache.misses
    same(render(inputs(), cache), got)
    assert cache.misses == misses


def test_fragments_from_the_worker_decode_to_the_jobs_rendered_here(pool):
    wait_ready(pool)
    cache = RenderCache(max_renders=2, keep_jobs=False)
    cache.offload, cache.from_answer = pool.offload, fragment_from
    got = render(inputs(), cache)
    frags = [f for f in cache._fragments.values() if f.texts]  # noqa: SLF001
    assert frags and all(f.job_names == [j["job_name"] for j in f.jobs] for f in frags)
    assert got.config["scrape_configs"] == render(inputs()).config["scrape_configs"]


def test_small_batches_and_an_unready_worker_render_here():
    p = RenderPool(min_batch=10_000, cpus=2)
    assert p.offload(None, "ServiceMonitor", [{}] * 10) is None          # not started
    cache = RenderCache(max_renders=2, keep_jobs=False)
    cache.offload, cache.from_answer = p.offload, fragment_from
    same(render(inputs(), cache), render(inputs()))
    assert p.batches == 0


def test_one_cpu_starts_no_worker():
    p = RenderPool(cpus=1)
    assert p.start() is False and p.offload(None, "ServiceMonitor", [{}] * 5000) is None
    assert usable_cpus() >= 1


def test_a_worker_that_dies_leaves_the_render_to_this_process(caplog):
    p = RenderPool(min_batch=50, cpus=2)
    assert p.start()
    try:
        wait_ready(p)
        for proc in list(p._executor._processes.values()):  # noqa: SLF001 - the fault injected
            proc.kill()
            proc.join(10)
        cache = RenderCache(max_renders=2, keep_jobs=False)
        cache.offload, cache.from_answer = p.offload, fragment_from
        same(render(inputs(), cache), render(inputs()))
    finally:
        p.close()


def test_a_render_that_reads_the_store_past_the_scope_comes_back_for_this_process(monkeypatch):
    """Any Store access in the worker, even one no Scope recorded, sends the monitor back: the worker's
    Store is empty, so what it rendered could be wrong."""
    import copy

    import promop.render.generate as generate
    from promop.operator.render_pool import _render
    from promop.render.generate import new_context
    from promop.render.store import Store

    ctx, _ = new_context(inputs().prometheus, RenderOptions(), Store())
    sm = inputs().service_monitors[0]
    portable = copy.copy(ctx)
    assert _render(portable, "ServiceMonitor", [sm])[0] is not None

    def sneaky(c, obj, scope):
        c.store.get("Secret", "ns-0", "creds", "token")
        return []

    monkeypatch.setitem(generate._GENERATORS, "ServiceMonitor", sneaky)
    assert _render(copy.copy(ctx), "ServiceMonitor", [sm]) == [None]


def test_requests_the_worker_has_not_started_are_rendered_here_and_the_render_is_the_same(monkeypatch):
    import promop.operator.render_pool as render_pool

    monkeypatch.setattr(render_pool, "CHUNK", 10)   # many requests: most still waiting when asked
    p = RenderPool(min_batch=50, cpus=2)
    assert p.start()
    try:
        wait_ready(p)
        cache = RenderCache(max_renders=2, keep_jobs=False)
        cache.offload, cache.from_answer = p.offload, fragment_from
        same(render(inputs(), cache), render(inputs()))
    finally:
        p.close()


def test_an_offload_takes_back_the_requests_not_started_and_waits_for_the_others():
    import threading
    from concurrent.futures import Future

    from promop.operator.render_pool import Offload, pack

    done, waiting, running = Future(), Future(), Future()
    done.set_result(pack(["a", "b"]))
    running.set_running_or_notify_cancel()
    threading.Timer(0.05, running.set_result, (pack(["c"]),)).start()
    assert Offload([(done, 2), (waiting, 3), (running, 1)], timeout=30).result() == ["a", "b", None, None, None, "c"]
    assert waiting.cancelled()
    kept = Future()
    threading.Timer(0.05, kept.set_result, (pack(["x"]),)).start()
    assert Offload([(kept, 1)], timeout=30, steal=False).result() == ["x"]
    failing, short = Future(), Future()
    failing.set_exception(RuntimeError("worker died"))
    short.set_result(pack(["only one"]))
    assert Offload([(failing, 2), (short, 2)], timeout=30, steal=False).result() == [None] * 4


def test_an_additions_full_pass_does_not_look_for_misses_to_offload():
    """After the first render, an added monitor makes a full pass over the list: with fewer new objects
    than offload_min the cache does not even ask (the worker is long gone by then)."""
    asked: list[int] = []

    def offload(ctx, kind, objs):
        asked.append(len(objs))
        return None

    cache = RenderCache(max_renders=2, keep_jobs=False)
    cache.offload, cache.from_answer, cache.offload_min = offload, fragment_from, 100
    first = inputs()
    render(first, cache)
    assert asked and asked[0] == N // 2          # the first render: half of the ServiceMonitors' misses
    asked.clear()
    extra = service_monitor("sm-extra", namespace="ns-0", endpoints=[{"port": "web"}])
    extra["metadata"].update(uid="uid-extra", resourceVersion="99999")
    more = RenderInputs(prometheus=first.prometheus, service_monitors=[*first.service_monitors, extra],
                        pod_monitors=first.pod_monitors, secrets=first.secrets, options=first.options)
    same(render(more, cache), render(more))
    assert asked == []
