"""Informer benchmarks, one command: `python3 -m bench.informer [--objects 10000] [--repeats 3]`.

1. Initial sync of N ConfigMaps: our informer (raw dicts) against the same informer work on
   the kubernetes client's models, each run in its own subprocess (wall time, client CPU time,
   RSS growth). Three sources:
   - `sandbox`: the API sandbox, whose objects carry metadata.managedFields as a real
     apiserver's do (the issue's measurement);
   - `stub`: a stub replaying the sandbox's recorded pages byte for byte (the server's own
     cost, common to both clients, drops out);
   - `stub-minimal`: the same pages without managedFields, the smallest objects a server
     could send (a lower bound for the models' cost, so the hardest case for the ratio).
2. Events/s through watch -> store -> handler -> workqueue -> worker: the watch is stalled
   while N ConfigMaps are created, then released as one flood.

The sandbox runs in this process; the measured code runs in children.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from promop.kube.client import KubeClient
from promop.kube.resources import CONFIGMAPS, NAMESPACES
from promop.sandbox import Sandbox
from promop.sandbox.kubeconfig import write_kubeconfig

from bench.informer.stub import StubServer, record_pages, without_managed_fields

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("sandbox", "stub", "stub-minimal")


def configmap(namespace: str, i: int) -> dict:
    """A modest, realistic ConfigMap (~600 bytes of JSON)."""
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": f"cm-{i:05d}", "namespace": namespace,
            "labels": {"app.kubernetes.io/name": f"app-{i % 50}", "team": f"team-{i % 7}", "tier": "backend"},
            "annotations": {"example.com/owner": f"owner-{i % 13}@example.com"},
        },
        "data": {
            "settings.yaml": f"replicas: {i % 5}\nlog_level: info\nendpoint: http://svc-{i}.example:8080/\n",
            "feature-flags": "alpha=false,beta=true,gamma=false",
            "id": str(i),
        },
    }


def create_all(kube: KubeClient, namespace: str, count: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: kube.create(CONFIGMAPS, configmap(namespace, i)), range(count)))
    return time.perf_counter() - started


def child(mode: str, kubeconfig: str, namespace: str, count: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.informer.child", mode, kubeconfig, namespace, str(count)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )


def finish(proc: subprocess.Popen) -> dict:
    out = proc.stdout.readline()
    if proc.wait(600) != 0 or not out:
        raise SystemExit(f"benchmark child failed (exit {proc.returncode})")
    return json.loads(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench.informer", description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3, help="sync runs per variant (best time is kept)")
    args = parser.parse_args(argv)
    n = args.objects

    with Sandbox(port=0, history_size=n + 1000) as sb, tempfile.TemporaryDirectory() as tmp:
        kubeconfig = sb.write_kubeconfig(Path(tmp) / "kubeconfig")
        kube = KubeClient(sb.api_client(), qps=0, burst=0, pool_size=8)
        kube.create(NAMESPACES, {"metadata": {"name": "bench"}})

        # events: stall first, so the child's watch holds everything back until we release it
        sb.faults.stall_watches(True)
        proc = child("events", kubeconfig, "bench", n)
        if proc.stdout.readline().strip() != "synced":
            raise SystemExit("events child did not sync")
        made = create_all(kube, "bench", n)
        print(f"created {n} ConfigMaps in {made:.1f}s; releasing the watch", file=sys.stderr)
        sb.faults.stall_watches(False)
        ev = finish(proc)

        pages = record_pages(kube.api_client, "bench")
        runs: dict[tuple[str, str], list[dict]] = {
            (source, mode): [] for source in SOURCES for mode in ("sync-raw", "sync-model")
        }
        with StubServer(pages) as stub, StubServer(without_managed_fields(pages)) as minimal:
            configs = {"sandbox": kubeconfig, "stub": write_kubeconfig(Path(tmp) / "stub-kubeconfig", stub.url),
                       "stub-minimal": write_kubeconfig(Path(tmp) / "minimal-kubeconfig", minimal.url)}
            for _ in range(args.repeats):
                for source, mode in runs:  # interleaved, so machine noise hits all alike
                    runs[source, mode].append(finish(child(mode, configs[source], "bench", n)))
        dec = finish(child("decode", kubeconfig, "bench", n))

    def best(source: str, mode: str, field: str) -> float:
        return min(r[field] for r in runs[source, mode])

    def growth(source: str, mode: str) -> float:
        return max(r["peak_kb"] - r["rss_before_kb"] for r in runs[source, mode]) / 1024

    rows = []
    for source in SOURCES:
        rows += [
            (f"sync from {source}: wall time (s)", best(source, "sync-raw", "seconds"),
             best(source, "sync-model", "seconds"), "x"),
            (f"sync from {source}: client CPU time (s)", best(source, "sync-raw", "cpu"),
             best(source, "sync-model", "cpu"), "x"),
            (f"sync from {source}: RSS growth (MiB)", growth(source, "sync-raw"), growth(source, "sync-model"), "/"),
        ]
    rows += [
        ("decode only, CPU: our page decode + keying pass (s)", dec["raw"]["seconds"], dec["model"]["seconds"], "x"),
        ("  plain json.loads, nothing dropped (s)", dec["json"]["seconds"], dec["model"]["seconds"], "x"),
        ("heap held by what each would cache (MiB)", dec["raw"]["retained_bytes"] / 2**20,
         dec["model"]["retained_bytes"] / 2**20, "/"),
        ("peak RSS of the process, sandbox (MiB)", max(r["peak_kb"] for r in runs["sandbox", "sync-raw"]) / 1024,
         max(r["peak_kb"] for r in runs["sandbox", "sync-model"]) / 1024, "/"),
    ]
    print(f"\ninformer benchmarks, {n} ConfigMaps (sync: best of {args.repeats} runs each, one process per run;\n"
          f"both variants do the same informer work: LIST pages of 500 -> keyed cache with a namespace index\n"
          f"-> an on_add handler per object; 'stub' replays the sandbox's recorded pages, see bench/informer/stub.py)\n")
    print(f"{'measurement':<54}{'raw dicts':>12}{'k8s models':>12}   ratio")
    for label, r, m, kind in rows:
        ratio = f"{m / r:.1f}x faster" if kind == "x" else f"{r / m:.2f} of the memory"
        print(f"{label:<54}{r:>12.2f}{m:>12.2f}   {ratio}")
    print("\npaired ratios: each raw run against the model run right after it (the machine's slow and fast\n"
          "phases then hit both sides alike); median and range over the pairs")
    paired = {}
    for source in SOURCES:
        raw_runs, model_runs = runs[source, "sync-raw"], runs[source, "sync-model"]
        walls = sorted(m["seconds"] / r["seconds"] for r, m in zip(raw_runs, model_runs))
        cpus = sorted(m["cpu"] / r["cpu"] for r, m in zip(raw_runs, model_runs))
        paired[source] = (statistics.median(walls), statistics.median(cpus))
        print(f"  from {source:<13} wall {paired[source][0]:.1f}x ({walls[0]:.1f}-{walls[-1]:.1f}), "
              f"client CPU {paired[source][1]:.1f}x ({cpus[0]:.1f}-{cpus[-1]:.1f})")
    print(f"\nevents through watch -> store -> handler -> workqueue -> worker: "
          f"{ev['per_second']:,.0f}/s ({ev['events']} events in {ev['seconds']:.2f}s)")
    print("\ntargets (sync >= 3x faster as the median paired ratio, RSS growth <= 1/2):")
    notes = {"sandbox": " (the issue's measurement)", "stub": " (server cost removed, for information)",
             "stub-minimal": " (no managedFields: a lower bound, for information)"}
    for source, first in zip(SOURCES, range(0, 3 * len(SOURCES), 3)):
        (wall, cpu), rss = paired[source], rows[first + 2][1] / rows[first + 2][2]
        print(f"  from {source}{notes[source]}: wall {'met' if wall >= 3 else 'MISSED'} ({wall:.1f}x), "
              f"client CPU {'met' if cpu >= 3 else 'MISSED'} ({cpu:.1f}x), "
              f"memory {'met' if rss <= 1 / 2 else 'MISSED'} ({rss:.2f})")
    print(f"  events >= 5,000/s: {'met' if ev['per_second'] >= 5000 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
