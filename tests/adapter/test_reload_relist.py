"""Config reload under concurrent requests, bad configs ignored, failed relists keep the registry."""

from __future__ import annotations

import copy
import threading
import time

import pytest
import requests
import yaml

from adapter.adapter_fixtures import (  # noqa: F401 - fixtures
    CONFIG, FailingProxy, adapter_factory, cluster_prom, prometheus_factory,
)
from prom.prom_fixtures import wait_for

pytestmark = pytest.mark.prometheus
OLD = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_per_second"
NEW = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_rate"


def _renamed() -> dict:
    cfg = copy.deepcopy(CONFIG)
    cfg["rules"][0]["name"]["as"] = "${1}_rate"
    return cfg


def test_reload_under_concurrent_requests(cluster_prom, adapter_factory) -> None:  # noqa: F811
    a = adapter_factory(cluster_prom.url)
    a.adapter.start(watch_config=True)
    stop = threading.Event()
    answers: list[tuple[str, int, int]] = []   # (path, thread, code)
    errors: list[str] = []

    def hammer(path: str, me: int) -> None:
        s = requests.Session()
        while not stop.is_set():
            try:
                r = s.get(a.url + path, timeout=10)
                answers.append((path, me, r.status_code))
            except requests.RequestException as exc:
                errors.append(repr(exc))

    threads = [threading.Thread(target=hammer, args=(p, i)) for i, p in enumerate((OLD, OLD, NEW))]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: len(answers) > 20, 20, "requests before the reload")
        path = a.adapter.options.config_path
        with open(path + ".tmp", "w") as f:
            yaml.safe_dump(_renamed(), f)
        import os
        os.replace(path + ".tmp", path)  # atomic, like a ConfigMap update
        wait_for(lambda: a.get(NEW).status_code == 200, 30, "the renamed metric to be served")
        n = len(answers)
        wait_for(lambda: len(answers) > n + 20, 20, "requests after the reload")
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not errors, errors[:3]
    assert {code for _, _, code in answers} <= {200, 404}          # nothing dropped, no 5xx
    for me in (0, 1):   # each client sees the old metric until the swap, then never again
        codes = [c for p, t, c in answers if t == me]
        first_404 = codes.index(404)
        assert all(c == 200 for c in codes[:first_404]) and all(c == 404 for c in codes[first_404:])
    assert a.get(OLD).status_code == 404
    assert a.adapter.metrics.reloads.labels("success")._value.get() == 1


def test_bad_config_is_logged_and_ignored(cluster_prom, adapter_factory, caplog) -> None:  # noqa: F811
    a = adapter_factory(cluster_prom.url)
    path = a.adapter.options.config_path
    with open(path, "w") as f:
        f.write("rules:\n- seriesQuery: 'up'\n  metricsQuery: '<<.Series'\n")
    assert a.adapter.check_config_changed()
    assert a.adapter.reload() is False
    assert a.get(OLD).status_code == 200
    assert any("config reload refused" in r.getMessage() and "rules[0].metricsQuery" in r.getMessage()
               for r in caplog.records)
    assert a.adapter.metrics.reloads.labels("failure")._value.get() == 1


def test_failed_relist_keeps_serving(cluster_prom, adapter_factory) -> None:  # noqa: F811
    proxy = FailingProxy(cluster_prom.url)
    try:
        a = adapter_factory(proxy.url)
        before = a.adapter.state.registry
        proxy.fail_prefixes = ("/api/v1/series",)
        assert a.adapter.relist() is None
        assert a.adapter.state.registry is before
        r = a.get(OLD)
        assert r.status_code == 200 and len(r.json()["items"]) == 2
        assert a.adapter.metrics.relists.labels("failure")._value.get() == 1
        # a reload whose discovery fails also keeps the old config serving
        with open(a.adapter.options.config_path, "w") as f:
            yaml.safe_dump(_renamed(), f)
        assert a.adapter.reload() is False
        assert a.get(OLD).status_code == 200 and a.get(NEW).status_code == 404
        proxy.fail_prefixes = ()
        assert a.adapter.reload() is True
        assert a.get(NEW).status_code == 200
        # Prometheus failing on queries: a 500 that says why, not a hang
        proxy.fail_prefixes = ("/api/v1/query",)
        r = a.get(NEW)
        assert r.status_code == 500 and "unable to fetch metrics" in r.json()["message"]
        assert "injected failure" in r.json()["message"]
    finally:
        proxy.close()


def test_reload_on_a_configmap_style_symlink_swap(cluster_prom, adapter_factory, tmp_path) -> None:  # noqa: F811
    """kubelet updates a ConfigMap volume by pointing `..data` at a new directory; config.yaml is a
    symlink through it. The watch is on the directory, so the swap is seen."""
    import os

    volume = tmp_path / "volume"
    volume.mkdir()
    first = volume / "..2026_01_01_00_00_00.1"
    first.mkdir()
    (first / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    os.symlink(first.name, volume / "..data")
    os.symlink("..data/config.yaml", volume / "config.yaml")
    a = adapter_factory(cluster_prom.url, config=yaml.safe_dump(CONFIG))
    a.adapter.options.config_path = str(volume / "config.yaml")
    a.adapter._config_hash = None
    a.adapter.check_config_changed()
    a.adapter.start(watch_config=True)
    assert a.get(OLD).status_code == 200
    second = volume / "..2026_01_01_00_01_00.2"
    second.mkdir()
    (second / "config.yaml").write_text(yaml.safe_dump(_renamed()))
    os.symlink(second.name, volume / "..data_tmp")
    os.replace(volume / "..data_tmp", volume / "..data")
    wait_for(lambda: a.get(NEW).status_code == 200, 30, "the swapped config to be served")
    assert a.get(OLD).status_code == 404


def test_config_watch_does_not_feed_on_its_own_reads(tmp_path) -> None:
    """Reading the config to compare it opens and closes it: those events must not start another read
    (they did, and the watch threads then spun forever, taking a third of a CPU from requests)."""
    from promop.adapter.app import Adapter, Options
    from promop.adapter.config import load_config
    from promop.adapter.resources import ResourceMapper
    from promop.prom import PrometheusClient

    cfg = tmp_path / "config.yaml"
    cfg.write_text("rules: []\n")
    adapter = Adapter(Options(str(cfg)), PrometheusClient("http://127.0.0.1:1", retries=0), ResourceMapper(),
                      load_config(str(cfg)))
    adapter._start_watch()
    try:
        handler = adapter.watch_handler
        assert handler is not None

        class Recorder:   # a second handler on the same watch: sees each event once the adapter's has
            paths: list[str] = []

            def dispatch(self, event) -> None:
                self.paths.append(event.src_path)

        recorder = Recorder()
        adapter._observer.schedule(recorder, str(tmp_path), recursive=False)
        (tmp_path / "other.log").write_text("x")          # any write in the directory: one look at the config
        wait_for(lambda: handler.peeks >= 1, 10, "the watch to look at the config")
        for i in range(3):   # events are dispatched in order: once a later file's are seen, the earlier are done
            before = handler.peeks
            marker = tmp_path / f"marker-{i}"
            marker.write_text("x")
            wait_for(lambda: str(marker) in recorder.paths, 10, "the marker's events")
            assert handler.peeks - before <= 12, f"{handler.peeks - before} reads of the config for one write"
        assert not adapter._wake.is_set()                 # the content never changed: no reload woken
        cfg.write_text("rules: []\nexternalRules: []\n")  # a real change still wakes the relist loop
        wait_for(adapter._wake.is_set, 10, "the change to wake the relist loop")
    finally:
        adapter.stop()
