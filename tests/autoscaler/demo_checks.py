"""What `promop demo autoscaling --once` must print: one run of the demo (about 40 s on a loaded machine, nearly
all of it waiting on the simulated clock) is checked for the autoscaling story and the metrics APIs together."""

from __future__ import annotations

import re
import subprocess
import sys

from promop.demos.autoscaling import CPU_CORES, load_at

MI = 1024 * 1024
# --speed 90: the load pattern (30 simulated minutes) plays in 20 s; each cool-down window still spans
# several 1 s syncs, so the holds ("Backoff") are still shown
DEMO = [sys.executable, "-m", "promop", "demo", "autoscaling", "--once", "--speed", "90"]


def start_demo(env: dict | None = None) -> subprocess.Popen:
    """The demo running in the background: it mostly waits (2.5 s of CPU in 40 s), so two runs side by side
    take the time of one."""
    return subprocess.Popen(DEMO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish(proc: subprocess.Popen, timeout: float = 240) -> subprocess.CompletedProcess:
    """Wait for a `start_demo` run (killed past `timeout`) and return what it printed."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the demo did not finish within {timeout} s:\n{out}\n{err}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def assert_scales_up_and_back_down(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "SCALE 1 -> " in out and "memory resource utilization (percentage of limit) above target" in out
    assert "All metrics below target" in out
    assert "Backoff" in out  # the cool-down is shown holding a change
    assert "done: peak" in out and "back to 1" in out


def assert_metrics_apis_answer(proc: subprocess.CompletedProcess, with_kubectl: bool) -> None:
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert ("metrics APIs: promop adapter registered as APIServices v1beta1.metrics.k8s.io, "
            "v1beta2.custom.metrics.k8s.io, v1beta1.custom.metrics.k8s.io") in out
    # at the start: one pod holding the whole load (the demo's input, 60Mi), CPU_CORES of CPU
    memory_mi = load_at(0)
    if with_kubectl:
        assert re.search(r"\$ kubectl --kubeconfig \S+ top pod -n default\n\s+NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)",
                         out), out
        rows = re.findall(r"^\s+(shop-\S+)\s+(\d+)m\s+(\d+)Mi\s*$", out, re.M)
    else:
        assert "GET /apis/metrics.k8s.io/v1beta1/namespaces/default/pods (what kubectl top pod reads):" in out
        rows = re.findall(r"^\s+(shop-\S+)\s+cpu (\d+)m\s+memory (\d+)Mi\s*$", out, re.M)
    assert len(rows) == 1, out
    pod, cpu_m, mem = rows[0]
    assert int(mem) == memory_mi
    assert abs(int(cpu_m) - CPU_CORES * 1000) <= 2
    custom = re.findall(r"^\s+(shop-\S+): memory_working_set_bytes = (\d+)$", out, re.M)
    assert custom == [(pod, str(int(memory_mi * MI)))], out
    assert "done: peak" in out and "back to 1" in out   # the autoscaling part still runs its course
