"""10,000 ScaledObjects on the real control plane (issue 31's benchmark).

    python3 -m bench.keda [--objects 10000] [--queries 2000] [--namespaces 20] [--polling 30]
                          [--window 90] [--probes 8] [--rounds 3] [--active 0.75] [--quick]

What runs: the kit's control plane (/work/shared/kube start.sh, own KUBE_RUN_DIR, no node;
always stopped), the keda.sh CRDs from crds/, `promop autoscaler` as a process with the admin
kubeconfig, a stand-in Prometheus (bench/keda/stand_in.py) and the HPA path's load
(bench/keda/hpa_driver.py), each its own process.

The objects: `--objects` ScaledObjects over `--queries` distinct prometheus-trigger queries
(ScaledObject i uses query i mod Q), pollingInterval `--polling`, each on its own Deployment (a
target takes one ScaledObject). `--active` of the queries answer above activationThreshold and
their targets have 1 replica; the others answer 0 and their targets have 0.

Why Deployments, and kube-controller-manager without its deployment, replicaset and HPA
controllers: the controller needs each target's /scale subresource, and a Deployment is the
target users have (the controller keeps them in an informer, so a poll reads its replica count
without a request). With kcm's deployment controller on, every Deployment also gets a
ReplicaSet (twice the objects, and no node runs their pods anyway); the bench measures the
creation rate either way. kcm's HPA controller is off because at 10,000 HPAs it would make
~670 /scale reads a second against the apiserver on this 2-core machine and could not reach
the metrics path without the aggregator; its load on the metrics path is what
bench/keda/hpa_driver.py makes instead (one request per HPA per 15 s for every target with
replicas >= 1, KEDA's model), straight to the controller's metrics endpoint (what `promop
adapter --keda-metrics-url` forwards to).

Reported: Prometheus queries per second against KEDA's model for the same objects (one query
per poll plus one per HPA sync of a target with replicas >= 1; §6 of the KEDA reference); the
most queries of one distinct query in one polling interval (goal: 1); the controller's CPU
(cpu-seconds per second from /proc) and RSS (goal < 500 MiB); the first reconcile (controller
start -> every ScaledObject's scale loop running); the time from a value change at the stand-in
to the controller's metrics endpoint (what the HPA reads) serving it. Exits 1 when a goal is
missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.kubeplane import kit_present, start_plane

ROOT = Path(__file__).resolve().parents[2]
KCM_CONTROLLERS = "--controllers=*,-deployment,-replicaset,-horizontalpodautoscaling"
HPA_SYNC = 15.0      # kube-controller-manager's --horizontal-pod-autoscaler-sync-period default


# -- the objects ----------------------------------------------------------------------------------
def query_text(q: int) -> str:
    return f'sum(rate(http_requests_total{{service="svc-{q}"}}[2m]))'


def is_active(q: int, active: float) -> bool:
    """Spread the active queries evenly: query q is active when it falls in the first `active` of a
    block of 20 (0.75 -> 15 of every 20)."""
    return (q % 20) < round(active * 20)


def layout(n: int, queries: int, namespaces: int) -> list[tuple[str, str, int]]:
    """(namespace, name, query index) of each ScaledObject; its Deployment has the same name."""
    return [(f"bench-{i % namespaces}", f"app-{i}", i % queries) for i in range(n)]


def deployment(ns: str, name: str, replicas: int) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "bench:none"}]}}}}


def scaled_object(ns: str, name: str, q: int, prom_url: str, polling: int) -> dict:
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": name, "namespace": ns},
            "spec": {"scaleTargetRef": {"name": name}, "pollingInterval": polling, "maxReplicaCount": 10,
                     "triggers": [{"type": "prometheus", "metadata": {
                         "serverAddress": prom_url, "query": query_text(q), "threshold": "10"}}]}}


def create_all(client, res, bodies: list[dict], threads: int = 16) -> float:
    """Create every body (16 threads, the bench's client unthrottled); objects per second."""
    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda b: client.create(res, b), bodies))
    return len(bodies) / (time.monotonic() - started)


