"""CPU-seconds the config reloader needs before its first reload, against a bare interpreter.

    python3 -m bench.reloader_startup [--repeats 9] [--cpu-limit 100m] [--source DIR]

In a pod the reloader runs under a CPU limit (upstream's default 10m = 1% of a core), so its
start-up CPU, not the machine's speed, sets how long the pod waits: the init container must exit
before Prometheus starts, and the sidecar must be up before a change can reach Prometheus. Each
is measured in a fresh process, alternating with `python3 -c pass` (the floor any Python program
pays) in the same run, so the ratio holds on a noisy machine:

1. init mode (`--watch-interval=0`): gunzip + `$(VAR)` expansion + atomic write of a gzipped
   config, to exit; CPU from the kernel's accounting of the finished child (getrusage).
2. sidecar mode, the operator's flags (a listen address, the config and a rules dir watched),
   until its first successful reload: the CPU of the process's threads (`/proc/<pid>/task/*/
   schedstat`, nanoseconds) read when a stand-in `/-/reload` endpoint receives the POST.

Each figure is also turned into the wall time it takes under a CPU limit (CPU / limit, the CFS
bandwidth the limit allows; `--cpu-limit`, default the operator's --config-reloader-cpu-limit
default). Targets (issue 30): init under the limit <= 2 s, so that with the container and
Prometheus start a pod is Ready well within 10 s; sidecar to first reload under the limit <= 2 s.
Exit 1 when a target is missed.
"""
from __future__ import annotations

import argparse
import gzip
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = "global:\n  scrape_interval: 30s\n  external_labels:\n    pod: $(POD_NAME)\nrule_files: []\n"
TARGET_SECONDS = 2.0


CWD = ["/"]  # children run elsewhere: `-m reloader` would otherwise import the reloader of the current directory
SOURCE = [str(ROOT)]  # --source: another checkout's reloader/ and gotime/ (e.g. a release, for before/after)


def _env() -> dict[str, str]:
    """Every child runs `python3 -S`: a host's site hooks (.pth files: editable installs, sitecustomize)
    cost CPU at every start and are not in the reloader's image; its packages come from PYTHONPATH."""
    import site

    path = os.pathsep.join([SOURCE[0], *site.getsitepackages()])
    return {**os.environ, "PYTHONPATH": path, "POD_NAME": "prometheus-k8s-0"}


PY = [sys.executable, "-S"]


def _child_cpu(args: list[str]) -> float:
    """CPU-seconds (user + system) of one child run to its exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                          cwd=CWD[0])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{args} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _process_cpu(pid: int) -> float:
    """CPU-seconds of every live thread of `pid` (schedstat: ns on a CPU), read without stopping it."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


class StandIn:
    """A `/-/reload` endpoint that samples the reloader's CPU when the POST arrives."""

    def __init__(self) -> None:
        self.pid = 0
        self.cpu: float | None = None
        self.got = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                if outer.cpu is None and outer.pid:
                    outer.cpu = _process_cpu(outer.pid)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                outer.got.set()

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/-/reload"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _sidecar_cpu(work: Path, stand_in: StandIn) -> float:
    stand_in.cpu, stand_in.pid = None, 0
    stand_in.got.clear()
    args = [*PY, "-m", "reloader", "--listen-address=127.0.0.1:0", f"--reload-url={stand_in.url}",
            f"--config-file={work / 'config' / 'prometheus.yaml.gz'}",
            f"--config-envsubst-file={work / 'out' / 'prometheus.env.yaml'}",
            f"--watched-dir={work / 'rules'}", f"--watched-dir={work / 'config'}"]
    proc = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=CWD[0])
    stand_in.pid = proc.pid
    try:
        if not stand_in.got.wait(60):
            raise SystemExit("the sidecar made no reload within 60 s")
    finally:
        proc.terminate()
        proc.wait(10)
    assert stand_in.cpu is not None
    return stand_in.cpu


def _layout(work: Path) -> None:
    for d in ("config", "out", "rules"):
        (work / d).mkdir()
    (work / "config" / "prometheus.yaml.gz").write_bytes(gzip.compress(CONFIG.encode()))
    (work / "rules" / "a.yaml").write_text("groups: []\n")


def _limit_cores(text: str) -> float:
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from promop.render.reloader_container import ReloaderSettings

    p = argparse.ArgumentParser(prog="python3 -m bench.reloader_startup", description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=9, help="runs of each, alternating (median reported)")
    p.add_argument("--cpu-limit", default=ReloaderSettings().cpu_limit,
                   help="CPU limit to turn CPU-seconds into wall time (default: the operator's default)")
    p.add_argument("--source", default=str(ROOT),
                   help="directory holding the reloader/ and gotime/ to measure (default: this checkout)")
    opts = p.parse_args(argv)
    SOURCE[0] = os.path.abspath(opts.source)
    # byte code compiled ahead, as in an installed package or image (a read-only container cannot write it)
    subprocess.run([sys.executable, "-m", "compileall", "-q", f"{SOURCE[0]}/reloader", f"{SOURCE[0]}/gotime"],
                   check=True, stdout=subprocess.DEVNULL)
    limit = _limit_cores(opts.cpu_limit)
    bare, init, side = [], [], []
    stand_in = StandIn()
    with tempfile.TemporaryDirectory(prefix="bench-reloader-startup-") as tmp:
        work = Path(tmp)
        CWD[0] = tmp
        _layout(work)
        init_args = [*PY, "-m", "reloader", "--watch-interval=0", "--listen-address=:0",
                     f"--config-file={work / 'config' / 'prometheus.yaml.gz'}",
                     f"--config-envsubst-file={work / 'out' / 'prometheus.env.yaml'}"]
        for _ in range(max(1, opts.repeats)):
            bare.append(_child_cpu([*PY, "-c", "pass"]))
            init.append(_child_cpu(init_args))
            side.append(_sidecar_cpu(work, stand_in))
    stand_in.close()
    b, i, s = (statistics.median(x) for x in (bare, init, side))
    print(f"reloader start-up CPU, median of {len(bare)} runs each, {sys.executable} (Python {sys.version.split()[0]}), "
          f"reloader from {SOURCE[0]}")
    print(f"  python3 -S -c pass (baseline)       {b * 1000:7.1f} ms CPU")
    print(f"  init mode, to exit                 {i * 1000:7.1f} ms CPU = {i / b:4.1f}x baseline"
          f" -> {i / limit:5.2f} s under a {opts.cpu_limit} limit")
    print(f"  sidecar, to its first reload       {s * 1000:7.1f} ms CPU = {s / b:4.1f}x baseline"
          f" -> {s / limit:5.2f} s under a {opts.cpu_limit} limit")
    missed = [name for name, cpu in (("init", i), ("sidecar", s)) if cpu / limit > TARGET_SECONDS]
    print(f"target: each <= {TARGET_SECONDS:g} s under the limit: " + ("met" if not missed else
                                                                          "MISSED (" + ", ".join(missed) + ")"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
