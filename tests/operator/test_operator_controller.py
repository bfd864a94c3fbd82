"""Controller plumbing against the sandbox with a stand-in renderer: writes, no-op syncs, restores."""

from __future__ import annotations

import threading
import time

import pytest
from operator_testlib import eventually, modify, operator_writes, scaled
from operator_fakes import decode, fake_references, fake_render

from promop.kube.errors import NotFound
from promop.kube.resources import NAMESPACES, PROMETHEUSES, SECRETS, SERVICEMONITORS, STATEFULSETS

NS = "mon"


def prom(name="p", **spec):
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"serviceMonitorSelector": {}, **spec}}


def sm(name, **spec):
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": name, "namespace": NS, "labels": {"team": "a"}},
            "spec": {"selector": {}, "endpoints": [{"port": "web"}], **spec}}


@pytest.fixture
def fake_operator(start_operator, kube):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})

    def start(**kw):
        return start_operator(render=fake_render, references=fake_references, **kw)
    return start


def jobs(kube, name="p"):
    try:
        return [j["job_name"] for j in decode(kube.get(SECRETS, f"prometheus-{name}", NS))["scrape_configs"]]
    except (NotFound, OSError):  # absent, or a foreign writer's garbage (gzip.BadGzipFile)
        return None


def test_monitor_changes_reach_the_config_and_no_write_when_idle(cluster, kube, fake_operator):
    op = fake_operator()
    kube.create(PROMETHEUSES, prom())
    kube.create(SERVICEMONITORS, sm("a"))
    eventually(lambda: jobs(kube) == ["serviceMonitor/mon/a/0"], what="job a in the config")
    kube.create(SERVICEMONITORS, sm("b"))
    eventually(lambda: jobs(kube) == ["serviceMonitor/mon/a/0", "serviceMonitor/mon/b/0"], what="job b")
    kube.delete(SERVICEMONITORS, "a", NS)
    eventually(lambda: jobs(kube) == ["serviceMonitor/mon/b/0"], what="job a gone")
    op.settle(cluster)
    status = kube.get(PROMETHEUSES, "p", NS)["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Available": "True", "Reconciled": "True"}

    cluster.reset_requests()
    ctl = op.controller
    before = ctl.metrics.reconcile_operations.labels("prometheus")._value.get()
    ctl.enqueue_all()  # a resync: everything is re-rendered and compared
    eventually(lambda: ctl.metrics.reconcile_operations.labels("prometheus")._value.get() > before, what="resync")
    eventually(op.idle, what="idle after resync")
    assert operator_writes(cluster) == []
    assert cluster.count_requests(verb="get") >= 1  # it did look


def test_foreign_edit_of_managed_secret_is_restored(cluster, kube, fake_operator):
    op = fake_operator()
    kube.create(PROMETHEUSES, prom())
    kube.create(SERVICEMONITORS, sm("a"))
    eventually(lambda: jobs(kube) == ["serviceMonitor/mon/a/0"])
    modify(kube, SECRETS, "prometheus-p", NS, lambda secret: secret["data"].update({"prometheus.yaml.gz": "AAAA"}))
    eventually(lambda: jobs(kube) == ["serviceMonitor/mon/a/0"], what="restored config")


def test_paused_stops_writes_and_shards_scale(cluster, kube, fake_operator):
    op = fake_operator()
    kube.create(PROMETHEUSES, prom(shards=3))
    names = lambda: sorted(s["metadata"]["name"] for s in kube.list(STATEFULSETS, NS)["items"])  # noqa: E731
    eventually(lambda: names() == ["prometheus-p", "prometheus-p-shard-1", "prometheus-p-shard-2"], what="3 shards")
    kube.patch(PROMETHEUSES, "p", {"spec": {"shards": 1}}, NS)
    eventually(lambda: names() == ["prometheus-p"], what="1 shard")
    eventually(op.idle)
    kube.patch(PROMETHEUSES, "p", {"spec": {"paused": True}}, NS)
    op.settle(cluster)
    cluster.reset_requests()
    kube.create(SERVICEMONITORS, sm("late"))
    kube.patch(PROMETHEUSES, "p", {"spec": {"shards": 2}}, NS)
    eventually(lambda: op.controller.metrics.triggered.labels("prometheus", "Prometheus", "update")._value.get() >= 3)
    op.settle(cluster)
    assert operator_writes(cluster) == []
    assert jobs(kube) == []
    kube.patch(PROMETHEUSES, "p", {"spec": {"paused": False}}, NS)
    eventually(lambda: jobs(kube) == ["serviceMonitor/mon/late/0"] and len(names()) == 2, what="resumed")


class DictStore(dict):
    """A stand-in informer cache: the test decides what the operator believes."""

    def list(self) -> list:
        return list(self.values())


