"""A real control plane (the kit's start.sh, no node) for the KEDA end-to-end tests, and the local
processes they run against it. Only with PROMOP_REAL_TIER=1 (the real tier)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def kit_dir() -> Path | None:
    env = os.environ.get("PROMOP_KUBE_KIT")
    for cand in ([Path(env)] if env else []) + [ROOT.parent / "shared" / "kube", Path("/work/shared/kube")]:
        if (cand / "start.sh").exists():
            return cand
    return None


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


class ControlPlane:
    def __init__(self, apiserver_args: str = "", kcm_args: str = "") -> None:
        self.kit = kit_dir()
        self.run_dir = tempfile.mkdtemp(prefix="promop-keda-e2e.")
        self.env = {**os.environ, "KUBE_RUN_DIR": self.run_dir, "APISERVER_EXTRA_ARGS": apiserver_args,
                    "KCM_EXTRA_ARGS": kcm_args}
        self.kubeconfig = ""
        home = os.environ.get("KUBE_KIT_HOME") or str(Path.home() / ".cache" / "promop-kube")
        self.kubectl_bin = str(Path(home) / "bin" / "kubectl")

    def start(self) -> "ControlPlane":
        assert self.kit is not None
        subprocess.run(["bash", str(self.kit / "install.sh")], env=self.env, check=True, capture_output=True,
                       timeout=600)
        out = subprocess.run(["bash", str(self.kit / "start.sh")], env=self.env, check=True, capture_output=True,
                             text=True, timeout=300)
        self.kubeconfig = out.stdout.strip().splitlines()[-1]
        return self

    def stop(self) -> None:
        if self.kit is not None:
            subprocess.run(["bash", str(self.kit / "stop.sh")], env=self.env, capture_output=True, timeout=120)
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                kubeconfig: str | None = None) -> subprocess.CompletedProcess:
        out = subprocess.run([self.kubectl_bin, "--kubeconfig", kubeconfig or self.kubeconfig, *args], input=input,
                             capture_output=True, text=True, timeout=120)
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
        return out

    def token_kubeconfig(self, namespace: str, service_account: str, path: Path) -> str:
        """A kubeconfig with the ServiceAccount's token (`kubectl create token`) and the admin's server and CA."""
        import yaml

        token = self.kubectl("create", "token", service_account, "-n", namespace, "--duration=1h").stdout.strip()
        cfg = yaml.safe_load(Path(self.kubeconfig).read_text())
        cfg["users"] = [{"name": "sa", "user": {"token": token}}]
        for ctx in cfg["contexts"]:
            ctx["context"]["user"] = "sa"
        path.write_text(yaml.safe_dump(cfg))
        return str(path)


def promop(*args: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "promop", *args], stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env=env, cwd=str(ROOT))
