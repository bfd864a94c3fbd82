"""--watch-secret / --watch-configmap: the config and rules read through the API (a sandbox),
with kubelet's mounted copies as the fallback, against a real Prometheus."""
from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
import yaml

from promop.sandbox import Sandbox
from reloader_fixtures import prometheus_binary, prometheus_factory, reload_server, reloader_factory, fast_flags  # noqa: F401
from reloader_testlib import KubeletDir, free_port, gz, wait_for

pytestmark = pytest.mark.prometheus

NS = "default"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _config(interval: str, rules_dir: Path | None = None) -> str:
    cfg: dict = {"global": {"scrape_interval": interval, "external_labels": {"pod": "$(POD_NAME)"}}}
    if rules_dir is not None:
        cfg["rule_files"] = [f"{rules_dir}/*.yaml"]
    return yaml.safe_dump(cfg)


def _rules(group: str) -> str:
    return yaml.safe_dump({"groups": [{"name": group, "rules": [{"record": f"{group}:up:sum", "expr": "sum(up)"}]}]})


class Cluster:
    """The sandbox seen as the operator writes to it: a config Secret and a rule ConfigMap."""

    def __init__(self, sb: Sandbox):
        self.sb = sb

    def put_secret(self, text: str, name: str = "prometheus-k8s") -> None:
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
                "data": {"prometheus.yaml.gz": _b64(gz(text))}}
        self._put("secrets", name, body)

    def put_configmap(self, data: dict[str, str], name: str = "prometheus-k8s-rulefiles-0") -> None:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": data}
        self._put("configmaps", name, body)

    def _put(self, plural: str, name: str, body: dict) -> None:
        import requests

        base = f"{self.sb.url}/api/v1/namespaces/{NS}/{plural}"
        current = requests.get(f"{base}/{name}", timeout=5)
        if current.status_code == 404:
            resp = requests.post(base, json=body, timeout=5)
        else:
            body["metadata"]["resourceVersion"] = current.json()["metadata"]["resourceVersion"]
            resp = requests.put(f"{base}/{name}", json=body, timeout=5)
        assert resp.status_code in (200, 201), resp.text


@pytest.fixture
def cluster(sandbox):
    return Cluster(sandbox)


def _layout(tmp_path: Path):
    mounted = KubeletDir(tmp_path / "config")
    out_dir = tmp_path / "config_out"
    out_dir.mkdir()
    rules_mount = KubeletDir(tmp_path / "rules-mounted" / "prometheus-k8s-rulefiles-0")
    rules_dir = tmp_path / "rules" / "prometheus-k8s-rulefiles-0"
    return mounted, out_dir / "prometheus.env.yaml", rules_mount, rules_dir


def _args(kubeconfig: str, mounted: KubeletDir, out: Path, rules_mount: KubeletDir, rules_dir: Path,
          prom_port: int, fast: list[str]) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}",
        f"--reload-url=http://127.0.0.1:{prom_port}/-/reload",
        f"--config-file={mounted.root / 'prometheus.yaml.gz'}",
        f"--config-envsubst-file={out}",
        f"--watch-secret={NS}/prometheus-k8s",
        f"--watch-configmap={NS}/prometheus-k8s-rulefiles-0={rules_dir},mount={rules_mount.root}",
        f"--watched-dir={mounted.root}",
        *fast,
    ]


