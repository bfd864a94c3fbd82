"""Sandbox throughput: LIST of N ConfigMaps (whole and in pages of 500) and delivery of N watch
events to one client.

    python3 -m bench.sandbox [--objects N] [--rounds R]

Each figure is compared with a baseline measured in the same run on the same machine: the
in-process cost of decoding the very same bytes with json.loads (what any client must pay at
least). A ratio near 1 means the sandbox adds little on top of the client's own parsing; the
absolute events/s is what later benchmarks care about (target: >= 5,000 events/s on 2 cores).
Paged LISTs also report the server's own cost per full paging (in-process `Api.list`) against
the former algorithm (sort all keys and filter by the continue token on every page).
Rounds alternate and the best round counts, so a noisy shared machine hurts both sides alike.
The seeded objects are frozen out of the cyclic GC (`gc.freeze()`): the client's decoding then
does not pay for traversing the server's heap, which a real client never shares.
"""

from __future__ import annotations

import argparse
import gc
import json
import threading
import time

import requests
from kubernetes import client, watch

from promop.sandbox import Sandbox

NAMESPACE = "bench"


def seed(sb: Sandbox, n: int) -> tuple[int, float]:
    """Create n ConfigMaps over HTTP on one keep-alive connection; returns (rv before, s)."""
    session = requests.Session()
    session.post(f"{sb.url}/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}})
    before = sb.store.rv
    url = f"{sb.url}/api/v1/namespaces/{NAMESPACE}/configmaps"
    started = time.perf_counter()
    for i in range(n):
        response = session.post(url, json={"metadata": {"name": f"cm-{i:05d}",
                                                        "labels": {"bench": "yes"}},
                                           "data": {"key": f"value-{i}", "other": "x" * 64}})
        response.raise_for_status()
    return before, time.perf_counter() - started


def list_raw(sb: Sandbox, session: requests.Session) -> tuple[float, bytes]:
    started = time.perf_counter()
    response = session.get(f"{sb.url}/api/v1/namespaces/{NAMESPACE}/configmaps")
    body = response.content
    items = json.loads(body)["items"]
    elapsed = time.perf_counter() - started
    assert len(items) > 0
    return elapsed, body


def list_paged_raw(sb: Sandbox, session: requests.Session, limit: int,
                   expected: int) -> tuple[float, list]:
    """All pages of `limit` over HTTP, each decoded; returns (seconds, page bodies)."""
    bodies, token, count = [], "", 0
    started = time.perf_counter()
    while True:
        response = session.get(f"{sb.url}/api/v1/namespaces/{NAMESPACE}/configmaps",
                               params={"limit": limit, "continue": token})
        page = json.loads(response.content)
        bodies.append(response.content)
        count += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            break
    elapsed = time.perf_counter() - started
    assert count == expected, f"paging returned {count} objects, not {expected}"
    return elapsed, bodies


def server_paging(sb: Sandbox, limit: int) -> float:
    """The server's side of a full paging, in-process: `Api.list` page by page."""
    rt = sb.registry.lookup("", "v1", "configmaps")
    started = time.perf_counter()
    token = "start"
    while token:
        token = sb.api.list(rt, NAMESPACE, None, limit, "" if token == "start" else token) \
            .continue_token
    return time.perf_counter() - started


def former_server_paging(sb: Sandbox, limit: int) -> float:
    """The same pages the way the sandbox served them before: sort every key of the resource
    and filter by the continue token's start on every page."""
    bucket = sb.store.objects[("", "configmaps")]
    started = time.perf_counter()
    start = None
    while True:
        entries = [bucket[k] for k in sorted(k for k in bucket if k[0] == NAMESPACE)]
        if start is not None:
            entries = [e for e in entries if (e[0]["metadata"].get("namespace", ""),
                                              e[0]["metadata"]["name"]) > start]
        page = entries[:limit]
        if len(entries) <= limit:
            break
        start = (NAMESPACE, page[-1][0]["metadata"]["name"])
    return time.perf_counter() - started


def list_client(core: client.CoreV1Api) -> float:
    started = time.perf_counter()
    response = core.list_namespaced_config_map(NAMESPACE, _preload_content=False)
    json.loads(response.data)
    return time.perf_counter() - started


def parse_baseline(body: bytes) -> float:
    started = time.perf_counter()
    json.loads(body)
    return time.perf_counter() - started


def watch_replay_raw(sb: Sandbox, since: int, n: int) -> tuple[float, list[bytes]]:
    """Replay n events from history to one streaming client; returns (seconds, lines)."""
    lines = []
    started = time.perf_counter()
    with requests.get(f"{sb.url}/api/v1/namespaces/{NAMESPACE}/configmaps",
                      params={"watch": "true", "resourceVersion": str(since),
                              "timeoutSeconds": "120"}, stream=True) as response:
        for line in response.iter_lines(chunk_size=65536):
            if line:
                json.loads(line)
                lines.append(line)
                if len(lines) == n:
                    break
    return time.perf_counter() - started, lines


def watch_replay_client(core: client.CoreV1Api, since: int, n: int) -> float:
    """The same replay through kubernetes.watch.Watch with deserialize=False."""
    count = 0
    started = time.perf_counter()
    w = watch.Watch()
    for _event in w.stream(core.list_namespaced_config_map, NAMESPACE,
                           resource_version=str(since), timeout_seconds=120, deserialize=False):
        count += 1
        if count == n:
            w.stop()
            break
    return time.perf_counter() - started


def watch_live(sb: Sandbox, n: int) -> float:
    """Events written in-process while one client streams them: commit-to-client rate."""
    rv = sb.store.rv
    received = 0
    ready = threading.Event()

    def writer() -> None:
        ready.wait(10)
        rt = sb.registry.lookup("", "v1", "configmaps")
        for i in range(n):
            sb.api.patch(rt, NAMESPACE, f"cm-{i:05d}", "application/merge-patch+json",
                         {"data": {"live": str(i)}})

    thread = threading.Thread(target=writer)
    thread.start()
    started = time.perf_counter()
    with requests.get(f"{sb.url}/api/v1/namespaces/{NAMESPACE}/configmaps",
                      params={"watch": "true", "resourceVersion": str(rv),
                              "timeoutSeconds": "120"}, stream=True) as response:
        ready.set()
        for line in response.iter_lines(chunk_size=65536):
            if line:
                json.loads(line)
                received += 1
                if received == n:
                    break
    elapsed = time.perf_counter() - started
    thread.join()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench.sandbox")
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--page", type=int, default=500, help="LIST page size (limit)")
    args = parser.parse_args(argv)
    n = args.objects
    with Sandbox(history_size=3 * n + 10) as sb:
        since, seed_s = seed(sb, n)
        gc.collect()
        gc.freeze()
        session = requests.Session()
        core = client.CoreV1Api(sb.api_client())
        best: dict[str, float] = {}

        def keep(name: str, value: float) -> None:
            best[name] = min(best.get(name, float("inf")), value)

        for _ in range(args.rounds):
            elapsed, body = list_raw(sb, session)
            keep("list_raw", elapsed)
            keep("list_client", list_client(core))
            keep("list_baseline", parse_baseline(body))
            elapsed, bodies = list_paged_raw(sb, session, args.page, n)
            keep("paged_raw", elapsed)
            keep("paged_baseline", sum(parse_baseline(b) for b in bodies))
            keep("paged_server", server_paging(sb, args.page))
            keep("paged_former", former_server_paging(sb, args.page))
            elapsed, lines = watch_replay_raw(sb, since, n)
            keep("watch_raw", elapsed)
            started = time.perf_counter()
            for line in lines:
                json.loads(line)
            keep("watch_baseline", time.perf_counter() - started)
            keep("watch_client", watch_replay_client(core, since, n))
        keep("watch_live", watch_live(sb, n))

    rows = [
        ("create (HTTP POST, one connection)", n / seed_s, "objects/s", None),
        (f"LIST {n} ConfigMaps, raw HTTP + json.loads", best["list_raw"] * 1000, "ms",
         best["list_raw"] / best["list_baseline"]),
        (f"LIST {n} ConfigMaps, kubernetes client", best["list_client"] * 1000, "ms",
         best["list_client"] / best["list_baseline"]),
        (f"LIST {n} ConfigMaps in pages of {args.page}, raw HTTP", best["paged_raw"] * 1000,
         "ms", best["paged_raw"] / best["paged_baseline"]),
        (f"  server side of those pages (Api.list)", best["paged_server"] * 1000, "ms", None),
        (f"  same pages, former per-page sort", best["paged_former"] * 1000, "ms", None),
        (f"watch replay of {n} events, raw stream", n / best["watch_raw"], "events/s",
         best["watch_raw"] / best["watch_baseline"]),
        (f"watch replay of {n} events, kubernetes Watch", n / best["watch_client"],
         "events/s", best["watch_client"] / best["watch_baseline"]),
        (f"watch of {n} live writes, raw stream", n / best["watch_live"], "events/s", None),
    ]
    print(f"{'measurement':52} {'result':>12} {'unit':10} {'x json.loads':>12}")
    for name, value, unit, ratio in rows:
        ratio_text = f"{ratio:.1f}x" if ratio is not None else "-"
        print(f"{name:52} {value:12,.0f} {unit:10} {ratio_text:>12}")
    print(f"(baseline: json.loads of the same list body {best['list_baseline'] * 1000:.0f} ms, "
          f"of the {n} event lines {best['watch_baseline'] * 1000:.0f} ms; server-side paging "
          f"{best['paged_former'] / best['paged_server']:.0f}x cheaper than the former sort)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
