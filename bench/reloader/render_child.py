"""Run in a fresh interpreter: render one config and report time and peak memory as JSON.

    python3 -m bench.reloader.render_child <mode> <input> <output> [trace]

mode "streamed" is the reloader's own code path; "naive" reads everything into
memory (gunzip, decode, re.sub, encode, write) as a baseline; "idle" only
imports, to measure the interpreter's own resident set. With "trace", tracemalloc
records the peak of Python allocations (and slows the run, so timing runs omit it).
"""
from __future__ import annotations

import gzip
import json
import os
import re
import sys
import time
import tracemalloc

from reloader.envsubst import environment
from reloader.render import render_file


def naive(src: str, dst: str, env: dict[bytes, bytes]) -> None:
    with open(src, "rb") as f:
        raw = f.read()
    text = gzip.decompress(raw).decode("utf-8")
    strenv = {k.decode(): v.decode() for k, v in env.items()}
    out = re.sub(r"\$\(([a-zA-Z_0-9]+)\)", lambda m: strenv.get(m.group(1), m.group(0)), text)
    with open(dst, "wb") as f:
        f.write(out.encode())
        f.flush()
        os.fsync(f.fileno())


def main() -> None:
    mode, src, dst = sys.argv[1:4]
    trace = sys.argv[4:5] == ["trace"]
    env = environment("POD_NAME")
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    if mode == "streamed":
        render_file(src, dst, env)
    elif mode == "naive":
        naive(src, dst, env)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] if trace else 0
    print(json.dumps({"seconds": seconds, "traced_peak": peak, "maxrss": _high_water_rss()}))


def _high_water_rss() -> int:
    """VmHWM of this process image; ru_maxrss would include the forking parent's peak."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmHWM not found in /proc/self/status")


if __name__ == "__main__":
    main()
