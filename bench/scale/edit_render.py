"""One edit's render, in process: `python3 -m bench.scale.edit_render [--monitors 1000 10000] [--edits 20] [--profile]`.

What the real-cluster benchmark (bench.scale) measures end to end, without the apiserver: the
operator's per-sync path for p0 (every monitor selected) after one ServiceMonitor changed, i.e.
the candidates as the Syncer hands them over (StableVersions views), `references()` and
`render()` with the per-Prometheus RenderCache warm, and the sync's own count of the selection.
The objects are bench.scale's. Reports, per N, the median and max over `--edits` edits and the
ratio to N = the smallest size: an edit's cost should not grow with N. `--profile` prints the
cProfile of the edits at the largest N (cumulative, top 30).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import time

from bench.scale.__main__ import layout, prometheus, service_monitor
from promop.operator.stable_versions import StableVersions
from promop.render import RenderCache, references, render
from promop.render.model import RenderInputs, RenderOptions


def objects(n: int) -> tuple[list[dict], list[dict]]:
    """N ServiceMonitors with uids and resourceVersions, and their Namespaces."""
    namespaces, teams = layout(n)
    sms = []
    for i in range(n):
        sm = service_monitor(i, namespaces, teams)
        sm["metadata"].update(uid=f"uid-{i}", resourceVersion=str(i + 1))
        sms.append(sm)
    nss = [{"metadata": {"name": name, "uid": f"ns-uid-{name}", "resourceVersion": "1"}}
           for name in ["monitoring", *(f"ns-{k}" for k in range(namespaces))]]
    return sms, nss


def one_sync(prom: dict, sms: list[dict], nss: list[dict], stable: StableVersions, cache: RenderCache) -> float:
    started = time.perf_counter()
    inputs = RenderInputs(prometheus=prom, service_monitors=stable.views("ServiceMonitor", sms),
                          namespaces=nss, options=RenderOptions())
    references(inputs, cache=cache)
    result = render(inputs, cache=cache)
    sum(1 for d in result.selection if d.selected)
    return time.perf_counter() - started


def run(n: int, edits: int, profiler: cProfile.Profile | None, freeze: bool = False) -> list[float]:
    sms, nss = objects(n)
    prom = prometheus("p0", "monitoring", {}, True)
    prom["metadata"].update(uid="p0-uid", resourceVersion="1")
    stable, cache = StableVersions(), RenderCache(max_renders=2, keep_jobs=False)  # as the operator
    one_sync(prom, sms, nss, stable, cache)  # the first sync: every fragment rendered
    if freeze:  # as `promop run` does once its first syncs are done (promop.operator.gcfreeze)
        gc.freeze()
    times = []
    version = n + 1
    for e in range(edits):
        i = (e * 7919) % n
        namespaces, teams = layout(n)
        edited = service_monitor(i, namespaces, teams, path=f"/edit-{e}")
        version += 1
        edited["metadata"].update(uid=f"uid-{i}", resourceVersion=str(version))
        sms = [*sms[:i], edited, *sms[i + 1:]]  # a new list, as the informer's list() gives
        if profiler:
            profiler.enable()
        times.append(one_sync(prom, sms, nss, stable, cache))
        if profiler:
            profiler.disable()
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--monitors", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after the first sync, as promop run does")
    args = ap.parse_args(argv)
    base = None
    for n in sorted(args.monitors):
        profiler = cProfile.Profile() if args.profile and n == max(args.monitors) else None
        times = run(n, args.edits, profiler, args.gc_freeze)
        med = statistics.median(times)
        base = base or med
        print(f"N={n}: edit's sync median {med * 1000:.1f} ms, max {max(times) * 1000:.1f} ms, "
              f"{med / base:.2f}x N={min(args.monitors)}", flush=True)
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
