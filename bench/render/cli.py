"""Issue 32's render figure: `promop render -f DIR --out OUT` of 3,000 scrape jobs (1,000
ServiceMonitors x 3 endpoints) and 500 rule files (500 PrometheusRules, 10,000 rules), start-up
subtracted, against `orjson.dumps` of the same output, measured in the same run.

- render: wall time of the CLI as a user runs it (a child process: read the YAML files, select,
  validate, generate, write prometheus.yaml, 500 rule files and manifests.yaml);
- start-up: the same command on the same Prometheus with no monitors or rules (interpreter,
  imports, CRD schemas: everything that does not grow with the input); subtracted;
- baseline: `orjson.dumps` of the data the CLI wrote (every document of every output file,
  read back untimed), timed in this process.

Runs alternate (start-up, render) so both see the same machine load; the figure is the median
ratio of each pair, with the medians of the parts beside it. The child's CPU time (user + system)
is given too: steadier than wall time on a loaded machine.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
import yaml

from promop.render.emit import emit_all

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
ROOT = Path(__file__).resolve().parents[2]


def write_inputs(folder: Path, inputs, with_monitors: bool = True) -> None:
    """The workload as the YAML files a user would keep: the Prometheus and Namespaces, the
    ServiceMonitors, the PrometheusRules."""
    folder.mkdir(parents=True, exist_ok=True)
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", **n} for n in inputs.namespaces]
    (folder / "prometheus.yaml").write_text(emit_all([inputs.prometheus, *namespaces]))
    if with_monitors:
        (folder / "servicemonitors.yaml").write_text(emit_all(list(inputs.service_monitors)))
        (folder / "prometheusrules.yaml").write_text(emit_all(list(inputs.prometheus_rules)))


@dataclass
class Run:
    wall: float
    cpu: float


def run_cli(folder: Path, out: Path, root: Path, extra_env: dict[str, str] | None = None) -> Run:
    """One `python3 -m promop render -f folder --out out` from `root`'s promop."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(root), **(extra_env or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "promop", "render", "-f", str(folder), "--out", str(out)],
                          cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"promop render failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu)


def output_documents(out: Path) -> list:
    """Every document the CLI wrote (config, rule files, manifests), as data."""
    docs = []
    for path in sorted(out.rglob("*.yaml")):
        docs.extend(yaml.load_all(path.read_text(), Loader=_Loader))
    return docs


def orjson_time(docs: list, repeat: int) -> Run:
    """Median wall and CPU time of orjson.dumps over every output document."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        for doc in docs:
            orjson.dumps(doc)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - start_cpu)
    return Run(statistics.median(walls), statistics.median(cpus))


@dataclass
class Figure:
    ratio: float
    ratio_cpu: float
    render: float
    startup: float
    baseline: float
    baseline_cpu: float
    render_cpu: float
    startup_cpu: float
    output_mb: float
    files: int


def measure(inputs, repeat: int = 5, root: Path = ROOT, extra_env: dict[str, str] | None = None) -> Figure:
    """The figure for `inputs` (bench.render's workload), `repeat` alternated pairs."""
    with tempfile.TemporaryDirectory(prefix="bench-render-cli-") as tmp:
        tmp_path = Path(tmp)
        full_in, empty_in, out = tmp_path / "in", tmp_path / "empty", tmp_path / "out"
        write_inputs(full_in, inputs)
        write_inputs(empty_in, inputs, with_monitors=False)
        run_cli(full_in, out, root, extra_env)  # warm the page cache and the .pyc files
        run_cli(empty_in, out, root, extra_env)
        renders, startups, ratios, ratios_cpu = [], [], [], []
        docs = None
        for _ in range(repeat):
            s = run_cli(empty_in, out, root, extra_env)
            r = run_cli(full_in, out, root, extra_env)
            if docs is None:
                docs = output_documents(out)
            base = orjson_time(docs, 21)
            startups.append(s)
            renders.append(r)
            ratios.append((r.wall - s.wall) / base.wall)
            ratios_cpu.append((r.cpu - s.cpu) / base.cpu)
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        files = sum(1 for p in out.rglob("*") if p.is_file())
        base = orjson_time(docs, 51)
    return Figure(
        ratio=statistics.median(ratios), ratio_cpu=statistics.median(ratios_cpu),
        render=statistics.median(r.wall for r in renders), startup=statistics.median(s.wall for s in startups),
        baseline=base.wall, baseline_cpu=base.cpu, render_cpu=statistics.median(r.cpu for r in renders),
        startup_cpu=statistics.median(s.cpu for s in startups), output_mb=size / 1e6, files=files,
    )


def rows(fig: Figure) -> list[tuple[str, str]]:
    return [
        ("CLI: promop render --out, wall (median)", f"{fig.render:.2f} s; start-up {fig.startup:.2f} s; "
                                                   f"output {fig.output_mb:.1f} MB in {fig.files} files"),
        ("CLI: orjson.dumps of the same output", f"{fig.baseline * 1000:.1f} ms wall, "
                                                 f"{fig.baseline_cpu * 1000:.1f} ms CPU"),
        ("CLI: (render - start-up) / orjson, wall (target <= 25)", f"{fig.ratio:.1f}x "
                                                                   f"({(fig.render - fig.startup):.2f} s)"),
        ("CLI: the same in CPU time (child's / this process's)", f"{fig.ratio_cpu:.1f}x "
                                                    f"({fig.render_cpu:.2f} s - {fig.startup_cpu:.2f} s)"),
        ("load average (1 min) at the end", f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"),
    ]