def test_secret_and_configmap_changes_reach_prometheus_through_the_api(
        tmp_path, sandbox, sandbox_kubeconfig, cluster, prometheus_factory, reloader_factory, fast_flags):
    mounted, out, rules_mount, rules_dir = _layout(tmp_path)
    cluster.put_secret(_config("11s", rules_dir))
    cluster.put_configmap({"a.yaml": _rules("first")})
    # kubelet's copies lag: they still hold what was there before.
    mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("10s", rules_dir))})
    rules_mount.publish({"a.yaml": _rules("old")})
    out.write_text(_config("10s", rules_dir))
    prom = prometheus_factory(out)
    side = reloader_factory(_args(sandbox_kubeconfig, mounted, out, rules_mount, rules_dir, prom.port, fast_flags),
                            env={"POD_NAME": "prometheus-k8s-0"})

    wait_for(lambda: "scrape_interval: 11s" in prom.status_config(), what="the API's config in Prometheus")
    wait_for(lambda: prom.rule_groups() == ["first"], what="the API's rules in Prometheus")
    assert yaml.safe_load(prom.status_config())["global"]["external_labels"] == {"pod": "prometheus-k8s-0"}

    # An edit through the API, never mounted: Prometheus gets it anyway.
    cluster.put_secret(_config("12s", rules_dir))
    wait_for(lambda: "scrape_interval: 12s" in prom.status_config(), what="the edited config in Prometheus")
    # A key added, then the first removed.
    cluster.put_configmap({"a.yaml": _rules("first"), "b.yaml": _rules("second")})
    wait_for(lambda: prom.rule_groups() == ["first", "second"], what="the added rule file")
    cluster.put_configmap({"b.yaml": _rules("second")})
    wait_for(lambda: prom.rule_groups() == ["second"], what="the removed rule file gone")
    assert sorted(p.name for p in rules_dir.iterdir() if not p.name.startswith(".")) == ["b.yaml"]

    # kubelet catching up later with an older version changes nothing.
    def from_mounts() -> int:
        return (len([e for e in side.logs if e.get("source") == "mounted file"])
                + len([e for e in side.logs if e.get("source") == "mounted directory"]))

    before = from_mounts()
    passes = side.count_logs("pass finished")
    mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("11s", rules_dir))})
    rules_mount.publish({"a.yaml": _rules("first")})
    wait_for(lambda: side.count_logs("pass finished") > passes, what="a pass after kubelet's update")
    cluster.put_configmap({"b.yaml": _rules("second"), "c.yaml": _rules("third")})  # a marker event after them
    wait_for(lambda: prom.rule_groups() == ["second", "third"], what="the marker rule file")
    assert "scrape_interval: 12s" in prom.status_config()
    assert from_mounts() == before
    assert side.metric('reloader_api_watch_events_total{resource="secrets"}') >= 1
    assert side.metric('reloader_api_watch_events_total{resource="configmaps"}') >= 3


def test_api_down_falls_back_to_mounted_files_and_catches_up(
        tmp_path, sandbox, sandbox_kubeconfig, cluster, prometheus_factory, reloader_factory, fast_flags):
    mounted, out, rules_mount, rules_dir = _layout(tmp_path)
    cluster.put_secret(_config("11s"))
    cluster.put_configmap({"a.yaml": _rules("first")})
    mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("11s"))})
    # kubelet's copy lags the API: had it the API's content, a first pass that ran before the watch
    # connected would apply the mounted copy, and the API's identical version would log nothing
    rules_mount.publish({"a.yaml": _rules("older")})
    out.write_text(_config("11s"))
    prom = prometheus_factory(out)
    side = reloader_factory(_args(sandbox_kubeconfig, mounted, out, rules_mount, rules_dir, prom.port, fast_flags))
    side.wait_log("rule files source", source="api")

    # The API goes away; kubelet's copy shows a change made meanwhile: it is applied.
    sandbox.stop(keep_port=True)  # it comes back on the same port, whatever runs in parallel
    mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("13s"))})
    wait_for(lambda: "scrape_interval: 13s" in prom.status_config(), timeout=15,
             what="the mounted config applied while the API is down")
    assert side.metric('reloader_api_watch_errors_total{resource="secrets"}') >= 1

    # The API comes back (same port, state kept) with a newer version: it wins.
    sandbox.start()
    cluster.put_secret(_config("14s"))
    wait_for(lambda: "scrape_interval: 14s" in prom.status_config(), timeout=20,
             what="the API's newer config after it returned")


