"""A second process for the first render: part of the monitors' fragments rendered beside us.

Why: at start-up every monitor's fragment is rendered at once (10,000 ServiceMonitors: ~1.1 s of
CPU), in one process, so on one core (the GIL); that render was the larger part of the first sync
(docs/benchmarks.md, issue 32). Edits render one fragment and never come here.

How: one worker process, spawned once the caches have synced (spawned at start, its imports and
schema loading competed with the LISTs for the CPU and cost as much as it saved), is sent the
second half of a large batch of misses in requests of CHUNK monitors while this process renders
the first half; what it has not started by then is taken back and rendered here. It gets the
generation context without the Store (no Secret or ConfigMap crosses a process boundary): a
monitor whose render touches the Store at all comes back as None and is rendered here, as is
everything when the worker fails or is too slow. Requests and answers are pickled and compressed:
the executor's reading thread waits for the GIL this process's render holds at every pipe read.
What comes back is the fragment's texts, problems, assets and job names: the render is the same
as without the worker, which `tests/operator/test_render_pool.py` checks. The worker is stopped
once the first syncs are done (multiprocessing's resource tracker, a ~10 MB process, stays until the
operator exits).

Only with 2 or more CPUs to run on (affinity and the cgroup's quota): on one CPU it would only
add the pickling. `promop run --no-render-process` (hidden, for benchmarks) goes without.
"""

from __future__ import annotations

import copy
import functools
import gc
import logging
import multiprocessing
import os
import pickle
import threading
import time
import zlib
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Mapping, Sequence

from promop.host.logs import fields

log = logging.getLogger("promop.operator")

#: below this many misses in one pass, a worker round trip is not worth it
MIN_BATCH = 1000
#: objects per request to the worker: what it holds at once (its memory), the rest waits pickled
CHUNK = 1000


def usable_cpus() -> float:
    """CPUs this process may use: its affinity, capped by a cgroup v2 CPU quota (a container's limit)."""
    try:
        cpus: float = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            cpus = min(cpus, int(quota) / int(period))
    except (OSError, ValueError):
        pass
    return cpus


class Offload:
    """The worker's answer to one batch; `result()` never raises: None for what to render here.

    Asked once this process has rendered its own half: requests the worker has not started are
    taken back (rendered here), so neither side waits long for the other."""

    def __init__(self, futures: list[tuple[Future, int]], timeout: float, steal: bool = True) -> None:
        self._futures, self._timeout, self._steal = futures, timeout, steal

    def result(self) -> list[Any]:
        started = time.monotonic()
        deadline = started + self._timeout
        out: list[Any] = []
        failed = None
        stolen = 0
        for future, count in self._futures:
            answer = None
            if self._steal and not future.done() and future.cancel():
                stolen += count  # not started yet: this process is done with its own half, it renders these too
            elif failed is None:
                try:
                    answer = unpack(future.result(timeout=max(0.0, deadline - time.monotonic())))
                except Exception as exc:  # noqa: BLE001 - the worker is an optimisation: render here instead
                    failed = exc
            if answer is None or len(answer) != count:
                future.cancel()
                answer = [None] * count
            out += answer
        if failed is not None:
            log.warning("render worker failed; rendering its part here", **fields(error=str(failed) or repr(failed)))
        else:  # once or twice in a process's life: how the first render was shared, for tuning
            log.info("render worker answered", **fields(
                sent=len(out), taken_back=stolen, collect_ms=round((time.monotonic() - started) * 1000)))
        return out


