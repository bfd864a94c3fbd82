"""Scale on the real control plane: `python3 -m bench.scale [--monitors 1000 10000 30000] [--edits 50] [--quick]`.

For each size N, in a fresh control plane of the kit (`../shared/kube/start.sh`, own
KUBE_RUN_DIR, no node, no controller-manager: nothing here needs pods, and the kcm's endpoint
mirroring and garbage collector would only add load):

- installs crds/, creates N ServiceMonitors spread over namespaces and teams, each with the
  headless Service and the Endpoints it selects, and 3 Prometheus objects in `monitoring`:
  p0 selects every ServiceMonitor, p1 one team's, p2 those of its own namespace (ns-0);
- starts the operator as a process (`python3 -m promop run --kubeconfig ...`) and reports the
  first sync (process start -> every Prometheus's config Secret on a watch) and its RSS;
- makes `--edits` edits, one at a time, each of one ServiceMonitor selected by p0 (a new
  `path`), timed from the PATCH to the watch event of p0's config Secret whose content holds the
  new path (the Secret is decoded after the event's arrival time was taken);
- baseline, same run, before each edit: a bare apiserver round trip, a ConfigMap create -> its
  watch event; edit latency is also given as a ratio to it.

Between edits it waits for the operator's CPU to go quiet (so each edit finds it idle, as an
isolated user edit would). `--profile DIR` runs the operator under bench.scale.sampler (every
thread sampled; the window restarts after the first sync) and writes DIR/profile-N.txt, and the
start-up and first sync's window to DIR/profile-N.start.txt.
The load average is printed with every figure: the machine is shared. Exit 1 when a goal of
issue 32 is missed at a size it names.
"""

from __future__ import annotations

import argparse
import contextlib
import base64
import gzip
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import orjson

from bench.kubeplane import kit_present, start_plane
from bench.scale.rawapi import RawApi

ROOT = Path(__file__).resolve().parents[2]
MON = "monitoring"
BASE_NS = "scale-base"
SM_API = "/apis/monitoring.coreos.com/v1"
# issue 32's goals: N -> (edit p99 s, first sync s, RSS MiB)
GOALS = {10_000: (0.5, 3.0, 250), 30_000: (1.0, 10.0, 600)}


def loadavg() -> str:
    with open("/proc/loadavg", encoding="ascii") as fh:
        return " ".join(fh.read().split()[:3])


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def wait_for(check, timeout: float, what: str, poll: float = 0.005) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


# ---- the control plane -------------------------------------------------------------------------

@contextlib.contextmanager
def control_plane() -> Iterator[str]:
    """The kit's control plane without kube-controller-manager (bench.kubeplane); its kubeconfig."""
    plane, _ = start_plane(with_kcm=False)
    try:
        yield plane.kubeconfig
    finally:
        plane.stop()


# ---- the objects -------------------------------------------------------------------------------

def layout(n: int) -> tuple[int, int]:
    """Namespaces and teams for N monitors: ~100 monitors per namespace, ~50 per team."""
    return max(2, min(300, n // 100)), max(2, n // 50)


def service_monitor(i: int, namespaces: int, teams: int, path: str = "/metrics") -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": f"sm-{i}", "namespace": f"ns-{i % namespaces}",
                         "labels": {"team": f"t{i % teams}"}},
            "spec": {"selector": {"matchLabels": {"app": f"app-{i}"}},
                     "endpoints": [{"port": "web", "interval": "30s", "path": path}]}}


def service(i: int, namespaces: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"app-{i}", "namespace": f"ns-{i % namespaces}", "labels": {"app": f"app-{i}"}},
            "spec": {"clusterIP": "None", "ports": [{"name": "web", "port": 8080}]}}


