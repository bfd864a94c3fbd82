"""`promop render` pauses the cyclic garbage collector (promop/commands/render.py): that is only
sound while reading, rendering and writing leave no reference cycles, which these tests check."""

from __future__ import annotations

import contextlib
import gc
import io
from pathlib import Path

import pytest

from promop import cli
from promop.render.emit import emit, emit_all
from promop.render.yaml_load import load_all

REPO = Path(__file__).resolve().parents[2]


def workload(folder: Path, monitors: int = 20, rules: int = 10) -> Path:
    """A small version of bench.render's input: ServiceMonitors with relabelings and TLS, rules
    with alerts, templates and enforced namespace labels."""
    from bench.render.__main__ import workload as bench_workload
    from bench.render.cli import write_inputs

    write_inputs(folder, bench_workload(monitors, rules))
    return folder


def cyclic_garbage(fn) -> list:
    """What the collector would have to free after fn() (collector paused, objects kept to inspect)."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        fn()
        gc.collect()
        return list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


def run_cli(args: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli.main(args)


def run_command(args: list[str]) -> list:
    """The command itself, from arguments parsed beforehand (argparse's parser holds cycles of its own,
    once per process)."""
    parsed = cli.build_parser("render").parse_args(args)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cyclic_garbage(lambda: parsed.func(parsed))


@pytest.mark.parametrize("source", ["workload", "examples"])
def test_render_leaves_no_reference_cycles(tmp_path: Path, source: str) -> None:
    inputs = workload(tmp_path / "in") if source == "workload" else REPO / "examples"
    for out in (["--out", str(tmp_path / "out")], []):
        args = ["render", "-f", str(inputs), *out]
        assert run_cli(args) == 0  # imports and one-time caches first
        garbage = run_command(args)
        assert garbage == [], [type(o).__name__ for o in garbage[:20]]


def test_the_collector_is_paused_during_the_command_and_restored(tmp_path: Path, monkeypatch) -> None:
    from promop.commands import render as command

    seen = []
    real = command._run
    monkeypatch.setattr(command, "_run", lambda args: seen.append(gc.isenabled()) or real(args))
    assert gc.isenabled()
    assert run_cli(["render", "-f", str(REPO / "examples"), "--out", str(tmp_path / "out")]) == 0
    assert seen == [False]
    assert gc.isenabled()


def test_emitter_and_loader_leave_no_cycles() -> None:
    data = {"a": [{"b": "c", "d": [1, 2.5, None, True]}], "e": {}}
    assert cyclic_garbage(lambda: (emit(data), emit(data, sort_keys=True, literal=True), emit_all([data, data]))) == []
    assert cyclic_garbage(lambda: load_all("a: [1, {b: c}]\n---\nx: &y [1]\nz: *y\n")) == []
