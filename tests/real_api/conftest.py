"""Apiserver-facing tests run twice: against the sandbox and against the kit's real control plane.

Every test here takes the `api` fixture, parametrized over [sandbox, real]. The sandbox half runs
in the main suite (it is fast); the real half is marked `real_apiserver` and runs only with
PROMOP_REAL_TIER=1 (tests/e2e_real/conftest.py says why and how), on one control plane per session
(start.sh alone: no node, no node lock), each test in namespaces of its own. Where the two halves
disagree, the sandbox is what gets fixed (docs/sandbox.md lists what was found).
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: realkube, deadlines

import realkube  # noqa: E402

from promop.kube.client import KubeClient  # noqa: E402
from promop.kube.errors import NotFound  # noqa: E402
from promop.kube.resources import NAMESPACES  # noqa: E402
from promop.operator.install import install_crds  # noqa: E402
from promop.sandbox import Sandbox  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TIER_ENV = "PROMOP_REAL_TIER"
HERE = Path(__file__).resolve().parent


def _skip_real() -> str | None:
    if os.environ.get(TIER_ENV) != "1":
        return f"real control plane: set {TIER_ENV}=1 to run it (needs root and ../shared/kube)"
    if realkube.kit_dir() is None:
        return "real control plane: the kube kit (../shared/kube or $PROMOP_KUBE_KIT) is not there"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _skip_real()
    for item in items:
        if HERE not in Path(str(item.fspath)).resolve().parents:
            continue
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("api") != "real":
            continue
        item.add_marker(pytest.mark.real_apiserver)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def real_api_control_plane() -> Iterator[realkube.ControlPlane]:
    """One real control plane (etcd, kube-apiserver, kube-controller-manager) for the session, with
    promop's CRDs. With PROMOP_REAL_TIER=1 and the kit there, a failure to start is an error."""
    cp = _start_control_plane()
    try:
        admin = KubeClient.from_kubeconfig(cp.kubeconfig)
        install_crds(admin, ROOT / "crds")
        admin.close()
        yield cp
    finally:
        cp.stop()


def _start_control_plane(attempts: int = 3) -> realkube.ControlPlane:
    """start.sh picks free ports at random; on a busy machine another process may take one first
    (`bind: address already in use`): that, and only that, is tried again."""
    for attempt in range(attempts):
        cp = realkube.ControlPlane()
        try:
            return cp.start()
        except realkube.KitError as exc:
            cp.stop()
            if "address already in use" not in str(exc) or attempt == attempts - 1:
                raise
            realkube.log(f"control plane: a port was taken meanwhile; starting again ({exc})")
    raise AssertionError("unreachable")


class Api:
    """One backend: `name` ("sandbox"|"real"), `kubeconfig`, `ns` (a fresh namespace), `client()`,
    `namespace()` for more, `kubectl(...)`, and `sandbox` (None on the real control plane)."""

    def __init__(self, name: str, kubeconfig: str, sandbox: Sandbox | None = None,
                 cp: realkube.ControlPlane | None = None) -> None:
        self.name = name
        self.kubeconfig = kubeconfig
        self.sandbox = sandbox
        self.cp = cp
        self._clients: list[KubeClient] = []
        self._namespaces: list[str] = []
        self._crds = False
        self.admin = self.client()
        self.ns = self.namespace()

    def need_crds(self) -> None:
        """promop's CRDs (the real control plane got them once for the session)."""
        if self.sandbox is not None and not self._crds:
            install_crds(self.admin, ROOT / "crds")
            self._crds = True

    @property
    def real(self) -> bool:
        return self.cp is not None

    def client(self, **kw: Any) -> KubeClient:
        c = KubeClient.from_kubeconfig(self.kubeconfig, **kw)
        self._clients.append(c)
        return c

    def namespace(self, prefix: str = "api") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.admin.create(NAMESPACES, {"metadata": {"name": name}})
        self._namespaces.append(name)
        return name

    def kubectl(self, *args: str, input: str | None = None, check: bool = True):
        import subprocess

        proc = subprocess.run([realkube.kubectl_path() if self.real else "kubectl", "--kubeconfig",
                               self.kubeconfig, *args], input=input, capture_output=True, text=True, timeout=120)
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc

    def close(self) -> None:
        for ns in self._namespaces:
            try:
                self.admin.delete(NAMESPACES, ns)
            except NotFound:
                pass
        for c in self._clients:
            c.close()


@pytest.fixture(params=["sandbox", "real"])
def api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    if request.param == "real":
        cp = request.getfixturevalue("real_api_control_plane")
        backend = Api("real", cp.kubeconfig, cp=cp)
        try:
            yield backend
        finally:
            backend.close()
        return
    # a module may ask for more of the sandbox, e.g. SANDBOX_OPTIONS = {"authorization": "rbac"}
    options = dict(getattr(request.module, "SANDBOX_OPTIONS", {}))
    with Sandbox(port=0, bookmark_interval=0.5, publish_root_ca=True, **options) as sb:
        backend = Api("sandbox", sb.write_kubeconfig(tmp_path / "kubeconfig"), sandbox=sb)
        try:
            yield backend
        finally:
            backend.close()