def endpoints(i: int, namespaces: int) -> dict:
    return {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": f"app-{i}", "namespace": f"ns-{i % namespaces}", "labels": {"app": f"app-{i}"}},
            "subsets": [{"addresses": [{"ip": f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"}],
                         "ports": [{"name": "web", "port": 8080}]}]}


def prometheus(name: str, namespace: str, selector: dict, all_namespaces: bool) -> dict:
    spec: dict = {"serviceMonitorSelector": selector, "replicas": 1}
    if all_namespaces:
        spec["serviceMonitorNamespaceSelector"] = {}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def install_crds(kubeconfig: str) -> None:
    from promop.kube.client import KubeClient
    from promop.operator.install import install_crds as install

    install(KubeClient.from_config(kubeconfig, None, qps=1000, burst=1000), ROOT / "crds", timeout=120)


def populate(api: RawApi, n: int, threads: int) -> float:
    """Every object of size N; returns the seconds it took."""
    namespaces, teams = layout(n)
    started = time.perf_counter()
    for name in [MON, BASE_NS, *(f"ns-{k}" for k in range(namespaces))]:
        api.create("/api/v1/namespaces", {"metadata": {"name": name}})

    def one(i: int) -> None:
        ns = f"ns-{i % namespaces}"
        api.create(f"/api/v1/namespaces/{ns}/services", service(i, namespaces))
        api.create(f"/api/v1/namespaces/{ns}/endpoints", endpoints(i, namespaces))
        api.create(f"{SM_API}/namespaces/{ns}/servicemonitors", service_monitor(i, namespaces, teams))

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(n), chunksize=16))
    return time.perf_counter() - started


def list_floor(api: RawApi) -> float:
    """A bare LIST of every ServiceMonitor in pages of 500, as the informer lists (the apiserver's
    part of any first sync: a first sync cannot beat it)."""
    started, token = time.perf_counter(), ""
    while True:
        page = api.request("GET", f"{SM_API}/servicemonitors?limit=500" + (f"&continue={token}" if token else ""))
        token = page["metadata"].get("continue") or ""
        if not token:
            return time.perf_counter() - started


def create_prometheuses(api: RawApi) -> list[str]:
    proms = [prometheus("p0", MON, {}, True),
             prometheus("p1", MON, {"matchLabels": {"team": "t0"}}, True),
             prometheus("p2", "ns-0", {}, False)]
    for p in proms:
        api.create(f"{SM_API}/namespaces/{p['metadata']['namespace']}/prometheuses", p)
    return [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in proms]


# ---- watching ----------------------------------------------------------------------------------

class EventLog:
    """Raw watch events with their arrival times, appended by a watch thread."""

    def __init__(self) -> None:
        self.events: list[tuple[float, bytes]] = []
        self.lock = threading.Lock()

    def add(self, at: float, line: bytes) -> None:
        with self.lock:
            self.events.append((at, line))

    def since(self, index: int) -> list[tuple[float, bytes]]:
        with self.lock:
            return self.events[index:]

    def __len__(self) -> int:
        with self.lock:
            return len(self.events)


def secret_holds(line: bytes, prefix: str, marker: bytes) -> tuple[str, bool]:
    """(name, whether a gzipped data key of this Secret event holds `marker`) for Secrets named `prefix`*."""
    event = orjson.loads(line)
    obj = event.get("object") or {}
    name = (obj.get("metadata") or {}).get("name", "")
    if not name.startswith(prefix):
        return name, False
    for key, value in (obj.get("data") or {}).items():
        if key.endswith(".gz") and marker in gzip.decompress(base64.b64decode(value)):
            return name, True
    return name, False


# ---- the operator ------------------------------------------------------------------------------

