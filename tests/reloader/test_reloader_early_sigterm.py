"""A SIGTERM that arrives while the reloader is still starting stops it (docs/reloader.md).

In a pod the reloader is PID 1, for which an unhandled SIGTERM is discarded: before `entry`
caught it, a pod deleted during the reloader's start-up stayed Terminating for its whole grace
period (a StatefulSet rollout stalled on the real node). Here the process is not PID 1, so an
unhandled SIGTERM would kill it instead (exit -15): either way only a caught and honoured signal
exits 0 with the shutdown logged.
"""
from __future__ import annotations

import os
import subprocess
import sys

from deadlines import scaled

# The signal is sent from inside entry.load_cli, i.e. while the heavy imports would be running.
PROBE = """
import os, signal, sys
from reloader import entry
load = entry.load_cli
def load_while_signalled():
    os.kill(os.getpid(), signal.SIGTERM)
    return load()
entry.load_cli = load_while_signalled
sys.exit(entry.main(sys.argv[1:]))
"""


def test_sigterm_during_start_up_stops_the_sidecar(tmp_path):
    (tmp_path / "rules").mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", PROBE, f"--watched-dir={tmp_path / 'rules'}",
                           "--reload-url=http://127.0.0.1:9/-/reload", "--watch-interval=3m"],
                          capture_output=True, text=True, env=env, timeout=scaled(30))
    assert proc.returncode == 0, proc.stderr
    assert "received signal; shutting down" in proc.stderr and "signal=SIGTERM" in proc.stderr


def test_the_entry_point_imports_nothing_heavy_before_its_handler():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-S", "-c", "import sys, reloader.entry; "
                          "print(sorted(m for m in sys.modules if m.startswith('reloader')))"],
                         capture_output=True, text=True, env=env, timeout=scaled(30), check=True)
    assert out.stdout.strip() == "['reloader', 'reloader.entry']"
