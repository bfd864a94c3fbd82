"""A sampling profiler for a whole process, every thread: `python3 -m bench.scale.sampler OUT -m MODULE ARGS...`.

cProfile sees only the thread it runs in, and the operator's work happens in worker, informer
and feedback threads; a sampler sees them all, at a cost the process pays evenly. Every
interval a thread of ours reads `sys._current_frames()` and counts, per thread group, the
innermost frame (self) and every distinct frame on the stack (inclusive), for the threads the
kernel shows running (state R in /proc/self/task/TID/stat); the others (waiting on a lock, a
socket, the GIL) are idle and counted apart.

Sampling starts at the first SIGUSR1, and each SIGUSR1 starts a new window (the bench sends it
once the first sync and its backlog are over, so the report covers the edits; sampling costs the
process ~15% of a core); the report is written to OUT when the process exits. With
SCALE_SAMPLE_FROM_START=1 sampling starts with the process, and the first SIGUSR1 writes what it
saw until then (the start-up and first sync) to OUT with `.start` before its suffix.
"""

from __future__ import annotations

import atexit
import collections
import os
import re
import runpy
import signal
import sys
import threading
import time



def _running(native_id: int | None) -> bool:
    try:
        with open(f"/proc/self/task/{native_id}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"R"
    except (OSError, IndexError):
        return False


def _group(name: str) -> str:
    return re.sub(r"[-_ ]?\d+$", "", name)


class Sampler:
    def __init__(self, interval: float, out: str = "", from_start: bool = False) -> None:
        self.interval = interval
        self.lock = threading.Lock()
        self.start_report = out.rsplit(".", 1)[0] + ".start.txt" if from_start and out else ""
        self.reset()
        self.active = from_start

    def reset(self, *_: object) -> None:
        if _ and self.start_report:  # the first SIGUSR1 with SCALE_SAMPLE_FROM_START: start-up's window
            self.report(self.start_report)
            self.start_report = ""
        self.active = bool(_)  # sampling starts with the first SIGUSR1 (not while the bench waits for quiet)
        with getattr(self, "lock", threading.Lock()):
            self.started = time.monotonic()
            self.samples = 0
            self.self_counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
            self.incl_counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
            self.busy: collections.Counter = collections.Counter()
            self.idle: collections.Counter = collections.Counter()

    def run(self) -> None:
        me = threading.get_ident()
        while True:
            time.sleep(self.interval)
            if not self.active:
                continue
            threads = {t.ident: t for t in threading.enumerate()}
            frames = sys._current_frames()
            with self.lock:
                self.samples += 1
                for ident, frame in frames.items():
                    if ident == me:
                        continue
                    thread = threads.get(ident)
                    group = _group(thread.name if thread else "?")
                    if not _running(thread.native_id if thread else None):
                        self.idle[group] += 1
                        continue
                    self.busy[group] += 1
                    seen = set()
                    f = frame
                    first = True
                    while f is not None:
                        code = f.f_code
                        where = f"{code.co_filename.rsplit('/promop/', 1)[-1]}:{code.co_firstlineno} {code.co_name}"
                        if first:
                            self.self_counts[group][where] += 1
                            first = False
                        if where not in seen:
                            seen.add(where)
                            self.incl_counts[group][where] += 1
                        f = f.f_back

    def report(self, path: str) -> None:
        with self.lock:
            wall = time.monotonic() - self.started
            lines = [f"window {wall:.1f} s, {self.samples} samples every {self.interval * 1000:.0f} ms"]
            total_busy = sum(self.busy.values())
            lines.append(f"busy samples {total_busy} ({total_busy / max(1, self.samples):.2f} threads on average)")
            for group, n in self.busy.most_common():
                lines.append(f"\n== thread group {group}: busy {n} samples, idle {self.idle[group]}")
                lines.append("  -- inclusive")
                for where, c in self.incl_counts[group].most_common(45):
                    lines.append(f"  {c:7d} {100 * c / n:5.1f}%  {where}")
                lines.append("  -- self")
                for where, c in self.self_counts[group].most_common(25):
                    lines.append(f"  {c:7d} {100 * c / n:5.1f}%  {where}")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


def main() -> None:
    out = sys.argv[1]
    interval = float(os.environ.get("SCALE_SAMPLE_INTERVAL", "0.01"))
    if sys.argv[2] != "-m":
        raise SystemExit("usage: python3 -m bench.scale.sampler OUT -m MODULE ARGS...")
    module = sys.argv[3]
    sys.argv = [module, *sys.argv[4:]]
    sampler = Sampler(interval, out, os.environ.get("SCALE_SAMPLE_FROM_START") == "1")
    signal.signal(signal.SIGUSR1, sampler.reset)
    atexit.register(sampler.report, out)
    threading.Thread(target=sampler.run, daemon=True, name="sampler").start()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