def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def memory_kib(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def children_hwm_mib(pid: int) -> float:
    """The peak RSS of the process's children now alive (the render worker: promop.operator.render_pool)."""
    total = 0.0
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            kids = [int(k) for k in fh.read().split()]
    except OSError:
        return 0.0
    for kid in kids:
        try:
            total += memory_kib(kid).get("VmHWM", 0) / 1024
        except OSError:
            pass
    return total


def wait_quiet(pid: int, timeout: float = 30.0, quiet: float = 0.15) -> None:
    """Until the process used no CPU for `quiet` s (at most `timeout`)."""
    deadline = time.monotonic() + timeout
    last, since = cpu_ticks(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.03)
        now = cpu_ticks(pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return


def compile_sources() -> None:
    """Byte-compile promop as the operator's image does (Dockerfile: compileall): in a fresh
    checkout the first operator start would otherwise compile ~300 modules (~0.5 s of CPU) inside
    its first sync, a cost no deployed operator pays."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "promop")], check=True,
                   stdout=subprocess.DEVNULL)


def start_operator(kubeconfig: str, log_path: Path, profile: Path | None, extra: list[str]) -> subprocess.Popen:
    run = ["-m", "promop", "run", "--kubeconfig", kubeconfig, "--web.listen-address", "127.0.0.1:0",
           "--log-level", "info", *extra]
    args = [sys.executable, *(["-m", "bench.scale.sampler", str(profile)] if profile else []), *run]
    # e.g. SCALE_OPERATOR_WRAP="py-spy record --gil -d 5 -f raw -o /tmp/start.txt --": the start-up's CPU
    args = [*os.environ.get("SCALE_OPERATOR_WRAP", "").split(), *args]
    log = open(log_path, "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "SCALE_SAMPLE_FROM_START": "1"})


SYNC_MS = re.compile(rb'key="?([^" ]+)"?.*\bms=(\d+)')


def sync_durations(log_path: Path, key: str, after: int) -> list[int]:
    """The `ms` of the operator's `synced` log lines for `key` past byte offset `after` caused by a
    ServiceMonitor event."""
    with open(log_path, "rb") as fh:
        fh.seek(after)
        out = []
        for line in fh:
            # edits' syncs only: not the first sync's own line (logged after its writes) nor resyncs
            if (b"msg=synced" in line or b'"synced"' in line) and b"ServiceMonitor" in line:
                m = SYNC_MS.search(line)
                if m and m.group(1).decode() == key:
                    out.append(int(m.group(2)))
        return out


# ---- one size ----------------------------------------------------------------------------------

AB_FLAG = "--no-render-process"  # the default --ab-flag: without the render worker


def run_size(n: int, edits: int, threads: int, profile_dir: Path | None, keep_log: Path | None,
             operator_args: list[str], settle: bool = True, ab_rounds: int = 0, ab_flag: str = AB_FLAG) -> dict:
    res: dict = {"n": n, "load_start": loadavg()}
    with control_plane() as kubeconfig:
        api = RawApi(kubeconfig)
        install_crds(kubeconfig)
        res["populate_s"] = populate(api, n, threads)
        namespaces, teams = layout(n)
        res["list_s"] = list_floor(api)
        print(f"  N={n}: {n} ServiceMonitors + Services + Endpoints in {namespaces} namespaces, {teams} teams, "
              f"created in {res['populate_s']:.1f} s (load {loadavg()})", flush=True)
        stop = threading.Event()
        secrets, cms = EventLog(), EventLog()
        ready_s, ready_c = threading.Event(), threading.Event()
        api.watch(f"/api/v1/namespaces/{MON}/secrets", secrets.add, stop, ready_s)
        api.watch(f"/api/v1/namespaces/{BASE_NS}/configmaps", cms.add, stop, ready_c)
        wait_for(lambda: ready_s.is_set() and ready_c.is_set(), 30, "the bench's watches")
        keys = create_prometheuses(api)
        log_path = keep_log or Path(tempfile.mkdtemp(prefix="promop-scale-log-")) / "operator.log"
        profile = profile_dir / f"profile-{n}.txt" if profile_dir else None
        t_start = time.perf_counter()
        proc = start_operator(kubeconfig, log_path, profile, operator_args)
        try:
            res.update(first_sync(proc, secrets, t_start))
            res["load_synced"] = loadavg()
            res["rss_synced_mib"] = memory_kib(proc.pid)["VmRSS"] / 1024
            res["worker_hwm_mib"] = children_hwm_mib(proc.pid)
            # steady state: the first sync's status.bindings backlog (one write per monitor, at the
            # operator's client rate limit) written, so each edit finds the operator idle
            t_quiet = time.perf_counter()
            if settle:
                wait_quiet(proc.pid, 1800, quiet=1.0)
            res["backlog_s"] = time.perf_counter() - t_quiet if settle else None
            if profile:
                proc.send_signal(signal.SIGUSR1)
            offset = log_path.stat().st_size
            res.update(edit_loop(api, proc, secrets, cms, n, edits, settle, profile is not None))
            res["sync_ms"] = sync_durations(log_path, keys[0], offset)
            mem = memory_kib(proc.pid)
            res["rss_mib"], res["hwm_mib"] = mem["VmRSS"] / 1024, mem["VmHWM"] / 1024
            res["load_end"] = loadavg()
        finally:
            end(proc)
        if ab_rounds:
            res["ab"] = restarts(api, kubeconfig, secrets, ab_rounds, operator_args, ab_flag)
        stop.set()
    return res


def end(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def restarts(api: RawApi, kubeconfig: str, secrets: EventLog, rounds: int, operator_args: list[str],
             ab_flag: str = AB_FLAG) -> dict:
    """First syncs of fresh operator processes on the same objects, the variants (as run, and with
    `ab_flag`) interleaved; the config Secrets are deleted before each, so that each first sync writes
    them anew."""
    variants = {"as run": [], f"with {ab_flag}": [ab_flag]}
    out: dict[str, list[float]] = {name: [] for name in variants}
    log_dir = Path(tempfile.mkdtemp(prefix="promop-scale-ab-"))
    for r in range(rounds):
        for name, extra in variants.items():
            for secret in ("prometheus-p0", "prometheus-p1"):
                api.request("DELETE", f"/api/v1/namespaces/{MON}/secrets/{secret}")
            since = len(secrets)
            t_start = time.perf_counter()
            proc = start_operator(kubeconfig, log_dir / f"{r}-{'ab'[len(extra) > 0]}.log", None, [*operator_args, *extra])
            try:
                out[name].append(first_sync(proc, secrets, t_start, since)["first_sync_s"])
            finally:
                end(proc)
    return out


def first_sync(proc: subprocess.Popen, secrets: EventLog, t_start: float, since: int = 0) -> dict:
    """Process start -> the config Secret of every Prometheus seen created on the watch (events past `since`)."""
    wanted = {"prometheus-p0", "prometheus-p1"}  # in `monitoring`; p2 lives in ns-0

    def seen() -> dict[str, float]:
        out = {}
        for at, line in secrets.since(since):
            event = orjson.loads(line)
            name = event["object"]["metadata"]["name"]
            if name in wanted and event.get("type") == "ADDED":
                out.setdefault(name, at)
        return out

    wait_for(lambda: proc.poll() is None and len(seen()) == len(wanted) or proc.poll() is not None, 900,
             "the first config Secrets", 0.05)
    if proc.poll() is not None:
        raise RuntimeError(f"the operator exited with {proc.returncode} before its first sync")
    return {"first_sync_s": max(seen().values()) - t_start}


def edit_loop(api: RawApi, proc: subprocess.Popen, secrets: EventLog, cms: EventLog, n: int, edits: int,
              settle: bool = True, profiled: bool = False) -> dict:
    namespaces, teams = layout(n)
    latencies, baseline = [], []
    for e in range(edits):
        # baseline: a ConfigMap create -> its watch event
        mark = len(cms)
        t0 = time.perf_counter()
        api.create(f"/api/v1/namespaces/{BASE_NS}/configmaps",
                   {"metadata": {"name": f"base-{e}"}, "data": {"k": "v"}})
        name = f'"base-{e}"'.encode()
        wait_for(lambda: any(name in line for _, line in cms.since(mark)), 30, "the ConfigMap event", 0.0005)
        baseline.append(next(at for at, line in cms.since(mark) if name in line) - t0)

        i = (e * 7919 + 13) % n
        marker = f"/e{e}/".encode()
        mark = len(secrets)
        t0 = time.perf_counter()
        api.merge_patch(f"{SM_API}/namespaces/ns-{i % namespaces}/servicemonitors/sm-{i}",
                        {"spec": {"endpoints": [{"port": "web", "interval": "30s", "path": f"/metrics/e{e}/"}]}})
        checked = 0
        found: list[float] = []

        def arrived() -> bool:
            nonlocal checked
            events = secrets.since(mark)
            for at, line in events[checked:]:
                if secret_holds(line, "prometheus-p0", marker)[1]:
                    found.append(at)
                    return True
            checked = len(events)
            return proc.poll() is not None

        wait_for(arrived, 60, f"edit {e} in p0's config Secret", 0.002)
        if not found:
            raise RuntimeError(f"the operator exited with {proc.returncode}")
        latencies.append(found[0] - t0)
        if settle and not profiled:
            wait_quiet(proc.pid)
        else:  # busy with the bindings backlog, or sampled (never quiet): pace the edits instead
            time.sleep(0.5 if not profiled else 1.0)
    return {"p50": statistics.median(latencies), "p99": pct(latencies, 99), "max": max(latencies),
            "base_p50": statistics.median(baseline), "base_p99": pct(baseline, 99)}


# ---- report ------------------------------------------------------------------------------------

def print_result(r: dict) -> None:
    ms = lambda s: f"{s * 1000:.0f} ms"  # noqa: E731
    sync = r.get("sync_ms") or [0]
    print(f"\nN = {r['n']:,} ServiceMonitors (load {r['load_start']} at start, {r['load_synced']} after the first "
          f"sync, {r['load_end']} at the end)")
    print(f"  first sync (process start -> config Secrets)  {r['first_sync_s']:.2f} s")
    print(f"  baseline: bare LIST of every ServiceMonitor   {r['list_s']:.2f} s (first sync "
          f"{r['first_sync_s'] / r['list_s']:.1f}x)")
    print(f"  operator RSS after the first sync            {r['rss_synced_mib']:.0f} MiB")
    if r.get("worker_hwm_mib"):
        print(f"  its render worker's peak RSS (then stopped)  {r['worker_hwm_mib']:.0f} MiB")
    if r["backlog_s"] is None:
        print("  edits made while the first sync's status.bindings backlog was being written (--no-settle)")
    else:
        print(f"  status.bindings backlog written after        {r['backlog_s']:.0f} s more")
    print(f"  operator RSS after the edits (peak)          {r['rss_mib']:.0f} MiB ({r['hwm_mib']:.0f} MiB)")
    print(f"  edit -> config Secret (p50 / p99 / max)      {ms(r['p50'])} / {ms(r['p99'])} / {ms(r['max'])}")
    print(f"  baseline ConfigMap create -> event           {ms(r['base_p50'])} / {ms(r['base_p99'])}")
    print(f"  ratio (edit / baseline, p50 / p99)           {r['p50'] / r['base_p50']:.1f}x / "
          f"{r['p99'] / r['base_p99']:.1f}x")
    print(f"  p0's sync as logged (p50 / p99 of {len(sync)})       {statistics.median(sync):.0f} ms / "
          f"{pct(sync, 99):.0f} ms")
    for name, times in (r.get("ab") or {}).items():
        print(f"  first sync of a restarted operator, {name}: median {statistics.median(times):.2f} s "
              f"({', '.join(f'{t:.2f}' for t in times)})")


def missed(r: dict) -> list[str]:
    goal = GOALS.get(r["n"])
    if goal is None:
        return []
    p99, sync, rss = goal
    out = []
    if r["p99"] >= p99:
        out.append(f"N={r['n']}: edit p99 {r['p99']:.2f} s >= {p99} s")
    if r["first_sync_s"] > sync:
        out.append(f"N={r['n']}: first sync {r['first_sync_s']:.1f} s > {sync} s")
    if max(r["rss_mib"], r["rss_synced_mib"]) > rss:
        out.append(f"N={r['n']}: RSS {max(r['rss_mib'], r['rss_synced_mib']):.0f} MiB > {rss} MiB")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench.scale", description=__doc__.split("\n")[0])
    parser.add_argument("--monitors", type=int, nargs="+", default=[1000])
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--threads", type=int, default=16, help="connections creating the objects")
    parser.add_argument("--quick", action="store_true", help="CI size: 200 monitors, 10 edits")
    parser.add_argument("--profile", type=Path, help="sample the operator; reports in this directory")
    parser.add_argument("--operator-log", type=Path, help="keep the operator's log here (one size)")
    parser.add_argument("--no-settle", dest="settle", action="store_false",
                        help="edit at once after the first sync, while the status.bindings backlog is written "
                             "(at 30,000 monitors it takes many minutes), pacing edits by 0.5 s")
    parser.add_argument("--ab-first-sync", type=int, default=0, metavar="ROUNDS",
                        help="then restart the operator ROUNDS times as run and with --ab-flag, "
                             "interleaved, and report each first sync")
    parser.add_argument("--ab-flag", default=AB_FLAG,
                        help=f"the `promop run` flag --ab-first-sync compares with (default {AB_FLAG}; "
                             "any hidden A/B flag of promop run)")
    parser.add_argument("--operator-arg", action="append", default=[],
                        help="one more `promop run` argument (repeatable), e.g. --operator-arg=--kube-api-qps=1000")
    args = parser.parse_args(argv)
    sizes, edits = ([200], 10) if args.quick else (args.monitors, args.edits)
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    if not kit_present():
        print("no Kubernetes kit at ../shared/kube (set PROMOP_KUBE_KIT)", file=sys.stderr)
        return 2
    print(f"bench.scale: sizes {sizes}, {edits} edits each; {os.cpu_count()} CPUs, load {loadavg()}; "
          f"operator args {args.operator_arg or 'default'}", flush=True)
    compile_sources()
    failures: list[str] = []
    for n in sizes:
        r = run_size(n, edits, args.threads, args.profile, args.operator_log, args.operator_arg, args.settle,
                     args.ab_first_sync, args.ab_flag)
        print_result(r)
        failures += missed(r)
    print("\ngoals: " + ("all met" if not failures else "MISSED: " + "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
