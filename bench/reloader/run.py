"""Benchmarks of promop-config-reloader against a real Prometheus.

    python3 -m bench.reloader [--changes 50] [--delay 100ms] [--size-mb 20]
    python3 -m bench.reloader --configs minimal --no-render   # just the minimal latency run

1. Latency from a config file change (an atomic rename of a new gzipped
   config) to a completed Prometheus reload, over N changes, next to
   Prometheus's own /-/reload time measured alone in the same run.
   Target: p50/p99 <= delay-interval + 1.5 x the bare reload time. The bare
   time is measured with the same HTTP client the reloader uses, so it is
   Prometheus's reload plus the least possible client cost; bare and
   reloader-driven reloads alternate so both see the same machine load. Two
   configs: a minimal one (fixed costs dominate) and a typical one
   (100 scrape jobs with relabelling, 200 recording rules).
   The clock starts at the rename that makes the new config visible (the
   temp file is written just before it) and stops at the reloader's "reload
   triggered" log line, written right after Prometheus answered 200 (its
   timestamp has microsecond resolution): the debounce delay, event delivery,
   hashing and the POST are all inside.
2. gunzip + $(VAR) expansion + atomic write of a ~20 MB config, in a fresh
   interpreter: wall time and peak memory (tracemalloc peak and ru_maxrss above
   an idle interpreter), next to a naive read-it-all implementation.
   Target: at most 3 x the output size held in memory.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import requests
import yaml

from gotime.duration import parse_seconds as parse_duration
from reloader.httpcall import call


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except requests.RequestException:
            value = None
        if value:
            return value
        time.sleep(0.005)
    raise RuntimeError(f"timed out waiting for {what}")


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def _config(i: int, jobs: int, rules_dir: Path | None) -> str:
    """A config shaped like the operator's: `jobs` scrape jobs with relabelling, and rule files."""
    cfg: dict = {"global": {"scrape_interval": "1h", "external_labels": {"pod": "$(POD_NAME)", "change": str(i)}}}
    cfg["scrape_configs"] = [
        {
            "job_name": f"serviceMonitor/ns-{j}/app-{j}/0",
            "static_configs": [{"targets": [f"192.0.2.{j % 250 + 1}:{9000 + j}"]}],
            "relabel_configs": [
                {"source_labels": ["__address__"], "target_label": "instance"},
                {"target_label": "prometheus_replica", "replacement": "$(POD_NAME)"},
                {"source_labels": ["__address__"], "modulus": 2, "target_label": "__tmp_hash", "action": "hashmod"},
                {"source_labels": ["__tmp_hash"], "regex": "0", "action": "keep"},
            ],
            "metric_relabel_configs": [{"source_labels": ["__name__"], "regex": "go_.*", "action": "drop"}],
        }
        for j in range(jobs)
    ]
    if rules_dir is not None:
        cfg["rule_files"] = [f"{rules_dir}/*.yaml"]
    return yaml.safe_dump(cfg)


def _rules(groups: int, per_group: int = 10) -> str:
    return yaml.safe_dump({"groups": [
        {"name": f"group-{g}", "rules": [
            {"record": f"job:metric_{g}_{r}:rate5m", "expr": f'sum by (job) (rate(metric_{g}_{r}_total{{code=~"5.."}}[5m]))'}
            for r in range(per_group)
        ]}
        for g in range(groups)
    ]})


def _replace(path: Path, data: bytes) -> float:
    """Write a temp file, then rename it over `path`; return the time of the rename."""
    tmp = path.parent / f".{path.name}.bench"
    tmp.write_bytes(data)
    t0 = time.time()
    os.replace(tmp, path)
    return t0


class _LogTail:
    """Collects the reloader's JSON log lines from a pipe."""

    def __init__(self, proc: subprocess.Popen):
        self.entries: list[dict] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stderr:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                self.entries.append(entry)
                self.cond.notify_all()

    def wait_reloads(self, n: int, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                done = [e for e in self.entries if e.get("msg") == "reload triggered"]
                if len(done) >= n:
                    return done[n - 1]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"timed out waiting for reload {n}; last logs: {self.entries[-5:]}")
                self.cond.wait(left)


def _ts(entry: dict) -> float:
    return datetime.fromisoformat(entry["ts"].replace("Z", "+00:00")).timestamp()