def test_init_mode_reads_the_api_and_exits(tmp_path, sandbox, sandbox_kubeconfig, cluster, reloader_factory):
    mounted, out, rules_mount, rules_dir = _layout(tmp_path)
    cluster.put_secret(_config("21s", rules_dir))
    cluster.put_configmap({"x.yaml": _rules("x")})
    mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("20s", rules_dir))})
    init = reloader_factory([f"--kubeconfig={sandbox_kubeconfig}", f"--config-file={mounted.root / 'prometheus.yaml.gz'}",
                             f"--config-envsubst-file={out}", f"--watch-secret={NS}/prometheus-k8s",
                             f"--watch-configmap={NS}/prometheus-k8s-rulefiles-0={rules_dir}", "--watch-interval=0"],
                            env={"POD_NAME": "p-0"})
    assert init.wait_exit(timeout=20) == 0
    assert "scrape_interval: 21s" in out.read_text()
    assert (rules_dir / "x.yaml").read_text() == _rules("x")


def test_init_mode_without_api_uses_the_mounted_file(tmp_path, reloader_factory):
    mounted, out, rules_mount, rules_dir = _layout(tmp_path)
    mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("20s"))})
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}], "users": [{"name": "x", "user": {}}]}))
    init = reloader_factory([f"--kubeconfig={kubeconfig}", f"--config-file={mounted.root / 'prometheus.yaml.gz'}",
                             f"--config-envsubst-file={out}", f"--watch-secret={NS}/prometheus-k8s",
                             "--watch-interval=0"])
    assert init.wait_exit(timeout=20) == 0
    assert "scrape_interval: 20s" in out.read_text()


@pytest.mark.parametrize("args, message", [
    (["--watch-secret=nonamespace", "--config-envsubst-file=/tmp/x"], "expected NAMESPACE/NAME"),
    (["--watch-secret=a/b"], "--watch-secret needs --config-envsubst-file"),
    (["--watch-configmap=a/b"], "expected NAMESPACE/NAME=DIR"),
    (["--watch-secret=a/b", "--config-envsubst-file=/tmp/x", "--kubeconfig=/nonexistent/kubeconfig"],
     "cannot load Kubernetes API credentials"),
])
def test_bad_api_flags_are_one_line_errors(args, message, reloader_factory):
    proc = reloader_factory(args)
    assert proc.wait_exit(timeout=20) == 2
    errors = [e for e in proc.logs if e.get("level") == "error"]
    assert len(errors) == 1 and message in errors[0]["err"], proc.lines