# -- the controller process -----------------------------------------------------------------------
class Proc:
    """/proc figures of a child: cpu-seconds and RSS."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK")

    def cpu(self) -> float:
        with open(f"/proc/{self.pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick

    def mem(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) in MiB."""
        out = {}
        with open(f"/proc/{self.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1]) / 1024
        return out.get("VmRSS", 0.0), out.get("VmHWM", 0.0)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for name in ("promop_keda_scale_loops", "promop_keda_prometheus_queries"):
        m = re.search(rf"^{name} ([0-9.e+]+)$", text, re.M)
        if m:
            out[name] = float(m.group(1))
    out["api_requests"] = sum(float(v) for v in re.findall(
        r'^prometheus_operator_kubernetes_client_http_requests_total\{[^}]*\} ([0-9.e+]+)$', text, re.M))
    m = re.search(r'^promop_keda_reconciles_total\{result="ok"\} ([0-9.e+]+)$', text, re.M)
    out["reconciles_ok"] = float(m.group(1)) if m else 0.0
    # why loops or writes fall behind: the status writer's backlog and writes, loop lateness, the
    # client's rate-limiter wait (seconds summed over requests), the apiserver's time
    for key, pattern in (("status_waiting", r"^promop_keda_status_writes_waiting ([0-9.e+-]+)$"),
                         ("status_writes", r'^promop_keda_status_writes_total\{result="ok"\} ([0-9.e+]+)$'),
                         ("status_retries", r'^promop_keda_status_writes_total\{result="retry"\} ([0-9.e+]+)$'),
                         ("lateness_last", r'^promop_keda_scale_loop_lateness_seconds\{which="last"\} ([0-9.e+-]+)$'),
                         ("lateness_max", r'^promop_keda_scale_loop_lateness_seconds\{which="max"\} ([0-9.e+-]+)$')):
        m = re.search(pattern, text, re.M)
        out[key] = float(m.group(1)) if m else 0.0
    for key, name in (("limiter", "prometheus_operator_kubernetes_client_rate_limiter_duration_seconds"),
                      ("api_time", "prometheus_operator_kubernetes_client_http_request_duration_seconds")):
        out[key] = sum(float(v) for v in re.findall(rf'^{name}_sum\{{.*\}} ([0-9.e+]+)$', text, re.M))
    return out


def served(port: int, ns: str, name: str) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/keda/v1/namespaces/{ns}/scaledobjects/{name}/metrics/"
                                    "s0-prometheus", timeout=10) as resp:
            return json.loads(resp.read())["items"][0]["value"]
    except (OSError, ValueError, KeyError, IndexError):
        return None


def post(url: str, body: bytes = b"") -> None:
    urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=10).read()


# -- the measurements -----------------------------------------------------------------------------
def wait_first_reconcile(web: int, n: int, started: float, limit: float, proc: subprocess.Popen) -> float:
    """Seconds from the controller's start until every ScaledObject has a running scale loop."""
    last_report = time.monotonic()
    while True:
        try:
            m = scrape(web)
        except OSError:
            m = {}
        if m.get("promop_keda_scale_loops", 0) >= n:
            return time.monotonic() - started
        if proc.poll() is not None:
            raise SystemExit(f"promop autoscaler exited ({proc.returncode}) before the first reconcile")
        if time.monotonic() - started > limit:
            raise SystemExit(f"first reconcile not done after {limit:.0f} s: {m}")
        if time.monotonic() - last_report > 60:
            last_report = time.monotonic()
            print(f"  ... {time.monotonic() - started:.0f} s: {int(m.get('promop_keda_scale_loops', 0))} loops, "
                  f"{int(m.get('reconciles_ok', 0))} reconciles, {int(m.get('status_writes', 0))} status writes "
                  f"({int(m.get('status_waiting', 0))} waiting), loop lateness {m.get('lateness_last', 0):.1f} s "
                  f"(max {m.get('lateness_max', 0):.1f}), API requests {int(m.get('api_requests', 0))}, "
                  f"rate-limiter wait {m.get('limiter', 0):.0f} s total", flush=True)
        time.sleep(1.0)