def test_status_refresh_is_a_full_sync_when_the_prometheus_changed_since(kube, cluster):
    from prometheus_client import CollectorRegistry

    from promop.operator.metrics import OperatorMetrics
    from promop.operator.sync import Stores, Syncer
    from promop.render.model import RenderOptions

    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    key = f"{NS}/p"
    proms = DictStore({key: kube.create(PROMETHEUSES, prom())})
    stss = DictStore()
    stores = Stores(proms, DictStore(), DictStore(), DictStore(), DictStore(), stss, DictStore(), DictStore())
    metrics = OperatorMetrics(CollectorRegistry())
    syncer = Syncer(kube, stores, RenderOptions(), metrics, fake_render, fake_references)
    syncs = metrics.reconcile_operations.labels("prometheus")

    assert syncer.sync_status(key).skipped == ""  # never synced: a full sync
    assert syncs._value.get() == 1
    assert cluster.background.wait_idle(scaled(10))  # the simulated StatefulSet controller wrote status
    stss[f"{NS}/prometheus-p"] = kube.get(STATEFULSETS, "prometheus-p", NS)
    proms[key] = kube.get(PROMETHEUSES, "p", NS)
    assert syncer.sync(key).skipped == ""
    assert syncs._value.get() == 2
    assert syncer.sync_status(key).skipped == "status only"
    assert syncs._value.get() == 2
    # the cache already has a relabelled Prometheus whose own event is still on its way
    proms[key] = kube.patch(PROMETHEUSES, "p", {"metadata": {"labels": {"new": "label"}}}, NS)
    assert syncer.sync_status(key).skipped == ""
    assert syncs._value.get() == 3


def test_a_sync_ends_when_config_is_written_and_feedback_waits_in_its_own_queue(kube, cluster):
    """No status or bindings write happens inside sync(); the reporter writes them later."""
    from prometheus_client import CollectorRegistry

    from promop.operator.metrics import OperatorMetrics
    from promop.operator.sync import Stores, Syncer
    from promop.render.model import RenderOptions

    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    key = f"{NS}/p"
    proms = DictStore({key: kube.create(PROMETHEUSES, prom())})
    sms = DictStore({f"{NS}/a": kube.create(SERVICEMONITORS, sm("a")), f"{NS}/b": kube.create(SERVICEMONITORS, sm("b"))})
    stss = DictStore()
    stores = Stores(proms, sms, DictStore(), DictStore(), DictStore(), stss, DictStore(), DictStore())
    syncer = Syncer(kube, stores, RenderOptions(), OperatorMetrics(CollectorRegistry()), fake_render, fake_references)
    syncer.sync(key)
    assert jobs(kube) == ["serviceMonitor/mon/a/0", "serviceMonitor/mon/b/0"]
    assert cluster.background.wait_idle(scaled(10))  # the simulated StatefulSet controller wrote status
    stss[f"{NS}/prometheus-p"] = kube.get(STATEFULSETS, "prometheus-p", NS)
    assert "status" not in kube.get(PROMETHEUSES, "p", NS)
    assert "status" not in kube.get(SERVICEMONITORS, "a", NS)
    syncer.sync(key)  # a second sync before the feedback is written: still one write per object
    assert syncer.reporter.run_pending() == 0
    assert syncer.reporter.written == 3  # two bindings and the status, each once
    assert kube.get(SERVICEMONITORS, "a", NS)["status"]["bindings"][0]["conditions"][0]["status"] == "True"
    assert kube.get(PROMETHEUSES, "p", NS)["status"]["conditions"]


def test_a_status_change_is_not_lost_while_the_cache_lags_behind_our_last_status_write(kube, cluster):
    from prometheus_client import CollectorRegistry

    from promop.operator.metrics import OperatorMetrics
    from promop.operator.sync import Stores, Syncer
    from promop.render.model import RenderOptions

    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    key = f"{NS}/p"
    proms = DictStore({key: kube.create(PROMETHEUSES, prom())})
    stss = DictStore()
    broken = []

    def render(inputs, cache=None):
        if broken:
            raise RuntimeError("render failed")
        return fake_render(inputs, cache)
    stores = Stores(proms, DictStore(), DictStore(), DictStore(), DictStore(), stss, DictStore(), DictStore())
    syncer = Syncer(kube, stores, RenderOptions(), OperatorMetrics(CollectorRegistry()), render, fake_references)
    feedback = syncer.reporter

    def reconciled() -> str:
        conds = kube.get(PROMETHEUSES, "p", NS)["status"]["conditions"]
        return next(c["status"] for c in conds if c["type"] == "Reconciled")

    syncer.sync(key)
    feedback.run_pending()
    assert cluster.background.wait_idle(scaled(10))  # the simulated StatefulSet controller wrote status
    stss[f"{NS}/prometheus-p"] = kube.get(STATEFULSETS, "prometheus-p", NS)
    proms[key] = kube.get(PROMETHEUSES, "p", NS)
    syncer.sync(key)  # now with its StatefulSet: Available
    feedback.run_pending()
    proms[key] = kube.get(PROMETHEUSES, "p", NS)  # the cache shows Available=True, Reconciled=True
    assert reconciled() == "True"
    broken.append(1)
    with pytest.raises(RuntimeError):
        syncer.sync(key)
    assert feedback.run_pending() == 0
    assert reconciled() == "False"  # written; the cache still shows True
    broken.clear()
    syncer.sync(key)
    # True again equals the stale cache, but not what we wrote last: written over our own write
    assert feedback.run_pending() == 0
    assert reconciled() == "True"
    proms[key] = kube.get(PROMETHEUSES, "p", NS)  # the cache catches up: nothing more to write
    syncer.sync(key)
    written = feedback.written
    feedback.run_pending()
    assert feedback.written == written


