"""The shared SIGTERM handling, in a real process: a graceful stop, and the hard stop when it hangs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from deadlines import scaled

ROOT = Path(__file__).resolve().parents[2]

# A process whose main thread waits for `stop`, then either returns (graceful) or hangs (HANG=1).
SCRIPT = textwrap.dedent("""
    import logging, os, sys, threading, time
    from promop.host.signals import install_signal_handlers
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    stop = threading.Event()
    install_signal_handlers(stop, hard_stop=float(os.environ["HARD_STOP"]))
    print("ready", flush=True)
    stop.wait()
    if os.environ.get("HANG") == "1":
        while True:
            time.sleep(1)
    print("graceful", flush=True)
""")


def run_and_term(hang: bool, hard_stop: float) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HARD_STOP": str(hard_stop), "HANG": "1" if hang else "0"}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=scaled(30))
    finally:
        proc.kill()
    return proc.returncode, out


def test_a_graceful_stop_exits_0():
    # a hard stop far beyond what a graceful exit takes on a loaded machine: only the graceful path can end it
    code, out = run_and_term(hang=False, hard_stop=scaled(20))
    assert code == 0 and "graceful" in out and "did not finish in time" not in out


def test_a_hung_shutdown_is_cut_short_with_exit_1():
    """Exit 0 here would tell a supervisor the shutdown was clean when it hung."""
    code, out = run_and_term(hang=True, hard_stop=0.3)
    assert code == 1, out
    assert "shutdown did not finish in time" in out