def test_watch_survives_dropped_watches_410_and_error_bursts(tmp_path, sandbox, sandbox_kubeconfig, cluster,
                                                             reloader_factory, fast_flags):
    from reloader_testlib import CountingServer

    out = tmp_path / "out" / "prometheus.env.yaml"
    out.parent.mkdir()
    cluster.put_secret(_config("1s"))
    prom = CountingServer()
    try:
        side = reloader_factory([f"--kubeconfig={sandbox_kubeconfig}", f"--watch-secret={NS}/prometheus-k8s",
                                 f"--config-envsubst-file={out}", f"--reload-url={prom.url}", *fast_flags])
        wait_for(lambda: out.exists() and "scrape_interval: 1s" in out.read_text(), what="the first config")
        # a dropped watch, then an expired resourceVersion on resume, then 500s and 429s on the re-reads
        for n, fault in enumerate(["close", "compact", "errors"], start=2):
            watches = sandbox.count_requests(verb="watch", resource="secrets")
            if fault == "errors":
                sandbox.faults.fail_next(2, 500, verb="get", resource="secrets")
                sandbox.faults.fail_next(2, 429, verb="watch", resource="secrets", retry_after=0)
            if fault == "compact":
                cluster.put_secret(_config("99s"))  # an edit the reloader sees...
                wait_for(lambda: "scrape_interval: 99s" in out.read_text(), what="the edit before compaction")
                sandbox.faults.stall_watches(True)  # no event or bookmark moves the reloader's version now
                cluster.put_configmap({"x": "y"}, name="unrelated")  # the server moves past it...
                sandbox.faults.compact()  # ...and forgets the history in between
            sandbox.faults.close_watches()
            sandbox.faults.stall_watches(False)
            wait_for(lambda: sandbox.count_requests(verb="watch", resource="secrets") > watches,
                     what=f"a new watch after {fault}")
            last_close = [time.monotonic()]

            def every_fault_met() -> bool:
                if sandbox.faults.pending() == 0:
                    return True
                # a watch request that passed the fault check just before the failures were injected
                # registers after close_watches() and streams on: close again until the reloader
                # has made the requests that meet the failures
                if time.monotonic() - last_close[0] > 0.5:
                    sandbox.faults.close_watches()
                    last_close[0] = time.monotonic()
                return False
            wait_for(every_fault_met, timeout=20, what="the reloader to meet every fault")
            cluster.put_secret(_config(f"{n}s"))
            wait_for(lambda: f"scrape_interval: {n}s" in out.read_text(), timeout=20,
                     what=f"the edit after {fault}; log: " + "\n".join(side.lines[-5:]))
        assert side.metric('reloader_api_watch_errors_total{resource="secrets"}') >= 1
        assert side.find_log("watch version expired; reading the object again") is not None
    finally:
        prom.close()


def test_kubelet_refreshing_the_mounted_secret_causes_no_reload(tmp_path, sandbox, sandbox_kubeconfig, cluster,
                                                                reload_server, reloader_factory, fast_flags):
    """The operator's fast-reload sidecar also has `--watched-dir` on the mounted config Secret's directory.
    kubelet's periodic refresh of that mount, with content the API already delivered (or an older one),
    changes neither the config nor the rules Prometheus loads: it must not reload Prometheus."""
    mounted, out, rules_mount, rules_dir = _layout(tmp_path)
    cluster.put_secret(_config("11s", rules_dir))
    cluster.put_configmap({"a.yaml": _rules("first")})
    mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("10s", rules_dir))})  # kubelet lags the API
    rules_mount.publish({"a.yaml": _rules("old")})
    prom = reload_server()
    args = _args(sandbox_kubeconfig, mounted, out, rules_mount, rules_dir, 1, fast_flags)
    side = reloader_factory([a for a in args if not a.startswith("--reload-url=")] + [f"--reload-url={prom.url}"])
    wait_for(lambda: out.exists() and "scrape_interval: 11s" in out.read_text(), what="the API's config written")
    wait_for(lambda: (rules_dir / "a.yaml").exists() and "first" in (rules_dir / "a.yaml").read_text(),
             what="the API's rules written")
    side.wait_reloaded(1)

    def settled_after(change) -> None:
        """Run `change`, then wait for the pass it causes and for a marker reload after it."""
        passes = side.count_logs("pass finished")
        change()
        wait_for(lambda: side.count_logs("pass finished") > passes, what="a pass after kubelet's refresh")

    reloads = prom.posts
    # kubelet catches up with exactly what the API showed: the same config, the same rules
    settled_after(lambda: (mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("11s", rules_dir))}),
                           rules_mount.publish({"a.yaml": _rules("first")})))
    # kubelet's periodic refresh again, with nothing new (a new ..data timestamp directory)
    settled_after(lambda: mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("11s", rules_dir))}))
    # a refresh bringing back the older content the API has already replaced
    settled_after(lambda: mounted.publish_bytes({"prometheus.yaml.gz": gz(_config("10s", rules_dir))}))
    assert prom.posts == reloads, side.lines[-20:]
    assert "scrape_interval: 11s" in out.read_text()
    # while a real change through the API still reloads
    cluster.put_configmap({"a.yaml": _rules("second")})
    wait_for(lambda: prom.posts > reloads, what="a reload for the API's rule change")