def bench_latency(work: Path, changes: int, delay: str, jobs: int, rule_groups: int) -> dict:
    prom_bin = shutil.which("prometheus")
    if not prom_bin:
        raise SystemExit("prometheus not found: apt-get install prometheus")
    cfg_dir, out_dir = work / "config", work / "config_out"
    cfg_dir.mkdir()
    out_dir.mkdir()
    cfg, out = cfg_dir / "prometheus.yaml.gz", out_dir / "prometheus.env.yaml"
    rules_dir = None
    if rule_groups:
        rules_dir = work / "rules"
        rules_dir.mkdir()
        (rules_dir / "rules.yaml").write_text(_rules(rule_groups))
    config = lambda i: _config(i, jobs, rules_dir)  # noqa: E731
    cfg.write_bytes(gzip.compress(config(0).encode()))
    out.write_text(config(0).replace("$(POD_NAME)", "bench-0"))
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    prom = subprocess.Popen(
        [prom_bin, "--web.enable-lifecycle", f"--config.file={out}", f"--storage.tsdb.path={work / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    reloader = None
    try:
        _until(lambda: requests.get(f"{base}/-/ready", timeout=1).ok, 30, "prometheus ready")
        reloader = subprocess.Popen(
            [sys.executable, "-m", "reloader", f"--config-file={cfg}", f"--config-envsubst-file={out}",
             f"--watched-dir={cfg_dir}", *([f"--watched-dir={rules_dir}"] if rules_dir else []),
             f"--reload-url={base}/-/reload", f"--delay-interval={delay}",
             "--log-format=json"],
            env={**os.environ, "POD_NAME": "bench-0"}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        tail = _LogTail(reloader)
        tail.wait_reloads(1)
        # Bare reloads and reloader-driven ones alternate, so both see the same machine load,
        # and each starts `delay` after the previous reload, so Prometheus is equally settled.
        bare, latencies, calls = [], [], []
        pause = parse_duration(delay)
        for i in range(1, changes + 1):
            time.sleep(pause)
            # The bare reload loads a changed config too (written straight to the output,
            # which the reloader ignores), so both kinds of reload do the same work.
            out.write_text(config(-i).replace("$(POD_NAME)", "bench-0"))
            started = time.perf_counter()
            status, body = call("POST", f"{base}/-/reload", 30)
            bare.append(time.perf_counter() - started)
            if status != 200:
                raise RuntimeError(f"bare reload failed: {status} {body!r}")
            time.sleep(pause)
            t0 = _replace(cfg, gzip.compress(config(i).encode()))
            done = tail.wait_reloads(i + 1)
            latencies.append(_ts(done) - t0)
            calls.append(done["seconds"])
        final = requests.get(f"{base}/api/v1/status/config", timeout=5).json()["data"]["yaml"]
        if f"change: \"{changes}\"" not in final and f"change: '{changes}'" not in final:
            raise RuntimeError(f"Prometheus did not end up with the last config: {final}")
    finally:
        for proc in (reloader, prom):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=15)
    d = parse_duration(delay)
    return {
        "delay": d, "jobs": jobs, "rule_groups": rule_groups, "changes": changes,
        "bare_p50": _pct(bare, 50), "bare_p99": _pct(bare, 99),
        "p50": _pct(latencies, 50), "p99": _pct(latencies, 99),
        "call_p50": _pct(calls, 50), "call_p99": _pct(calls, 99),
        "target_p50": d + 1.5 * _pct(bare, 50), "target_p99": d + 1.5 * _pct(bare, 99),
    }


def _big_config(size_mb: float) -> bytes:
    """A scrape-config-shaped YAML of about `size_mb` MB with $(VAR) references throughout."""
    job = (
        "- job_name: serviceMonitor/ns-{i}/app-{i}/0\n"
        "  honor_labels: false\n"
        "  kubernetes_sd_configs:\n  - role: endpoints\n    namespaces:\n      names: [ns-{i}]\n"
        "  relabel_configs:\n"
        "  - source_labels: [__meta_kubernetes_service_label_app]\n    regex: app-{i}\n    action: keep\n"
        "  - target_label: prometheus_replica\n    replacement: $(POD_NAME)\n"
        "  - source_labels: [__address__]\n    modulus: 2\n    target_label: __tmp_hash\n    action: hashmod\n"
        "  - source_labels: [__tmp_hash]\n    regex: $(SHARD)\n    action: keep\n"
    )
    parts = ["global:\n  external_labels:\n    prometheus_replica: $(POD_NAME)\nscrape_configs:\n"]
    size, i = len(parts[0]), 0
    target = int(size_mb * 1024 * 1024)
    while size < target:
        chunk = job.format(i=i)
        parts.append(chunk)
        size += len(chunk)
        i += 1
    return "".join(parts).encode()


def _child(mode: str, src: Path, dst: Path, trace: bool) -> dict:
    cmd = [sys.executable, "-m", "bench.reloader.render_child", mode, str(src), str(dst)] + (["trace"] if trace else [])
    env = {**os.environ, "POD_NAME": "prometheus-k8s-0", "SHARD": "0"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def bench_render(work: Path, size_mb: float, rounds: int = 3) -> dict:
    src, dst = work / "big.yaml.gz", work / "big.env.yaml"
    src.write_bytes(gzip.compress(_big_config(size_mb), compresslevel=6))
    idle = _child("idle", src, dst, trace=False)
    result: dict = {"input_bytes": src.stat().st_size}
    for mode in ("streamed", "naive"):
        timed = min((_child(mode, src, dst, trace=False) for _ in range(rounds)), key=lambda r: r["seconds"])
        traced = _child(mode, src, dst, trace=True)
        result[mode] = {
            "seconds": timed["seconds"],
            "traced_peak": traced["traced_peak"],
            "rss_above_idle": max(0, timed["maxrss"] - idle["maxrss"]),
        }
    result["output_bytes"] = dst.stat().st_size
    return result


def _latency_rows(lat: dict) -> list[tuple[str, str, str]]:
    shape = f"{lat['jobs']} jobs, {lat['rule_groups'] * 10} rules" if lat["jobs"] else "minimal config"
    ok = lambda v, t: "OK" if v <= t else "MISSED"  # noqa: E731
    return [
        (f"[{shape}] bare /-/reload p50 / p99", f"{_ms(lat['bare_p50'])} / {_ms(lat['bare_p99'])}", "baseline"),
        (f"[{shape}] reload call inside the reloader p50 / p99", f"{_ms(lat['call_p50'])} / {_ms(lat['call_p99'])}",
         "the POST as timed by the reloader"),
        (f"[{shape}] change -> reload p50", _ms(lat["p50"]),
         f"<= {_ms(lat['target_p50'])} (delay + 1.5x bare p50) {ok(lat['p50'], lat['target_p50'])}"),
        (f"[{shape}] change -> reload p99 ({lat['changes']} changes)", _ms(lat["p99"]),
         f"<= {_ms(lat['target_p99'])} (delay + 1.5x bare p99) {ok(lat['p99'], lat['target_p99'])}"),
        (f"[{shape}] (latency - delay) / bare, p50 / p99",
         f"{(lat['p50'] - lat['delay']) / lat['bare_p50']:.2f}x / {(lat['p99'] - lat['delay']) / lat['bare_p99']:.2f}x",
         "<= 1.5x"),
    ]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _mb(size: float) -> str:
    return f"{size / 1024 / 1024:.1f} MB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m bench.reloader", description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=50)
    ap.add_argument("--delay", default="100ms", help="--delay-interval given to the reloader")
    ap.add_argument("--jobs", type=int, default=100, help="scrape jobs in the typical config")
    ap.add_argument("--rule-groups", type=int, default=20, help="rule groups (10 rules each) in the typical config")
    ap.add_argument("--size-mb", type=float, default=20.0)
    ap.add_argument("--configs", default="minimal,typical", help="latency runs: minimal and/or typical")
    ap.add_argument("--no-render", action="store_true", help="skip the 20 MB render measurement")
    args = ap.parse_args(argv)
    rows: list[tuple[str, str, str]] = [("delay-interval", args.delay, "")]
    with tempfile.TemporaryDirectory(prefix="bench-reloader-") as tmp:
        work = Path(tmp)
        for name, jobs, groups in (("minimal", 0, 0), ("typical", args.jobs, args.rule_groups)):
            if name not in args.configs.split(","):
                continue
            (work / name).mkdir()
            rows += _latency_rows(bench_latency(work / name, args.changes, args.delay, jobs, groups))
        if not args.no_render:
            (work / "render").mkdir()
            ren = bench_render(work / "render", args.size_mb)
    if not args.no_render:
        rows += _render_rows(ren)
    _print(rows)
    return 0


def _render_rows(ren: dict) -> list[tuple[str, str, str]]:
    out_size = ren["output_bytes"]
    st, nv = ren["streamed"], ren["naive"]
    return [
        (f"render {_mb(out_size)} (gz {_mb(ren['input_bytes'])}): time", _ms(st["seconds"]),
         f"naive read-all: {_ms(nv['seconds'])} ({st['seconds'] / nv['seconds']:.2f}x)"),
        ("render: tracemalloc peak", f"{_mb(st['traced_peak'])} ({st['traced_peak'] / out_size:.2f}x output)",
         f"<= 3x output {'OK' if st['traced_peak'] <= 3 * out_size else 'MISSED'}; naive {nv['traced_peak'] / out_size:.2f}x"),
        ("render: max RSS above idle interpreter", f"{_mb(st['rss_above_idle'])} ({st['rss_above_idle'] / out_size:.2f}x output)",
         f"naive {_mb(nv['rss_above_idle'])} ({nv['rss_above_idle'] / out_size:.2f}x)"),
    ]


def _print(rows: list[tuple[str, str, str]]) -> None:
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>{vwidth}}  {note}")
