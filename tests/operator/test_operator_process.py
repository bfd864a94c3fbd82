"""`promop run` as a user runs it: a subprocess with a kubeconfig, HTTP endpoints, SIGTERM, retries."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest
from operator_testlib import FAST_LEASE, NS, ROOT, eventually, jobs, prometheus, scaled, service_monitor

from promop.kube.client import KubeClient
from promop.operator.install import install_crds
from promop.sandbox import Sandbox


class Proc:
    """A `promop run` subprocess whose stderr is collected line by line."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.p = subprocess.Popen([sys.executable, "-m", "promop", "run", *args], stderr=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
        self.lines: list[str] = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self) -> None:
        for line in self.p.stderr:
            self.lines.append(line.rstrip("\n"))

    def grep(self, pattern: str) -> list[str]:
        return [line for line in list(self.lines) if re.search(pattern, line)]

    def url(self) -> str:
        line = eventually(lambda: self.grep(r"serving /metrics"), 20, "the web endpoint")[0]
        return "http://" + re.search(r"address\"?[=:] ?\"?([\d.]+:\d+)", line).group(1)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(scaled(10))


def children(pid: int) -> list[int]:
    """Live worker processes of `pid` (multiprocessing's spawned workers; its resource tracker, which
    lives as long as its parent, does not count)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            kids = [int(k) for k in fh.read().split()]
    except OSError:
        return []
    alive = []
    for kid in kids:
        try:
            with open(f"/proc/{kid}/cmdline", "rb") as fh:
                if b"spawn_main" in fh.read():
                    alive.append(kid)
        except OSError:
            pass
    return alive


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def proc_factory():
    procs: list[Proc] = []

    def make(*args: str) -> Proc:
        procs.append(Proc(*args))
        return procs[-1]
    yield make
    for p in procs:
        p.stop()


def context_kubeconfig(cluster, path) -> str:
    """A kubeconfig whose current context is a dead apiserver, and whose context `live` is `cluster`."""
    import socket

    import yaml

    from promop.sandbox.kubeconfig import kubeconfig_dict

    with socket.socket() as s:  # a port nothing listens on: the current context's dead apiserver
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    config = kubeconfig_dict(dead)
    live = kubeconfig_dict(cluster.url)
    for section in ("clusters", "users", "contexts"):
        entry = live[section][0]
        entry["name"] = "live"
        config[section].append(entry)
    config["contexts"][-1]["context"].update(cluster="live", user="live")
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_run_serves_endpoints_and_exits_0_on_sigterm_against_the_context_flag_s_cluster(cluster, tmp_path,
                                                                                        proc_factory):
    """One `promop run` (a process start and a cache sync are seconds on a loaded machine) for two stories:
    --context selects the cluster (the kubeconfig's current context is dead), and the process serves its
    endpoints, logs JSON and exits 0 on SIGTERM."""
    kubeconfig = context_kubeconfig(cluster, tmp_path / "kubeconfig")
    proc = proc_factory("--kubeconfig", kubeconfig, "--context", "live", "--web.listen-address", "127.0.0.1:0",
                        "--log-format", "json")
    url = proc.url()
    assert http_get(url + "/healthz")[0] == 200
    eventually(lambda: http_get(url + "/readyz")[0] == 200, 30, "/readyz 200 (against the --context cluster)")
    assert not proc.grep("apiserver unreachable")
    code, metrics = http_get(url + "/metrics")
    assert code == 200
    for name in ("prometheus_operator_reconcile_operations_total", "prometheus_operator_ready",
                 "prometheus_operator_build_info", "prometheus_operator_managed_resources",
                 "prometheus_operator_syncs", "prometheus_operator_triggered_total",
                 "prometheus_operator_kubernetes_client_http_requests_total",
                 "prometheus_operator_list_operations_total", "prometheus_operator_watch_operations_total",
                 "prometheus_operator_workqueue_depth"):
        assert name in metrics, name
    eventually(lambda: 'prometheus_operator_ready{controller="prometheus"} 1.0' in http_get(url + "/metrics")[1],
               10, "ready=1 once the workers run")
    # ... and, once the first syncs are done, what they built (promop.operator.gcfreeze)
    eventually(lambda: proc.grep("first syncs done; what they built is frozen"), scaled(30), "the second freeze")
    # the first render's second process (promop.operator.render_pool), when there are 2 CPUs: stopped
    # once the first syncs are done, no process left behind
    if proc.grep("first render in this process only"):
        assert not children(proc.p.pid)
    else:
        eventually(lambda: proc.grep('"msg": "render worker stopped"'), scaled(30), "the render worker stopped")
        eventually(lambda: not children(proc.p.pid), scaled(30), "the render worker's process gone")
    proc.p.send_signal(signal.SIGTERM)
    assert proc.p.wait(scaled(30)) == 0
    assert proc.grep('"msg": "stopped"')
    import json
    for line in proc.lines:
        json.loads(line)  # every log line is structured
    # the caches are frozen out of the cyclic GC's sight once, after they synced
    synced = [json.loads(line) for line in proc.lines if '"caches synced"' in line]
    assert synced and synced[0]["frozen_objects"] > 0


def test_unreachable_apiserver_is_retried_then_missing_crds_keep_it_unready_until_installed(tmp_path,
                                                                                              proc_factory):
    """One `promop run` through a cluster coming up: no apiserver yet (retried and logged, unready), then an
    apiserver without the CRDs (still unready, saying what it waits for), then the CRDs (ready)."""
    import socket

    # a port bound but not listening refuses connections, and no parallel process can take it
    # before the sandbox comes up on it
    reserved = socket.socket()
    reserved.bind(("127.0.0.1", 0))
    port = reserved.getsockname()[1]
    try:
        kubeconfig = Sandbox(port=port).write_kubeconfig(tmp_path / "kubeconfig")
        proc = proc_factory("--kubeconfig", kubeconfig, "--web.listen-address", "127.0.0.1:0")
        url = proc.url()
        eventually(lambda: len(proc.grep("apiserver unreachable; retrying")) >= 2, 20, "two logged retries")
        assert http_get(url + "/healthz")[0] == 200
        assert http_get(url + "/readyz")[0] == 503
        assert proc.p.poll() is None
    finally:
        reserved.close()
    sb2 = Sandbox(port=port).start()
    try:
        eventually(lambda: proc.grep("apiserver reachable"), 30, "the retry that reaches the apiserver")
        eventually(lambda: proc.grep("waiting for caches to sync"), 30, "a log saying what it waits for")
        code, body = http_get(url + "/readyz")
        assert code == 503 and "prometheuses" in body
        install_crds(KubeClient(sb2.api_client()), ROOT / "crds")
        eventually(lambda: http_get(url + "/readyz")[0] == 200, 60, "ready once the CRDs exist")
        proc.p.send_signal(signal.SIGTERM)
        assert proc.p.wait(scaled(30)) == 0
    finally:
        sb2.stop()


def test_bad_flags_exit_2_with_a_message(proc_factory):
    proc = proc_factory("--namespaces", "a", "--deny-namespaces", "b")
    assert proc.p.wait(scaled(30)) == 2
    eventually(lambda: proc.grep("mutually exclusive"), 5, "the error message")


def test_killed_leader_is_replaced_by_the_standby(cluster, kube, tmp_path, proc_factory, start_operator):
    from promop.kube.resources import NAMESPACES, PROMETHEUSES, SERVICEMONITORS

    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    timings = ["--leader-election-lease-duration", str(FAST_LEASE["lease_duration"]),
               "--leader-election-renew-deadline", str(FAST_LEASE["renew_deadline"]),
               "--leader-election-retry-period", str(FAST_LEASE["retry_period"])]
    leader = proc_factory("--kubeconfig", kubeconfig, "--web.listen-address", "127.0.0.1:0", "--leader-elect",
                          "--leader-election-namespace", "default", "--leader-election-identity", "first", *timings)
    eventually(lambda: leader.grep("became leader"), 30, "the subprocess to lead")
    standby = start_operator(leader_elect=True, lease_namespace="default", identity="second",
                             leader_kwargs=FAST_LEASE)
    assert not standby.operator.leading.is_set()
    leader.p.send_signal(signal.SIGKILL)  # no release: the standby must wait for the lease to expire
    leader.p.wait(scaled(10))
    eventually(standby.operator.leading.is_set, 20, "the standby to take over")
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    kube.create(PROMETHEUSES, prometheus())
    kube.create(SERVICEMONITORS, service_monitor("a"))
    eventually(lambda: jobs(kube) == [f"serviceMonitor/{NS}/a/0"], 20, "the new leader's config")


def test_sigterm_stops_within_10_s_whatever_the_feedback_backlog(cluster, kube, tmp_path, proc_factory):
    """100 ServiceMonitors, every status write slowed to 0.6 s: the bindings backlog is about 15 s
    (4 feedback workers), longer than the 10 s allowed, as 300 at 0.2 s would be, for a third of the
    objects to create and render. The config Secret is written first, and SIGTERM during the backlog
    exits 0 within 10 s (Kubernetes gives 30 s), the backlog dropped for the next leader."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from promop.kube.resources import NAMESPACES, PROMETHEUSES, SERVICEMONITORS

    MONITORS = 100  # noqa: N806

    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: kube.create(SERVICEMONITORS, service_monitor(f"sm{i:03d}")), range(MONITORS)))
    kube.create(PROMETHEUSES, prometheus())
    cluster.faults.add_latency(0.6, verb="update", resource="servicemonitors")
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    proc = proc_factory("--kubeconfig", kubeconfig, "--web.listen-address", "127.0.0.1:0")
    eventually(lambda: len(jobs(kube) or []) == MONITORS, 60, "the config Secret with every job")

    def bound() -> int:
        return sum(1 for o in kube.list(SERVICEMONITORS, NS)["items"] if (o.get("status") or {}).get("bindings"))
    # SIGTERM while the backlog is being written (not before the first write: then nothing would be in flight)
    assert eventually(bound, 30, "the first status.bindings written") < MONITORS, \
        "the backlog was already written: the test proves nothing"
    started = time.monotonic()
    proc.p.send_signal(signal.SIGTERM)
    assert proc.p.wait(scaled(30)) == 0
    took = time.monotonic() - started
    assert took < 10, f"SIGTERM took {took:.1f} s"
    # by the graceful shutdown, not the hard stop (which exits 1, HARD_STOP_SECONDS after the signal)
    assert not proc.grep("shutdown did not finish in time"), proc.lines[-5:]
    assert bound() < MONITORS  # dropped, not drained


def test_unknown_feature_gate_exit_2_with_a_message(proc_factory):
    proc = proc_factory("--feature-gates", "PrometheusAgentDaemonSet=true,Nope=true")
    assert proc.p.wait(scaled(30)) == 2
    eventually(lambda: proc.grep("unknown feature gate 'Nope'"), 5, "the error message")
