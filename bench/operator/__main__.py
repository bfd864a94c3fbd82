"""Operator benchmarks, one command: `python3 -m bench.operator [--monitors 1000] [--changes 100] [--secrets 10000]
[--feedback-monitors 5000] [--edits 20] [--latency-ms 15] [--only feedback]`.

0. Feedback never delays configuration (issue 12 §2): see `feedback_backlog`.
1. Propagation latency with N ServiceMonitors present: the time from a ServiceMonitor
   update on the API to the updated config Secret arriving on a watch, p50/p99 over
   `--changes` changes. Baseline, same run: the time for the ServiceMonitor update itself
   to arrive on a watch (the floor any operator pays).
2. API writes per change, by resource: must be exactly the objects whose content changed
   (the config Secret and the changed monitor's status binding).
3. Operator RSS with `--secrets` Secrets in the cluster: `promop run` subprocesses with
   metadata-only Secret/ConfigMap informers (the default) against full-object informers.

The sandbox runs in this process; the operator of part 3 runs in child processes. The command
exits 1 when a target is missed (p99 not sub-second, writes other than exactly the changed
objects, metadata-only informers not smaller).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from promop.kube.client import KubeClient
from promop.kube.errors import Conflict
from promop.kube.informer import Informer
from promop.kube.resources import NAMESPACES, PROMETHEUSES, SECRETS, SERVICEMONITORS
from promop.operator.app import Operator
from promop.operator.install import install_crds
from promop.operator.options import Options
from promop.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]
NS = "bench"
AGENT = "promop-bench-operator"


def service_monitor(i: int, interval: str = "30s") -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": f"sm-{i:05d}", "namespace": NS, "labels": {"team": f"t{i % 10}"}},
            "spec": {"selector": {"matchLabels": {"app": f"app-{i}"}},
                     "endpoints": [{"port": "web", "interval": interval, "path": "/metrics"}]}}


def wait_for(check, timeout: float, what: str, poll: float = 0.001) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(poll)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def propagation(monitors: int, changes: int) -> dict:
    with Sandbox(port=0, simulate_statefulsets=True) as sb:
        kube = KubeClient(sb.api_client(), qps=10000, burst=10000)
        install_crds(kube, ROOT / "crds")
        kube.create(NAMESPACES, {"metadata": {"name": NS}})
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: kube.create(SERVICEMONITORS, service_monitor(i)), range(monitors)))
        kube.create(PROMETHEUSES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                                   "metadata": {"name": "p", "namespace": NS},
                                   "spec": {"serviceMonitorSelector": {}}})
        api = sb.api_client()
        api.user_agent = AGENT
        op = Operator(Options(workers=2), client=KubeClient(api, qps=10000, burst=10000), web=False)
        stop = threading.Event()
        thread = threading.Thread(target=op.run, args=(stop,), daemon=True)
        started = time.perf_counter()
        thread.start()

        # watches the bench observes with (plain informers, in this process)
        sms = Informer(KubeClient(sb.api_client()), SERVICEMONITORS, namespace=NS)
        secrets = Informer(KubeClient(sb.api_client()), SECRETS, namespace=NS,
                           field_selector="metadata.name=prometheus-p")
        seen: dict[str, float] = {}
        sms.add_handler(on_update=lambda old, new: seen.setdefault("sm:" + new["metadata"]["resourceVersion"],
                                                                   time.perf_counter()))
        secrets.add_handler(on_add=lambda o, initial: seen.setdefault("secret", time.perf_counter()),
                            on_update=lambda old, new: seen.setdefault(
                                "secret:" + new["metadata"]["resourceVersion"], time.perf_counter()))
        sms.start()
        secrets.start()
        sms.wait_for_sync(60)
        secrets.wait_for_sync(60)
        wait_for(lambda: op.controller is not None and f"{NS}/p" in op.controller.syncer.last_report, 120,
                 "the first sync")
        first_sync = time.perf_counter() - started
        wait_for(lambda: len(op.controller.queue) == 0 and op.controller.queue.processing() == 0
                 and op.controller.reporter.idle(), 120, "idle (config and feedback)")

        ops = op.controller.metrics.reconcile_operations.labels("prometheus")
        syncs_before = ops._value.get()
        latencies, baseline, writes = [], [], []
        by_resource: dict[str, int] = {}
        for n in range(changes):
            i = (n * 37) % monitors
            sb.reset_requests()
            before = {k for k in list(seen) if k.startswith("secret:")}
            sm = kube.get(SERVICEMONITORS, f"sm-{i:05d}", NS)
            sm["spec"]["endpoints"][0]["interval"] = f"{31 + n}s"  # never the original 30s
            t0 = time.perf_counter()
            new_rv = kube.update(SERVICEMONITORS, sm, NS)["metadata"]["resourceVersion"]
            wait_for(lambda: any(k.startswith("secret:") and k not in before for k in list(seen)), 30, "the config Secret")
            wait_for(lambda: "sm:" + new_rv in seen, 30, "the ServiceMonitor event")
            secret_at = min(seen[k] for k in list(seen) if k.startswith("secret:") and k not in before)
            latencies.append(secret_at - t0)
            baseline.append(seen["sm:" + new_rv] - t0)
            wait_for(lambda: len(op.controller.queue) == 0 and op.controller.queue.processing() == 0
                     and op.controller.queue.waiting() == 0 and op.controller.reporter.idle(), 30, "idle")
            mine = [r for r in sb.requests if r.is_write and r.user_agent.startswith(AGENT)]
            writes.append(len(mine))
            for r in mine:
                key = r.resource + (f"/{r.subresource}" if r.subresource else "")
                by_resource[key] = by_resource.get(key, 0) + 1
        syncs = (ops._value.get() - syncs_before) / changes
        stop.set()
        thread.join(30)
        sms.stop()
        secrets.stop()
        return {"first_sync_s": first_sync, "p50": statistics.median(latencies), "p99": pct(latencies, 99),
                "base_p50": statistics.median(baseline), "base_p99": pct(baseline, 99),
                "writes_per_change": statistics.mean(writes), "writes_max": max(writes), "syncs_per_change": syncs,
                "by_resource": {k: v / changes for k, v in sorted(by_resource.items())}}


WRITE_VERBS = ("create", "update", "patch", "delete")


def feedback_backlog(monitors: int, edits: int, latency: float) -> dict:
    """Issue 12 §2: `monitors` ServiceMonitors, every write slowed by `latency` s (a real etcd-backed
    write), the operator at its default client rate limit (--kube-api-qps/--kube-api-burst). Edits
    are made one after another right after the first config Secret write, while the status.bindings
    backlog is being written; each is timed until its config Secret update arrives on a watch.
    Then: the time until every binding is written, and how long a stop (what SIGTERM sets) takes
    with a backlog (a second Prometheus selecting everything)."""
    defaults = Options()
    with Sandbox(port=0, simulate_statefulsets=True) as sb:
        kube = KubeClient(sb.api_client(), qps=10000, burst=10000)
        install_crds(kube, ROOT / "crds")
        kube.create(NAMESPACES, {"metadata": {"name": NS}})
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: kube.create(SERVICEMONITORS, service_monitor(i)), range(monitors)))
        kube.create(PROMETHEUSES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                                   "metadata": {"name": "p", "namespace": NS},
                                   "spec": {"serviceMonitorSelector": {}}})
        for verb in WRITE_VERBS:
            sb.faults.add_latency(latency, verb=verb)
        sms = Informer(KubeClient(sb.api_client()), SERVICEMONITORS, namespace=NS)
        secrets = Informer(KubeClient(sb.api_client()), SECRETS, namespace=NS,
                           field_selector="metadata.name=prometheus-p")
        seen: dict[str, float] = {}
        secrets.add_handler(on_add=lambda o, initial: seen.setdefault("secret:first", time.perf_counter()),
                            on_update=lambda old, new: seen.setdefault(
                                "secret:" + new["metadata"]["resourceVersion"], time.perf_counter()))
        sms.start()
        secrets.start()
        sms.wait_for_sync(120)
        secrets.wait_for_sync(120)

        def bound(prom: str = "p") -> int:
            return sum(1 for o in sms.store.list()
                       if any(b.get("name") == prom for b in (o.get("status") or {}).get("bindings") or ()))

        op = Operator(Options(gc_freeze=True), client=KubeClient(sb.api_client(), qps=defaults.kube_api_qps,
                                                   burst=defaults.kube_api_burst), web=False)
        stop = threading.Event()
        thread = threading.Thread(target=op.run, args=(stop,), daemon=True)
        started = time.perf_counter()
        thread.start()
        wait_for(lambda: "secret:first" in seen, 300, "the first config Secret", 0.005)
        first_secret = seen["secret:first"] - started
        latencies, backlog_at_edit = [], []
        for n in range(edits):
            i = (n * 37) % monitors
            before = set(seen)
            backlog_at_edit.append(monitors - bound())
            while True:  # as any client: the operator may write the object's status between GET and PUT
                sm = kube.get(SERVICEMONITORS, f"sm-{i:05d}", NS)
                sm["spec"]["endpoints"][0]["interval"] = f"{31 + n}s"
                t0 = time.perf_counter()
                try:
                    kube.update(SERVICEMONITORS, sm, NS)
                    break
                except Conflict:
                    continue
            wait_for(lambda: any(k not in before for k in list(seen)), 60, "the config Secret update")
            latencies.append(min(seen[k] for k in list(seen) if k not in before) - t0)
        wait_for(lambda: bound() == monitors, 900, "every status.bindings", 0.05)
        all_bound = time.perf_counter() - started

        # a stop with a backlog: a second Prometheus selecting every ServiceMonitor
        kube.create(PROMETHEUSES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                                   "metadata": {"name": "q", "namespace": NS},
                                   "spec": {"serviceMonitorSelector": {}}})
        wait_for(lambda: bound("q") > 0, 300, "q's first bindings", 0.01)
        backlog_at_stop = monitors - bound("q")
        t0 = time.perf_counter()
        stop.set()
        thread.join(60)
        stop_s = time.perf_counter() - t0
        sms.stop()
        secrets.stop()
        return {"first_secret_s": first_secret, "p50": statistics.median(latencies), "p99": pct(latencies, 99),
                "max": max(latencies), "backlog_min": min(backlog_at_edit), "all_bound_s": all_bound,
                "stop_s": stop_s, "backlog_at_stop": backlog_at_stop, "stopped": not thread.is_alive()}


def secret(i: int) -> dict:
    """A Helm-release-like Secret: ~8 KiB of opaque data."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": f"sh.helm.release.v1.app-{i:05d}.v1", "namespace": f"apps-{i % 10}",
                         "labels": {"owner": "helm", "name": f"app-{i:05d}"}},
            "data": {"release": (f"{i:08d}" * 1024)[:8192]}}


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("VmRSS missing")