def probe_latency(keda_port: int, prom: str, probes: list[tuple[str, str, int]], rounds: int,
                  limit: float) -> list[float]:
    """Change each probe query's value at the stand-in; seconds until the metrics endpoint serves it."""
    samples = []
    for r in range(rounds):
        value = str(6 + r)   # active values stay active: only the HPA's number changes
        post(f"{prom}/set-many", json.dumps({query_text(q): value for _, _, q in probes}).encode())
        changed = time.monotonic()
        seen: dict[int, float] = {}
        lock = threading.Lock()

        def watch(i: int, ns: str, name: str) -> None:
            while time.monotonic() - changed < limit:
                if served(keda_port, ns, name) == value:
                    with lock:
                        seen[i] = time.monotonic() - changed
                    return
                time.sleep(0.1)

        ts = [threading.Thread(target=watch, args=(i, ns, name)) for i, (ns, name, _) in enumerate(probes)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        samples.extend(seen.get(i, float("inf")) for i in range(len(probes)))
    return samples


def per_interval_max(hits: dict[str, list[float]], start: float, end: float, interval: float) -> int:
    """The most requests of one query in any window of `interval` seconds inside [start, end)."""
    worst = 0
    for times in hits.values():
        ts = sorted(t for t in times if start <= t < end)
        j = 0
        for i, t in enumerate(ts):
            while ts[j] <= t - interval:
                j += 1
            worst = max(worst, i - j + 1)
    return worst


def steady(args, ctl: Proc, prom: str, keda_port: int, web: int, paths_file: Path, n_hpa: int,
           probes: list[tuple[str, str, int]]) -> dict:
    """The steady-state window: HPA-path load on, value-change probes, CPU/RSS/queries measured."""
    driver = subprocess.Popen([sys.executable, "-m", "bench.keda.hpa_driver", str(keda_port), str(args.hpa_sync),
                               str(args.window), str(paths_file), "4"], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        t0, cpu0, load0 = time.time(), ctl.cpu(), os.getloadavg()
        m0 = scrape(web)
        before = m0["promop_keda_prometheus_queries"]
        latency = probe_latency(keda_port, prom, probes, args.rounds, args.polling * 2 + 10)
        rest = args.window - (time.time() - t0)
        if rest > 0:
            time.sleep(rest)
        t1, cpu1, load1 = time.time(), ctl.cpu(), os.getloadavg()
        m1 = scrape(web)
        after = m1["promop_keda_prometheus_queries"]
        rss, hwm = ctl.mem()
        out, _ = driver.communicate(timeout=args.window + 120)
    finally:
        if driver.poll() is None:
            driver.kill()
    hits = json.loads(urllib.request.urlopen(f"{prom}/hits?since={t0}", timeout=60).read())
    total = sum(1 for times in hits.values() for t in times if t0 <= t < t1)
    secs = t1 - t0
    return {"seconds": secs, "queries": total, "qps": total / secs, "controller_queries": after - before,
            "distinct_seen": sum(1 for times in hits.values() if any(t0 <= t < t1 for t in times)),
            "max_per_interval": per_interval_max(hits, t0, t1, args.polling),
            "cpu": (cpu1 - cpu0) / secs, "api_rate": (m1["api_requests"] - m0["api_requests"]) / secs, "rss": rss, "hwm": hwm, "latency": latency,
            "status_rate": (m1["status_writes"] - m0["status_writes"]) / secs, "status_waiting": m1["status_waiting"],
            "lateness_last": m1["lateness_last"], "limiter_per_s": (m1["limiter"] - m0["limiter"]) / secs,
            "driver": json.loads(out.strip().splitlines()[-1]) if out.strip() else {}, "load": (load0, load1),
            "hpa_targets": n_hpa}


def count_ready(client, res) -> tuple[int, int]:
    ready = total = 0
    items, _ = client.list_all(res)
    for obj in items:
        total += 1
        conds = (obj.get("status") or {}).get("conditions") or []
        ready += any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
    return ready, total


def run(args) -> int:
    from promop.kube.client import KubeClient
    from promop.kube.resources import NAMESPACES, Resource

    if not kit_present():
        raise SystemExit("bench.keda needs the kube kit (/work/shared/kube or $PROMOP_KUBE_KIT)")
    deployments = Resource("apps", "v1", "deployments", kind="Deployment")
    scaledobjects = Resource("keda.sh", "v1alpha1", "scaledobjects", kind="ScaledObject")
    plane = None
    stand_in = ctl_proc = None
    tmp = Path(tempfile.mkdtemp(prefix="bench-keda-"))
    try:
        plane, took = start_plane(kcm_args=KCM_CONTROLLERS)
        print(f"control plane up in {took:.1f} s (kube-controller-manager {KCM_CONTROLLERS})", flush=True)
        for crd in sorted((ROOT / "crds").glob("keda.sh_*.yaml")) + [ROOT / "crds/autoscaling.promop.dev_memhpas.yaml"]:
            plane.kubectl("apply", "--server-side", "-f", str(crd))
        stand_in = subprocess.Popen([sys.executable, "-m", "bench.keda.stand_in"], cwd=ROOT, stdout=subprocess.PIPE,
                                    text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        prom = f"http://127.0.0.1:{stand_in.stdout.readline().strip()}"
        objs = layout(args.objects, args.queries, args.namespaces)
        post(f"{prom}/set-many", json.dumps({query_text(q): ("5" if is_active(q, args.active) else "0")
                                              for q in range(args.queries)}).encode())
        client = KubeClient.from_kubeconfig(plane.kubeconfig, qps=100000, burst=100000, pool_size=16)
        for i in range(args.namespaces):
            client.create(NAMESPACES, {"metadata": {"name": f"bench-{i}"}})
        dep_rate = create_all(client, deployments, [deployment(ns, name, 1 if is_active(q, args.active) else 0)
                                                     for ns, name, q in objs])
        so_rate = create_all(client, scaledobjects, [scaled_object(ns, name, q, prom, args.polling)
                                                     for ns, name, q in objs])
        print(f"created {args.objects} Deployments ({dep_rate:.0f}/s) and {args.objects} ScaledObjects "
              f"({so_rate:.0f}/s)", flush=True)
        keda_port, web = free_port(), free_port()
        log_path = tmp / "autoscaler.log"
        started = time.monotonic()
        # the client's rate limit through the command's own flags (bench/keda/launch.py changed the client's
        # defaults, which the command has overridden since it got --kube-api-qps: runs with it were at 50/s)
        limit = ["--kube-api-qps", f"{args.client_qps:g}", "--kube-api-burst", str(int(args.client_qps * 2))] \
            if args.client_qps else []
        ctl_proc = subprocess.Popen(
            [sys.executable, "-m", "promop", "autoscaler", *limit, "--kubeconfig", plane.kubeconfig, "--keda", "true",
             "--web.listen-address", f"127.0.0.1:{web}", "--keda-metrics-address", f"127.0.0.1:{keda_port}",
             "--prometheus-url", prom, "--log-level", "warn", "--workers", str(args.workers),
             "--keda-loop-workers", str(args.loop_workers)],
            cwd=ROOT, stdout=log_path.open("w"), stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
        ctl = Proc(ctl_proc.pid)
        try:
            first = wait_first_reconcile(web, args.objects, started, args.first_limit, ctl_proc)
        except SystemExit as exc:
            raise SystemExit(f"{exc}\n--- autoscaler log:\n{log_path.read_text()[-3000:]}") from None
        cpu_first = ctl.cpu()
        print(f"first reconcile: every scale loop running after {first:.1f} s (controller CPU {cpu_first:.1f} s, "
              f"--workers {args.workers}, --keda-loop-workers {args.loop_workers}, client qps "
              f"{args.client_qps or 50:g})",
              flush=True)
        time.sleep(args.polling + 2)   # every loop has polled once (first ticks spread over the interval)
        active = [(ns, name, q) for ns, name, q in objs if is_active(q, args.active)]
        paths_file = tmp / "paths"
        paths_file.write_text("".join(f"/keda/v1/namespaces/{ns}/scaledobjects/{name}/metrics/s0-prometheus\n"
                                      for ns, name, _ in active))
        probe_queries = sorted({q for _, _, q in active})[:args.probes]
        probes = [next(o for o in active if o[2] == q) for q in probe_queries]
        result = steady(args, ctl, prom, keda_port, web, paths_file, len(active), probes)
        ready, total = count_ready(client, scaledobjects)
        log_text = log_path.read_text()
        errors = len(re.findall(r"level=error", log_text))
        if args.out:
            Path(args.out).write_text(json.dumps({"args": vars(args), "result": result, "first": first,
                                                  "cpu_first": cpu_first, "dep_rate": dep_rate, "so_rate": so_rate,
                                                  "ready": ready, "total": total, "errors": errors}, default=str))
        return report(args, result, first, cpu_first, dep_rate, so_rate, ready, total, errors)
    finally:
        for p in (ctl_proc, stand_in):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
        if plane is not None:
            plane.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def report(args, r: dict, first: float, cpu_first: float, dep_rate: float, so_rate: float, ready: int,
           total: int, errors: int) -> int:
    n, q = args.objects, args.queries
    keda_loop = n / args.polling
    keda_hpa = r["hpa_targets"] / args.hpa_sync
    keda = keda_loop + keda_hpa
    goal_qps = q / args.polling
    lat = sorted(r["latency"])
    finite = [x for x in lat if x != float("inf")]
    drv = r["driver"]
    hpa_rate = drv.get("requests", 0) / args.window if drv else 0.0
    print(f"load average {r['load'][0][0]:.1f} -> {r['load'][1][0]:.1f} (1 min) on {os.cpu_count()} CPUs")
    print(f"objects: {n} ScaledObjects over {q} distinct queries, pollingInterval {args.polling} s, "
          f"{r['hpa_targets']} targets at >= 1 replica; {ready}/{total} Ready")
    print(f"Prometheus queries: {r['qps']:.1f}/s over {r['seconds']:.0f} s ({r['queries']} queries, "
          f"{r['distinct_seen']} distinct); KEDA's model for the same objects {keda:.0f}/s "
          f"(loops {keda_loop:.0f} + HPA {keda_hpa:.0f}): {r['qps'] / keda:.3f}x KEDA; one per distinct query per "
          f"interval would be {goal_qps:.1f}/s: {r['qps'] / goal_qps:.2f}x")
    print(f"most queries of one distinct query in one {args.polling} s interval: {r['max_per_interval']} "
          f"(goal <= 1: {'met' if r['max_per_interval'] <= 1 else 'MISSED'})")
    print(f"HPA path load: {hpa_rate:.0f} requests/s to the metrics endpoint (asked {keda_hpa:.0f}/s), answers "
          f"{drv.get('codes')}, worst lateness {drv.get('late_max')} s")
    print(f"controller: CPU {r['cpu']:.3f} cpu-seconds/s in the window; RSS {r['rss']:.0f} MiB (peak {r['hwm']:.0f}) "
          f"(goal < 500 MiB: {'met' if r['hwm'] < 500 else 'MISSED'}); first reconcile {first:.1f} s "
          f"({cpu_first:.1f} cpu-seconds); {errors} error log lines; its Kubernetes API requests in the window "
          f"{r['api_rate']:.1f}/s, of them status writes {r['status_rate']:.1f}/s (lastActiveTime: with another change "
          f"or when min(cooldownPeriod/2, 60 s) old), {r['status_waiting']:.0f} statuses waiting at the end; last "
          f"loop tick {r['lateness_last']:.1f} s late; rate-limiter wait {r['limiter_per_s']:.2f} s per s")
    med = statistics.median(lat) if lat else float("nan")
    print(f"value change -> served on the metrics endpoint: {len(finite)}/{len(lat)} seen, p50 {med:.1f} s, "
          f"max {max(lat) if lat else float('nan'):.1f} s (bound: the polling interval, {args.polling} s)")
    print(f"creation rates (bench client, 16 threads): Deployments {dep_rate:.0f}/s, ScaledObjects {so_rate:.0f}/s")
    ok = r["max_per_interval"] <= 1 and r["hwm"] < 500 and len(finite) == len(lat) and ready == total
    return 0 if ok else 1


FULL = {"objects": 10000, "queries": 2000, "namespaces": 20, "polling": 30, "hpa_sync": HPA_SYNC, "window": 90.0,
        "probes": 8, "rounds": 3}
QUICK = {"objects": 300, "queries": 60, "namespaces": 3, "polling": 5, "hpa_sync": 5.0, "window": 12.0,
         "probes": 4, "rounds": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, help="ScaledObjects (and Deployments); default 10000")
    parser.add_argument("--queries", type=int, help="distinct queries; default 2000")
    parser.add_argument("--namespaces", type=int, help="default 20")
    parser.add_argument("--polling", type=int, help="pollingInterval, seconds; default 30")
    parser.add_argument("--hpa-sync", type=float, help="the HPA path's period per target; default 15 (kcm's)")
    parser.add_argument("--window", type=float, help="seconds of steady state measured; default 90")
    parser.add_argument("--active", type=float, default=0.75, help="share of the queries above activation")
    parser.add_argument("--probes", type=int, help="queries changed per latency round; default 8")
    parser.add_argument("--rounds", type=int, help="latency rounds; default 3")
    parser.add_argument("--workers", type=int, default=2,
                        help="promop autoscaler --workers (reconcile threads; the command's default is 2)")
    parser.add_argument("--loop-workers", type=int, default=8,
                        help="promop autoscaler --keda-loop-workers (scale-loop threads; the command's default is 8)")
    parser.add_argument("--client-qps", type=float, default=0.0,
                        help="run the autoscaler with --kube-api-qps this (--kube-api-burst twice it); "
                             "0 (default): the command as shipped (50/s, burst 100)")
    parser.add_argument("--first-limit", type=float, default=3600.0, help="give up the first reconcile after")
    parser.add_argument("--out", help="also write the raw figures to this JSON file")
    parser.add_argument("--quick", action="store_true",
                        help="300 ScaledObjects over 60 queries, 5 s polling (a smoke run); other flags still apply")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
