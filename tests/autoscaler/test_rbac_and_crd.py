"""The autoscaler's ClusterRole is exactly what it uses; the shipped CRD is the generated one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from promop.autoscaler.crd import FILE_NAME, MEMHPAS, crd
from promop.autoscaler.rbac import granted
from promop.kube.resources import Resource
from tests.autoscaler.harness import AGENT, DEPLOYMENTS, MI, deployment, memhpa, wait_for

ROOT = Path(__file__).resolve().parents[2]
STATEFULSETS = Resource("apps", "v1", "statefulsets", kind="StatefulSet")
REPLICASETS = Resource("apps", "v1", "replicasets", kind="ReplicaSet")


def test_crd_file_is_the_generated_crd():
    assert yaml.safe_load((ROOT / "crds" / FILE_NAME).read_text()) == crd(), \
        "run: python3 -m promop.autoscaler.crd > crds/" + FILE_NAME


def used(sandbox) -> set[tuple[str, str, str]]:
    return {(r.group or "", r.resource + (f"/{r.subresource}" if r.subresource else ""), r.verb)
            for r in sandbox.requests if r.user_agent.startswith(AGENT) and r.resource}


@pytest.mark.prometheus
@pytest.mark.slow
def test_cluster_role_is_exactly_what_the_autoscaler_uses(env, sandbox):
    env.usage_per_pod = 90 * MI
    for res, kind in ((DEPLOYMENTS, "Deployment"), (STATEFULSETS, "StatefulSet"), (REPLICASETS, "ReplicaSet")):
        body = deployment(kind.lower(), 1)
        body["kind"] = kind
        env.client.create(res, body, "default")
        spec = memhpa(kind.lower(), kind.lower())
        spec["spec"]["scaleTargetRef"]["kind"] = kind
        env.client.create(MEMHPAS, spec, "default")
    app = env.start(env.prometheus.url, leader_elect=True, identity="rbac", lease_duration=30.0,
                    renew_deadline=20.0, retry_period=0.2)
    for res, kind in ((DEPLOYMENTS, "deployment"), (STATEFULSETS, "statefulset"), (REPLICASETS, "replicaset")):
        wait_for(lambda: env.client.get(res, kind, "default")["spec"]["replicas"] == 2, what=f"{kind} scaled")
    wait_for(lambda: env.events("SuccessfulRescale"), what="events")
    env.stop_app(app)  # ends the watches (logged when they end) and releases the lease

    missing = wait_for(lambda: granted() <= used(sandbox) or None, timeout=10,
                       what=f"every granted permission to be used; unused: {granted() - used(sandbox)}") and set()
    assert not missing
    extra = used(sandbox) - granted()
    assert not extra, f"the autoscaler used permissions its ClusterRole does not grant: {sorted(extra)}"
