"""`promop sandbox`: prints a kubeconfig path and a hint, serves, exits 0 on SIGTERM/Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from kubernetes import client, config


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_promop_sandbox_serves_until_signalled(tmp_path, stop_signal):
    path = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "promop", "sandbox", "--kubeconfig",
                             str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        first = proc.stdout.readline()
        hint = proc.stdout.readline()
        assert str(path) in first
        assert hint.strip() == f"try: kubectl --kubeconfig {path} get ns"
        api = config.new_client_from_config(config_file=str(path))
        names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
        assert "default" in names and "kube-system" in names
    finally:
        proc.send_signal(stop_signal)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err


def test_default_kubeconfig_goes_to_a_temp_dir(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "promop", "sandbox", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        path = first.rsplit("kubeconfig: ", 1)[1].strip()
        api = config.new_client_from_config(config_file=path)
        assert client.VersionApi(api).get_code().major == "1"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert proc.returncode == 0


def test_busy_port_is_a_clear_error(sandbox):
    proc = subprocess.run([sys.executable, "-m", "promop", "sandbox", "--port",
                           str(sandbox.port)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{sandbox.port}" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--port", "99999"], "--port 99999 is out of range; give 0-65535"),
    (["--port", "-1"], "--port -1 is out of range"),
    (["--port", "http"], '--port "http" is not a number'),
    (["--bookmark-interval", "0"], '--bookmark-interval "0" must be a positive number'),
    (["--kubeconfig", "{tmp}"], "is a directory; give a file path"),
    (["--kubeconfig", "{tmp}/file/kubeconfig"], "cannot write the kubeconfig to"),
])
def test_bad_flags_are_one_line_and_exit_2(tmp_path, args, message):
    (tmp_path / "file").write_text("")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.run([sys.executable, "-m", "promop", "sandbox", *args],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stdout == ""


def test_rbac_flag_enforces_tokens(tmp_path):
    path = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "promop", "sandbox", "--authorization", "rbac",
                             "--kubeconfig", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        url = first.split()[3].rstrip(";")
        import requests

        assert requests.get(f"{url}/api/v1/namespaces").status_code == 401
        api = config.new_client_from_config(config_file=str(path))
        assert client.CoreV1Api(api).list_namespace().items  # the kubeconfig's token: admin
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert proc.returncode == 0