def operator_rss(kubeconfig: str, full: bool) -> dict:
    args = [sys.executable, "-m", "promop", "run", "--kubeconfig", kubeconfig, "--web.listen-address",
            "127.0.0.1:0", "--log-level", "info"]
    if full:
        args.append("--full-secret-informers")
    proc = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: [lines.append(line) for line in proc.stderr], daemon=True)
    reader.start()
    try:
        wait_for(lambda: any("serving /metrics" in line for line in lines), 60, "the web endpoint", 0.05)
        url = "http://" + re.search(r"address=([\d.]+:\d+)", next(l for l in lines if "serving /metrics" in l)).group(1)
        started = time.perf_counter()

        def ready() -> bool:
            try:
                return urllib.request.urlopen(url + "/readyz", timeout=5).status == 200
            except OSError:
                return False
        wait_for(ready, 300, "caches synced", 0.05)
        synced = time.perf_counter() - started
        # RSS once steady: sample until two consecutive samples 0.5 s apart agree within 1%
        last = rss_kb(proc.pid)
        while True:
            time.sleep(0.5)
            now = rss_kb(proc.pid)
            if abs(now - last) <= last * 0.01:
                return {"rss_mb": now / 1024, "sync_s": synced}
            last = now
    finally:
        proc.terminate()
        proc.wait(30)


