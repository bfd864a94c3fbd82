"""What the KEDA end-to-end tests add to tests/realkube.py (whose ControlPlane they use): an address
the apiserver can route a Service to, a free port, and promop run as a local process. Only with
PROMOP_REAL_TIER=1 (the real tier)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from realkube import ControlPlane, kit_dir, wait_for

__all__ = ["ControlPlane", "aggregated_plane", "free_port", "kit_dir", "promop", "register_external_metrics",
           "routable_address"]

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


@contextlib.contextmanager
def aggregated_plane(hpa_sync: str = "2s") -> Iterator[ControlPlane]:
    """A control plane whose aggregator routes to Endpoints (so to a local adapter process on this
    machine's routable address, `.address`) and whose HPA syncs every `hpa_sync`; stopped after."""
    if kit_dir() is None:
        pytest.fail("PROMOP_REAL_TIER=1 but the kube kit (../shared/kube) is missing")
    address = routable_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address the apiserver could dial")
    cp = ControlPlane(apiserver_args="--enable-aggregator-routing=true",
                      kcm_args=f"--horizontal-pod-autoscaler-sync-period={hpa_sync}")
    try:
        cp.start()
        cp.address = address  # type: ignore[attr-defined]
        yield cp
    finally:
        cp.stop()


def register_external_metrics(plane: ControlPlane, namespace: str, port: int, timeout: float) -> None:
    """The external metrics APIService, backed by a Service and Endpoints in `namespace` that point
    at the adapter process on `plane.address:port`; returns once the aggregator says Available."""
    docs = [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "promop-adapter", "namespace": namespace},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "promop-adapter", "namespace": namespace},
         "subsets": [{"addresses": [{"ip": plane.address}], "ports": [{"name": "https", "port": port}]}]},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
         "metadata": {"name": "v1beta1.external.metrics.k8s.io"},
         "spec": {"group": "external.metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": True,
                  "groupPriorityMinimum": 100, "versionPriority": 100,
                  "service": {"name": "promop-adapter", "namespace": namespace, "port": 443}}},
    ]
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))

    def available() -> bool:
        out = plane.kubectl("get", "apiservice", "v1beta1.external.metrics.k8s.io", "-o", "json", check=False)
        conds = (json.loads(out.stdout).get("status") or {}).get("conditions") or [] if out.returncode == 0 else []
        return any(c["type"] == "Available" and c["status"] == "True" for c in conds)

    wait_for(available, timeout, "the external metrics APIService Available")


def with_logs(exc: BaseException, log_dir: Path) -> AssertionError:
    """`exc` with the tail of every process log in `log_dir`: what a failed real-plane run needs."""
    logs = "\n".join(f"--- {p.name}:\n{p.read_text()[-4000:]}" for p in sorted(log_dir.glob("*.log")))
    return AssertionError(f"{exc}\n{logs}")


def stop_all(procs: list[subprocess.Popen]) -> None:
    """SIGTERM every process, then wait for each (killed after 15 s)."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
