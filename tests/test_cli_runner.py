"""tests/cli_runner.py answers as a real `python -m promop` process does, and leaves no trace.

The CLI tests run `promop` in-process; these tests are what lets them: the same command lines run
both ways give the same exit code, stdout and stderr (so the entry point `python -m promop` works
end to end for render and explain), and a command's changes to the process are undone."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import promop

ROOT = Path(__file__).resolve().parents[1]

FILES = """\
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: main, namespace: mon}
spec:
  serviceMonitorSelector: {}
  unknownField: 1
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web, namespace: mon}
spec: {selector: {}, endpoints: [{port: web, interval: 10s, scrapeTimeout: 30s}]}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: ok, namespace: mon}
spec: {selector: {}, endpoints: [{port: web}]}
---
kind: Deployment
metadata: {name: d, namespace: mon}
"""

# (arguments, where {f} is the file above; the exit code): each command's output on both streams, an
# exit code the command returns and one from a user mistake (the rest of each command's exit codes, and
# argparse's, run in-process in tests/test_cli.py, tests/render/test_cli_render.py and the like)
LINES = [
    ("render -f {f}", 0),
    ("render -f {f} --kubernetes-version latest", 2),
    ("explain smon mon/web -f {f}", 1),
    ("explain pmon mon/none -f {f}", 2),
]


@pytest.mark.parametrize("line,code", LINES, ids=[line.replace("-f {f}", "-f FILE") for line, _ in LINES])
def test_in_process_is_what_python_m_promop_prints(tmp_path, line, code):
    path = tmp_path / "in.yaml"
    path.write_text(FILES)
    args = line.format(f=path).split()
    real = subprocess.run([sys.executable, "-m", "promop", *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert real.returncode == code, real.stdout + real.stderr
    assert "Traceback" not in real.stderr and real.stderr, real.stderr
    errors = [line for line in real.stderr.splitlines() if not line.startswith("note: ignored")]
    assert code != 2 or len(errors) == 1, real.stderr  # a user mistake: one line
    mine = promop(*args, cwd=tmp_path)
    assert (mine.returncode, mine.stdout, mine.stderr) == (real.returncode, real.stdout, real.stderr)


def _misbehaving(args) -> int:
    """A command that changes everything a command can change, and writes to both streams."""
    from promop.host import logs

    print(os.getcwd())
    logs.setup("debug")
    logging.getLogger("promop.test").warning("logged")
    logging.getLogger("urllib3").setLevel(logging.DEBUG)
    os.environ["PROMOP_CLI_RUNNER_TEST"] = "1"
    os.chdir("/")
    signal.signal(signal.SIGTERM, lambda *_: None)
    return 3


def test_exit_code_streams_and_global_state_are_restored(monkeypatch, tmp_path):
    monkeypatch.setattr("promop.commands.manifests.run", _misbehaving)
    root = logging.getLogger()
    before = (list(root.handlers), root.level, logging.getLogger("urllib3").level, os.getcwd(),
              signal.getsignal(signal.SIGTERM), dict(os.environ), sys.stdout, sys.stderr, sys.argv)
    proc = promop("manifests", cwd=tmp_path)
    assert proc.returncode == 3
    assert proc.stdout == f"{tmp_path}\n"  # run in cwd
    assert "level=warn " in proc.stderr and 'msg=logged' in proc.stderr, proc.stderr
    after = (list(root.handlers), root.level, logging.getLogger("urllib3").level, os.getcwd(),
             signal.getsignal(signal.SIGTERM), dict(os.environ), sys.stdout, sys.stderr, sys.argv)
    assert after == before


def test_an_unexpected_exception_is_a_traceback_and_exit_1(monkeypatch):
    def broken(args):
        print("half", end="")
        raise RuntimeError("bug")
    monkeypatch.setattr("promop.commands.manifests.run", broken)
    proc = promop("manifests")
    assert proc.returncode == 1 and proc.stdout == "half"
    assert proc.stderr.startswith("Traceback (most recent call last):") and "RuntimeError: bug" in proc.stderr


@pytest.mark.parametrize("code,returncode,stderr", [(None, 0, ""), (7, 7, ""), ("bye", 1, "bye\n")])
def test_system_exit_codes_map_as_the_interpreter_maps_them(monkeypatch, code, returncode, stderr):
    def leaves(args):
        raise SystemExit(code)
    monkeypatch.setattr("promop.commands.manifests.run", leaves)
    proc = promop("manifests")
    assert (proc.returncode, proc.stderr) == (returncode, stderr)


def test_env_replaces_the_environment_for_the_call_only(monkeypatch):
    seen = {}

    def reads(args):
        seen.update(os.environ)
        return 0
    monkeypatch.setattr("promop.commands.manifests.run", reads)
    monkeypatch.setenv("PROMOP_CLI_RUNNER_OUTER", "x")
    assert promop("manifests", env={"ONLY": "this"}).returncode == 0
    assert seen == {"ONLY": "this"}
    assert os.environ["PROMOP_CLI_RUNNER_OUTER"] == "x" and "ONLY" not in os.environ


def test_stdin_is_the_input_text(monkeypatch):
    def echoes(args):
        sys.stdout.write(sys.stdin.read().upper())
        return 0
    monkeypatch.setattr("promop.commands.manifests.run", echoes)
    assert promop("manifests", input="a\nb\n").stdout == "A\nB\n"
    assert promop("manifests").stdout == ""  # no input: an empty stdin, never the test's own
