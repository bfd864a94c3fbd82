"""Every command that talks to a cluster loads its kubeconfig through promop.host, and every
long-running command logs in the same format (promop.host.logs).

A kubeconfig mistake is the user's: one line on stderr, exit 2, no traceback, whichever command
(before, `autoscaler` and `recommender` retried a missing file forever and five commands printed an
80-line traceback for broken YAML). Each case runs the real command as a user would.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from deadlines import scaled

ROOT = Path(__file__).resolve().parent.parent

# (command line before --kubeconfig, the command name its error line starts with)
COMMANDS = [
    (["autoscaler", "--web.listen-address", "127.0.0.1:0"], "autoscaler"),
    (["recommender", "--web.listen-address", "127.0.0.1:0"], "recommender"),
    (["hpa", "explain", "default/web"], "hpa"),
    (["recommender", "explain", "default/web"], "recommender"),
    (["adapter", "--config", "{adapter_config}", "--secure-port", "0", "--insecure-port", "1"], "adapter"),
    (["run", "--web.listen-address", "127.0.0.1:0"], "run"),
]

# (kubeconfig file name in the fixture folder, or None for a path that does not exist; what the line says)
KUBECONFIGS = [
    ("not-yaml.kc", "is not valid YAML"),
    (None, "no such file"),
    ("empty.kc", "is not a kubeconfig"),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("kubeconfigs")
    (d / "not-yaml.kc").write_text("apiVersion: v1\nclusters: [\n")
    (d / "empty.kc").write_text("")
    (d / "adapter.yaml").write_text("rules: []\n")
    return d


def _promop(args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promop", *args], capture_output=True, text=True,
                          timeout=scaled(20), cwd=ROOT, env=env)


def _assert_one_line(proc: subprocess.CompletedProcess, command: str, expected: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"promop {command}: "), lines[0]
    assert expected in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("kubeconfig,expected", KUBECONFIGS, ids=[k[1] for k in KUBECONFIGS])
@pytest.mark.parametrize("argv,command", COMMANDS, ids=[" ".join(c[0][:2]) for c in COMMANDS])
def test_a_kubeconfig_mistake_is_one_line_and_exit_2(folder, argv, command, kubeconfig, expected):
    path = folder / kubeconfig if kubeconfig else folder / "does-not-exist.kc"
    args = [a.format(adapter_config=folder / "adapter.yaml") for a in argv]
    line = _assert_one_line(_promop([*args, "--kubeconfig", str(path)]), command, expected)
    assert f"--kubeconfig {path}" in line  # says which file
    assert "server" not in line.split(":", 1)[1]  # not about a server address: the file is the problem


@pytest.mark.parametrize("argv,command", COMMANDS[:3], ids=[" ".join(c[0][:2]) for c in COMMANDS[:3]])
def test_a_missing_kubeconfig_from_the_environment_names_the_variable(folder, argv, command):
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    env["KUBECONFIG"] = str(folder / "nowhere.kc")
    line = _assert_one_line(_promop(argv, env), command, "no such file")
    assert f"KUBECONFIG={folder / 'nowhere.kc'}" in line


# ---- one log format for every long-running command ---------------------------------------------

LOGFMT = re.compile(r'^level=(debug|info|warn|error) ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z '
                    r'logger=promop[.\w]* msg=("([^"\\]|\\.)*"|\S+)( [\w.]+=("([^"\\]|\\.)*"|\S*))*$')
JSON_KEYS = ["level", "ts", "logger", "msg"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unreachable_kubeconfig(folder: Path) -> Path:
    path = folder / "unreachable.kc"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                    "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
                    "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n")
    return path


def _log_lines(args: list[str], enough: int) -> list[str]:
    """The first `enough` stderr lines of a long-running command (then SIGTERM)."""
    proc = subprocess.Popen([sys.executable, "-m", "promop", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + scaled(20)
    try:
        while len(lines) < enough and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(scaled(15))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(scaled(5))
    assert len(lines) >= enough, f"{args[0]}: only {lines}"
    return [line.rstrip("\n") for line in lines]


def _long_running(folder: Path) -> list[tuple[str, list[str]]]:
    kc = str(_unreachable_kubeconfig(folder))
    web = ["--web.listen-address", "127.0.0.1:0"]
    return [
        ("run", ["run", "--kubeconfig", kc, *web]),
        ("autoscaler", ["autoscaler", "--kubeconfig", kc, *web]),
        ("recommender", ["recommender", "--kubeconfig", kc, *web]),
        # --no-kube: it logs its start and then its failing Prometheus relists
        ("adapter", ["adapter", "--config", str(folder / "adapter.yaml"), "--no-kube", "--secure-port", "0",
                     "--bind-address", "127.0.0.1", "--insecure-port", str(_free_port()),
                     "--prometheus-url", "http://127.0.0.1:9"]),
    ]


@pytest.mark.parametrize("command", ["run", "autoscaler", "recommender", "adapter"])
def test_every_long_running_command_logs_logfmt(folder, command):
    args = dict(_long_running(folder))[command]
    lines = [line for line in _log_lines(args, 2) if not line.startswith("promop adapter: serving ")]
    assert lines
    for line in lines:
        assert LOGFMT.match(line), f"promop {command}: not promop's logfmt: {line!r}"


@pytest.mark.parametrize("command", ["run", "autoscaler", "recommender", "adapter"])
def test_every_long_running_command_logs_json_on_request(folder, command):
    args = [*dict(_long_running(folder))[command], "--log-format", "json"]
    lines = [line for line in _log_lines(args, 2) if not line.startswith("promop adapter: serving ")]
    assert lines
    for line in lines:
        record = json.loads(line)
        assert list(record)[:4] == JSON_KEYS, line
        assert record["logger"].startswith("promop"), line