def test_the_echo_of_our_own_statefulset_create_still_refreshes_the_status(kube):
    """The status is written from the cache, possibly before the cache has the StatefulSet just
    created (Available=False, StatefulSetNotFound): the create's own watch event must not be
    skipped altogether, but refresh the status (no full sync)."""
    from promop.operator.controller import STATUS, SYNC, Controller
    from promop.operator.options import Options

    ctl = Controller(kube, Options(), render=fake_render, references=fake_references)
    add = ctl.statefulsets._listeners[0].calls["add"]  # the controller's handler, not started
    owner = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "name": "p", "uid": "u",
             "controller": True}
    sts = {"metadata": {"namespace": NS, "name": "prometheus-p", "resourceVersion": "7",
                        "labels": {"operator.prometheus.io/name": "p"}, "ownerReferences": [owner]}}
    ctl.syncer.writelog.wrote(("StatefulSet", NS, "prometheus-p"), None, sts, "hash")
    add(sts, False)
    assert ctl._work_for(f"{NS}/p")[0] == STATUS
    add({**sts, "metadata": {**sts["metadata"], "resourceVersion": "8"}}, False)  # not our write
    assert ctl._work_for(f"{NS}/p")[0] == SYNC


def test_held_feedback_waits_queued_until_released(kube, cluster):
    """Reporter.hold: a worker takes the item and writes nothing until release(); stop() is not
    kept waiting by a held item."""
    from prometheus_client import CollectorRegistry

    from promop.operator.metrics import OperatorMetrics
    from promop.operator.reporter import Outcome
    from promop.operator.sync import Stores, Syncer
    from promop.render.model import RenderOptions

    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    key = f"{NS}/p"
    proms = DictStore({key: kube.create(PROMETHEUSES, prom())})
    sms = DictStore({f"{NS}/a": kube.create(SERVICEMONITORS, sm("a"))})
    stores = Stores(proms, sms, DictStore(), DictStore(), DictStore(), DictStore(), DictStore(), DictStore())
    syncer = Syncer(kube, stores, RenderOptions(), OperatorMetrics(CollectorRegistry()), fake_render, fake_references)
    feedback = syncer.reporter
    feedback.workers = 1
    feedback.hold()
    feedback.start()
    try:
        syncer.sync(key)
        assert jobs(kube) == ["serviceMonitor/mon/a/0"]  # the config does not wait
        eventually(lambda: feedback.queue.processing() == 1, what="the worker holding an item")
        assert feedback.held() and feedback.written == 0
        assert "status" not in kube.get(SERVICEMONITORS, "a", NS)
        feedback.release()
        eventually(lambda: "status" in kube.get(SERVICEMONITORS, "a", NS), what="the binding, once released")
        eventually(lambda: "status" in kube.get(PROMETHEUSES, "p", NS), what="the Prometheus status")
        feedback.hold()
        assert feedback.status(key, Outcome("render failed", "")), "a changed outcome is queued"
        eventually(lambda: feedback.queue.processing() == 1, what="the worker holding the new status")
    finally:
        stopped = threading.Thread(target=feedback.stop, kwargs={"timeout": 5.0})
        stopped.start()
        stopped.join(scaled(5))
        assert not stopped.is_alive(), "stop() waited for a held item"


def test_the_operator_releases_feedback_once_its_first_syncs_are_done(cluster, kube, fake_operator):
    """`promop run` holds feedback at start-up (first_syncs.py) and releases it when its queues
    drain: well before the 30 s cap, so the binding is there soon after the config."""
    kube.create(PROMETHEUSES, prom())
    kube.create(SERVICEMONITORS, sm("a"))
    started = time.monotonic()
    op = fake_operator()
    reporter = op.controller.reporter
    eventually(lambda: jobs(kube) == ["serviceMonitor/mon/a/0"], what="job a in the config")
    eventually(lambda: not reporter.held(), 40, "feedback released")
    assert time.monotonic() - started < 25, "released by the 30 s cap, not by the drained queues"
    eventually(lambda: "status" in kube.get(SERVICEMONITORS, "a", NS), what="the binding")
