"""What the KEDA end-to-end tests add to tests/realkube.py (whose ControlPlane they use): an address
the apiserver can route a Service to, a free port, and promop run as a local process. Only with
PROMOP_REAL_TIER=1 (the real tier)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from realkube import ControlPlane, kit_dir

__all__ = ["ControlPlane", "kit_dir", "free_port", "promop", "routable_address"]

ROOT = Path(__file__).resolve().parents[2]


def routable_address() -> str | None:
    """An IPv4 address of this machine the apiserver may use as an Endpoints address: not loopback,
    not link-local (the apiserver refuses both for a Service's endpoints), not the kit's node bridge."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, timeout=10).stdout
    except OSError:
        return None
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[1] in ("lo", "kn0"):
            continue
        ip = parts[3].split("/")[0]
        if not ip.startswith(("127.", "169.254.")):
            return ip
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def promop(*args: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "promop", *args], stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env=env, cwd=str(ROOT))
