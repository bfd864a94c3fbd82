"""The real-node tier: promop in real pods on the kit's real Kubernetes (../shared/kube).

It runs only with PROMOP_REAL_TIER=1 (the README's test command skips it, saying so), serially:

    PROMOP_REAL_TIER=1 python3 -m pytest -n 0 -q tests/e2e_real tests/real_api

With PROMOP_REAL_TIER=1 and the kit present, a cluster that cannot start is an ERROR, not a skip:
a broken tier must not turn green by skipping itself. Without the kit it is skipped, saying so
(.ci/run fails by itself when ../shared/kube is there and the tier cannot run).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: realkube, deadlines

import realkube  # noqa: E402

TIER_ENV = "PROMOP_REAL_TIER"
# pytest-timeout for every test here: the first one also pays for the session's cluster (image
# builds ~45 s, control plane ~8 s, the node lock if another node runs). Each test bounds its own
# waits with deadlines well inside this.
TEST_TIMEOUT = 1200
# kube-controller-manager's flags for the tier: the HPA syncs every 5 s, not 15 s.
KCM_ARGS = "--horizontal-pod-autoscaler-sync-period=5s"


def tier_enabled() -> bool:
    return os.environ.get(TIER_ENV) == "1"


def skip_reason() -> str | None:
    """Why the real tiers do not run here, or None when they do."""
    if not tier_enabled():
        return f"real-cluster tier: set {TIER_ENV}=1 to run it (needs root and ../shared/kube)"
    if realkube.kit_dir() is None:
        return "real-cluster tier: the kube kit (../shared/kube or $PROMOP_KUBE_KIT) is not there"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    reason = skip_reason()
    for item in items:
        if here not in Path(str(item.fspath)).resolve().parents:
            continue
        item.add_marker(pytest.mark.real_node)
        item.add_marker(pytest.mark.timeout(TEST_TIMEOUT))
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def real_cluster() -> Iterator[realkube.RealCluster]:
    """Control plane (in-cluster) + the node (under its lock) + the images; stopped at the end.

    Attributes: .cp (ControlPlane), .image (promop, built from this working tree),
    .reloader_image, .prometheus_image, .alertmanager_image, .kubectl(...), .apply(...).
    """
    # A SIGTERM (CI's `timeout`, a killed job) becomes a KeyboardInterrupt, so pytest still runs
    # this fixture's teardown: the node is stopped before its lock goes (else it outlives us).
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with realkube.real_cluster(kcm_args=KCM_ARGS) as cluster:
            yield cluster
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="session")
def real_control_plane() -> Iterator[realkube.ControlPlane]:
    """A control plane alone (no node, no lock): for apiserver-facing tests."""
    with realkube.ControlPlane() as cp:
        yield cp


@pytest.fixture
def namespace(real_cluster: realkube.RealCluster) -> Iterator[str]:
    """A namespace of the test's own on the real cluster, deleted after it."""
    name = realkube.create_namespace(real_cluster.cp, "e2e")
    try:
        yield name
    finally:
        realkube.delete_namespace(real_cluster.cp, name)


@pytest.fixture(scope="session")
def promop_operator(real_cluster: realkube.RealCluster):
    """promop installed as the README says (CRDs, then `promop manifests --image ...`), with the
    PrometheusAgentDaemonSet gate; one replica, Ready and holding its Lease."""
    from .stack import Operator
    operator = Operator(real_cluster)
    operator.install()
    return operator


@pytest.fixture(scope="session")
def workloads(real_cluster: realkube.RealCluster, promop_operator) -> Iterator:
    """Prometheus (fast reload and default), Alertmanager, agents in both modes, a rule and
    monitors, all created at once in a namespace of their own (deleted at the end). Tests call
    `.wait_ready()` for what they need."""
    from .stack import Workloads
    name = realkube.create_namespace(real_cluster.cp, "wl")
    stack = Workloads(real_cluster, name)
    try:
        stack.create()
        yield stack
    finally:
        realkube.delete_namespace(real_cluster.cp, name)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The figures the tier measured (pod Ready times, fast reload), in the run's summary."""
    from .stack import FIGURES
    if FIGURES:
        terminalreporter.section("real-node tier figures")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"real-tier figure: {name}: {value}")
