"""One measurement in a fresh process, so time and peak RSS are not polluted by the others.

    python -m bench.informer.child sync-raw|sync-model|decode|events KUBECONFIG NAMESPACE COUNT

Prints one JSON line (and `synced` first, for `events`).
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import threading
import time


def _status_kb(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} missing from /proc/self/status")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return usage.ru_utime + usage.ru_stime


def _settle() -> None:
    """A full collection before measuring: otherwise the first full GC of the import-time heap
    (the kubernetes package imports a lot) lands in whichever sync happens to trigger it."""
    gc.collect()


def _imports():
    """Both variants import the same modules before the baseline RSS is taken."""
    import kubernetes.client  # noqa: F401
    from kubernetes.client import CoreV1Api  # noqa: F401
    from kubernetes.client.models import V1ConfigMap, V1ConfigMapList  # noqa: F401

    import promop.kube.informer  # noqa: F401
    import promop.kube.workqueue  # noqa: F401


def sync_raw(kubeconfig: str, namespace: str, count: int) -> dict:
    """Our informer: LIST pages -> store (namespace index) -> an on_add handler for each object."""
    from promop.kube.client import KubeClient
    from promop.kube.informer import Informer
    from promop.kube.resources import CONFIGMAPS

    kube = KubeClient.from_kubeconfig(kubeconfig, qps=0, burst=0)
    kube.list(CONFIGMAPS, namespace, limit=500)  # warm-up, as in sync_model
    seen = [0]
    all_seen = threading.Event()

    def on_add(obj: dict, initial: bool) -> None:
        seen[0] += 1
        if seen[0] == count:
            all_seen.set()

    _settle()
    rss0 = _status_kb("VmRSS")
    cpu0 = _cpu()
    started = time.perf_counter()
    informer = Informer(kube, CONFIGMAPS, namespace=namespace)
    informer.add_handler(on_add=on_add)
    informer.start()
    if not informer.wait_for_sync(600) or not all_seen.wait(600):
        raise SystemExit("raw informer did not sync")
    seconds = time.perf_counter() - started
    cpu = _cpu() - cpu0
    assert len(informer.store) == count, len(informer.store)
    result = {"seconds": seconds, "cpu": cpu, "rss_before_kb": rss0, "peak_kb": _status_kb("VmHWM")}
    informer.stop()
    return result


def sync_model(kubeconfig: str, namespace: str, count: int) -> dict:
    """The same informer work on the official client's models: LIST pages of 500 ->
    a keyed cache with a namespace index -> an on_add handler for each object."""
    from kubernetes.client import ApiClient, Configuration, CoreV1Api
    from kubernetes.config import load_kube_config

    cfg = Configuration()
    load_kube_config(config_file=kubeconfig, client_configuration=cfg, persist_config=False)
    api = CoreV1Api(ApiClient(cfg))
    # Warm-up (one first page, in both variants): the first request pays one-time costs
    # (lazy imports and model schemas in the client, the connection) that are not the sync.
    api.list_namespaced_config_map(namespace, limit=500)
    seen = [0]

    def on_add(obj, initial: bool) -> None:
        seen[0] += 1

    _settle()
    rss0 = _status_kb("VmRSS")
    cpu0 = _cpu()
    started = time.perf_counter()
    cache: dict = {}
    by_namespace: dict[str, set] = {}
    token = None
    while True:
        page = api.list_namespaced_config_map(namespace, limit=500, _continue=token)
        for item in page.items:
            key = f"{item.metadata.namespace}/{item.metadata.name}"
            cache[key] = item
            by_namespace.setdefault(item.metadata.namespace, set()).add(key)
            on_add(item, True)
        token = page.metadata.var_continue
        if not token:
            break
    seconds = time.perf_counter() - started
    cpu = _cpu() - cpu0
    assert len(cache) == count == seen[0], (len(cache), seen[0])
    return {"seconds": seconds, "cpu": cpu, "rss_before_kb": rss0, "peak_kb": _status_kb("VmHWM")}


def decode(kubeconfig: str, namespace: str, count: int) -> dict:
    """Deserialisation alone, on the same page bytes: our client's page decode as the informer
    asks for it (managedFields cut out of the bytes, orjson, then the
    per-page keying pass) and plain json.loads, against ApiClient.deserialize. The heap row keeps what each would cache."""
    import tracemalloc

    from promop.kube.client import KubeClient
    from promop.kube.resources import CONFIGMAPS
    from promop.kube.transforms import keyed_page, strip_managed_fields

    from kubernetes.client import ApiClient, Configuration
    from kubernetes.config import load_kube_config

    from bench.informer.stub import record_pages

    cfg = Configuration()
    load_kube_config(config_file=kubeconfig, client_configuration=cfg, persist_config=False)
    api = ApiClient(cfg)
    pages = [data.decode() for data in record_pages(api, namespace).values()]
    variants = {
        "raw": lambda t: KubeClient._list_page(
            t.encode(), CONFIGMAPS, False, None, drop_managed_fields=True,
            page_transform=lambda items: keyed_page(items, strip_managed_fields, "bench")),
        "json": lambda t: json.loads(t),
        "model": lambda t: api.deserialize(t, "V1ConfigMapList", "application/json"),
    }
    out = {}
    for name, fn in variants.items():
        best = float("inf")
        for _ in range(3):
            started = time.process_time()  # CPU time: this process alone, robust to a loaded machine
            for text in pages:
                fn(text)
            best = min(best, time.process_time() - started)
        tracemalloc.start()
        kept = [fn(text) for text in pages]
        retained = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del kept
        out[name] = {"seconds": best, "retained_bytes": retained}
    return out


def events(kubeconfig: str, namespace: str, count: int) -> dict:
    """watch -> store -> handler -> workqueue -> worker; the parent floods `count` events after `synced`."""
    from promop.kube.client import KubeClient
    from promop.kube.informer import Informer
    from promop.kube.resources import CONFIGMAPS
    from promop.kube.store import object_key
    from promop.kube.workqueue import RateLimitingQueue

    kube = KubeClient.from_kubeconfig(kubeconfig, qps=0, burst=0)
    queue = RateLimitingQueue(name="bench")
    first: list[float] = []
    processed = set()
    finished = threading.Event()

    def on_add(obj, initial):
        if not first:
            first.append(time.perf_counter())
        queue.add(object_key(obj))

    def worker():
        while True:
            key, shutdown = queue.get()
            if shutdown:
                return
            processed.add(key)
            queue.forget(key)
            queue.done(key)
            if len(processed) == count:
                finished.set()

    threading.Thread(target=worker, daemon=True).start()
    informer = Informer(kube, CONFIGMAPS, namespace=namespace, idle_timeout=600)
    informer.add_handler(on_add=on_add)
    informer.start()
    informer.wait_for_sync(60)
    print("synced", flush=True)
    if not finished.wait(600):
        raise SystemExit(f"only {len(processed)} of {count} events arrived")
    seconds = time.perf_counter() - first[0]
    queue.shutdown()
    informer.stop()
    return {"events": count, "seconds": seconds, "per_second": count / seconds}


def main(argv: list[str]) -> None:
    mode, kubeconfig, namespace, count = argv[0], argv[1], argv[2], int(argv[3])
    _imports()
    run = {"sync-raw": sync_raw, "sync-model": sync_model, "events": events,
           "decode": decode}[mode]
    print(json.dumps(run(kubeconfig, namespace, count)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