def memory(secrets: int) -> dict:
    with Sandbox(port=0) as sb:
        kube = KubeClient(sb.api_client(), qps=10000, burst=10000)
        install_crds(kube, ROOT / "crds")
        for n in range(10):
            kube.create(NAMESPACES, {"metadata": {"name": f"apps-{n}"}})
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: kube.create(SECRETS, secret(i)), range(secrets)))
        kubeconfig = sb.write_kubeconfig(Path(tempfile.mkdtemp(prefix="promop-bench-")) / "kubeconfig")
        meta = operator_rss(kubeconfig, full=False)
        full = operator_rss(kubeconfig, full=True)
        return {"meta": meta, "full": full}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench.operator", description=__doc__.split("\n")[0])
    parser.add_argument("--monitors", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--secrets", type=int, default=10000)
    parser.add_argument("--feedback-monitors", type=int, default=5000)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=15.0, help="injected latency per write")
    parser.add_argument("--only", choices=("propagation", "feedback", "memory"), action="append",
                        help="run only these parts (repeatable; default: all)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    parts = set(args.only or ("propagation", "feedback", "memory"))
    missed: list[str] = []
    if "feedback" in parts:
        f = feedback_backlog(args.feedback_monitors, args.edits, args.latency_ms / 1000)
        print(f"\n0. Feedback backlog: {args.feedback_monitors} ServiceMonitors, {args.latency_ms:g} ms per write, "
              f"default client limit (qps {Options().kube_api_qps:g}, burst {Options().kube_api_burst})")
        print(f"   first config Secret written        {f['first_secret_s']:8.2f} s after start")
        print(f"   edit -> config Secret, {args.edits} edits  p50 {f['p50'] * 1e3:7.1f} ms  p99 {f['p99'] * 1e3:7.1f} ms"
              f"  (bindings still unwritten at each edit: at least {f['backlog_min']})")
        print(f"   every status.bindings written       {f['all_bound_s']:8.2f} s after start")
        print(f"   stop with {f['backlog_at_stop']} bindings unwritten     {f['stop_s']:8.2f} s")
        if f["p99"] >= 1.0:
            missed.append(f"edit -> Secret p99 {f['p99']:.2f} s with a feedback backlog is not under 1 s")
        if f["backlog_min"] <= 0:
            missed.append("the edits were not made while bindings were still being written")
        if not f["stopped"] or f["stop_s"] >= 10:
            missed.append(f"stop with a backlog took {f['stop_s']:.1f} s (limit 10 s)")
    p = m = None
    if "propagation" in parts:
        p = propagation(args.monitors, args.changes)
        print(f"\n1. ServiceMonitor change -> config Secret, {args.monitors} ServiceMonitors, {args.changes} changes "
              f"(first full sync {p['first_sync_s']:.2f} s)")
        print(f"{'':28}{'p50 ms':>10}{'p99 ms':>10}")
        print(f"{'operator (SM -> Secret)':28}{p['p50'] * 1e3:>10.1f}{p['p99'] * 1e3:>10.1f}")
        print(f"{'baseline (SM watch event)':28}{p['base_p50'] * 1e3:>10.1f}{p['base_p99'] * 1e3:>10.1f}")
        print(f"{'ratio':28}{p['p50'] / p['base_p50']:>10.1f}{p['p99'] / p['base_p99']:>10.1f}")
        print(f"\n2. API writes per change: mean {p['writes_per_change']:.2f}, max {p['writes_max']} "
              f"(syncs per change: {p['syncs_per_change']:.2f})")
        for res, per in p["by_resource"].items():
            print(f"   {res:32} {per:.2f}")
    if "memory" in parts:
        m = memory(args.secrets)
        print(f"\n3. operator RSS with {args.secrets} Secrets (~8 KiB each)")
        print(f"{'':28}{'RSS MB':>10}{'sync s':>10}")
        for name, r in (("metadata-only informers", m["meta"]), ("full-object informers", m["full"])):
            print(f"{name:28}{r['rss_mb']:>10.1f}{r['sync_s']:>10.2f}")
        print(f"{'ratio (metadata / full)':28}{m['meta']['rss_mb'] / m['full']['rss_mb']:>10.2f}")
    missed += missed_targets(p, m)
    print("\ntargets: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
    return 1 if missed else 0


# What a change must write: the config Secret, and the changed monitor's own status.bindings.
EXPECTED_WRITES = {"secrets": 1.0, "servicemonitors/status": 1.0}


def missed_targets(p: dict | None, m: dict | None) -> list[str]:
    """The issue's targets this run did not meet (the command exits 1 if any); None: part not run."""
    missed = []
    if p is None:
        pass
    elif p["p99"] >= 1.0:
        missed.append(f"propagation p99 {p['p99']:.2f} s is not sub-second")
    if p is not None and (p["by_resource"] != EXPECTED_WRITES or p["writes_max"] != sum(EXPECTED_WRITES.values())):
        missed.append(f"writes per change {p['by_resource']} (max {p['writes_max']}) are not exactly "
                      f"the changed objects {EXPECTED_WRITES}")
    if m is not None and m["meta"]["rss_mb"] >= m["full"]["rss_mb"]:
        missed.append("metadata-only informers do not use less memory than full-object ones")
    return missed


if __name__ == "__main__":
    raise SystemExit(main())