class RenderPool:
    """One spawned worker process; `offload(ctx, kind, objs)` is what RenderCache.offload calls."""

    def __init__(self, *, min_batch: int = MIN_BATCH, timeout: float = 60.0, cpus: float | None = None,
                 steal: bool = True) -> None:
        self.min_batch = min_batch
        self.steal = steal
        self.timeout = timeout
        self._cpus = cpus
        self._executor: ProcessPoolExecutor | None = None
        self._ready: Future | None = None
        self._lock = threading.Lock()
        self.batches = 0

    def start(self) -> bool:
        """Spawn the worker and warm it (imports, CRD schemas); False when this machine has one CPU."""
        cpus = usable_cpus() if self._cpus is None else self._cpus
        if cpus < 2:
            log.info("first render in this process only", **fields(cpus=round(cpus, 2)))
            return False
        with self._lock:
            if self._executor is None:
                try:
                    self._executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
                    self._ready = self._executor.submit(_warm)
                except (OSError, RuntimeError) as exc:  # e.g. no writable /dev/shm for its locks
                    log.warning("no render worker; the first render runs here only", **fields(error=str(exc)))
                    self._executor = self._ready = None
                    return False
        return True

    def ready(self) -> bool:
        ready = self._ready
        return ready is not None and ready.done() and not ready.cancelled() and ready.exception() is None

    def usable(self) -> bool:
        """Started, and its warm-up has not failed (it may still run: requests wait behind it)."""
        ready = self._ready
        return ready is not None and not ready.cancelled() and (not ready.done() or ready.exception() is None)

    def offload(self, ctx: Any, kind: str, objs: Sequence[Mapping[str, Any]]) -> Offload | None:
        """Send `objs` to the worker; None (render them all here) when the batch is small or there is
        no worker. One still warming up takes them too: what it has not started when this process is
        done with its own half is taken back (Offload)."""
        if len(objs) < self.min_batch or not self.usable():
            return None
        with self._lock:
            executor = self._executor
            if executor is None:
                return None
            portable = copy.copy(ctx)
            portable.store = None
            futures = []
            try:
                for start in range(0, len(objs), CHUNK):
                    chunk = list(objs[start:start + CHUNK])
                    futures.append((executor.submit(_render_packed, pack((portable, kind, chunk))), len(chunk)))
            except RuntimeError:  # shut down meanwhile
                for future, _ in futures:
                    future.cancel()
                return None
        self.batches += 1
        return Offload(futures, self.timeout, self.steal)

    def close(self) -> None:
        """Stop the worker (its memory goes back); later batches render here."""
        with self._lock:
            executor, self._executor, self._ready = self._executor, None, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


def pack(value: Any) -> bytes:
    """Pickled and compressed: through the pipe in a few reads. Each read of the executor's thread waits
    for the GIL this process's render holds; 2 MB of job texts a request in 64 KiB pipe reads stalled
    the worker for longer than it rendered (measured: 5,000 monitors 0.53 s alone, 1.1 s so)."""
    return zlib.compress(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack(blob: bytes) -> Any:
    return pickle.loads(zlib.decompress(blob))


# ---- in the worker process --------------------------------------------------------------------
def _render_packed(blob: bytes) -> bytes:
    return pack(_render(*unpack(blob)))


def _warm() -> bool:
    from promop.render.warm import warm

    warm()
    return True


class _Untouchable:
    """The worker's Store: empty, and it says whether anything asked it."""

    def __init__(self) -> None:
        self.touched = False

    def exists(self, *_args: Any) -> bool:
        self.touched = True
        return False

    def get(self, *_args: Any) -> None:
        self.touched = True
        return None

    def __getattr__(self, name: str) -> Any:
        self.touched = True
        raise AttributeError(name)


def _render(ctx: Any, kind: str, objs: list[Mapping[str, Any]]) -> list[Any]:
    """Per object: (texts, rejected, warnings, assets, job names), or None when its render read the Store."""
    from promop.render.generate import monitor_fragment

    store = ctx.store = _Untouchable()
    out: list[Any] = []
    gc.disable()  # as in the operator during its first syncs (promop.operator.gcfreeze): no garbage cycles here
    try:
        for obj in objs:
            store.touched = False
            frag = monitor_fragment(ctx, kind, obj)
            if store.touched or frag.reads:
                out.append(None)
                continue
            out.append((frag.texts, frag.rejected, frag.warnings, frag.assets, list(frag.job_names)))
    finally:
        gc.enable()
    return out


def fragment_from(kind: str, obj: Mapping[str, Any], answer: tuple, keep_jobs: bool) -> Any:
    """The Fragment a worker's answer stands for (its jobs decoded from the texts when read)."""
    from promop.render.generate import Fragment, decode_jobs
    from promop.render.model import obj_meta

    texts, rejected, warnings, assets, names = answer
    ns, name = obj_meta(obj)
    frag = Fragment(kind, ns, name, texts=texts, rejected=rejected, warnings=warnings, assets=assets)
    frag.__dict__["job_names"] = names   # functools.cached_property's slot: not decoded for this
    frag.jobs = decode_jobs(texts) if keep_jobs else functools.partial(decode_jobs, tuple(texts))
    return frag
