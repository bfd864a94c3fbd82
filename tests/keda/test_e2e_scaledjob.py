"""ScaledJob on the REAL control plane, under the bundle's RBAC (issue 31): `promop autoscaler` as a
process, kube-controller-manager's Job controller making the Jobs' pods (no node: they stay Pending)
and its garbage collector carrying out a Foreground deletion.

- the pending count reads the real pods (a watch the bundle's ClusterRole must grant): with `accurate`,
  two pending Jobs stop a queue of 2 from creating more;
- a spec change deletes the previous generation's Jobs with `rollout.propagationPolicy: foreground`
  (the apiserver keeps each Job until the GC has deleted its pods) and new ones are created;
- the TriggerAuthentication it references lists it in `status.scaledjobs`.

Runs only with PROMOP_REAL_TIER=1.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import realkube
from deadlines import scaled
from tests.keda.realplane import ROOT, ControlPlane, kit_dir, promop
from tests.keda.runtime_harness import StandInPrometheus
from tests.keda.test_e2e_scale import NS, bundle_rbac

pytestmark = [pytest.mark.real_apiserver,
              pytest.mark.skipif(os.environ.get("PROMOP_REAL_TIER") != "1",
                                 reason="the real-cluster tier runs only with PROMOP_REAL_TIER=1")]

def wait_for(check, timeout: float, what: str):
    return realkube.wait_for(check, scaled(timeout), what)


@pytest.fixture(scope="module")
def plane():
    if kit_dir() is None:
        pytest.fail("PROMOP_REAL_TIER=1 but the kube kit (../shared/kube) is missing")
    with ControlPlane() as cp:
        yield cp


def _scaled_job(prom: StandInPrometheus, image: str) -> dict:
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "metadata": {"name": "batch", "namespace": NS},
            "spec": {"pollingInterval": 1, "maxReplicaCount": 10,
                     "scalingStrategy": {"strategy": "accurate"},
                     "rollout": {"strategy": "immediate", "propagationPolicy": "foreground"},
                     "jobTargetRef": {"template": {"spec": {"restartPolicy": "Never",
                                                            "containers": [{"name": "w", "image": image}]}}},
                     "triggers": [{"type": "prometheus", "authenticationRef": {"name": "creds"}, "metadata": {
                         "serverAddress": prom.url, "query": "batch_queue", "threshold": "1"}}]}}


def test_scaledjob_pending_rollout_and_auth_status(plane, tmp_path: Path):
    prom = StandInPrometheus()
    proc = None
    try:
        for crd in sorted((ROOT / "crds").glob("keda.sh_*.yaml")):
            plane.kubectl("apply", "--server-side", "-f", str(crd))
        plane.kubectl("create", "namespace", NS)
        plane.kubectl("apply", "-f", "-", input=bundle_rbac("autoscaler"))
        sa_config = plane.token_kubeconfig(NS, "promop-autoscaler", tmp_path / "sa.kubeconfig")
        log = tmp_path / "autoscaler.log"
        proc = promop("autoscaler", "--kubeconfig", sa_config, "--web.listen-address", "127.0.0.1:0",
                      "--keda-metrics-address", "127.0.0.1:0", "--prometheus-url", prom.url, log=log)
        plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(
            {"apiVersion": "keda.sh/v1alpha1", "kind": "TriggerAuthentication",
             "metadata": {"name": "creds", "namespace": NS}, "spec": {}}))
        prom.set("batch_queue", "2")
        plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(_scaled_job(prom, "busybox:one")))

        def jobs() -> list[dict]:
            return plane.get_json("jobs", "-n", NS, "-l", "scaledjob.keda.sh/name=batch")["items"]

        def pods() -> list[dict]:
            return plane.get_json("pods", "-n", NS, "-l", "scaledjob.keda.sh/name=batch")["items"]

        first = wait_for(lambda: len(j := jobs()) == 2 and j, 60, f"two Jobs (log: {log.read_text()[-2000:]})")
        wait_for(lambda: len(pods()) == 2, 60, "kcm's Job controller made their pods")
        assert all(p["status"].get("phase") == "Pending" for p in pods())
        polls = prom.count("batch_queue")
        wait_for(lambda: prom.count("batch_queue") >= polls + 4, 30, "four more polls")
        assert len(jobs()) == 2, "accurate: 2 - 2 pending = 0 more"

        def auth_status() -> dict:
            return plane.get_json("triggerauthentication", "creds", "-n", NS).get("status") or {}

        wait_for(lambda: auth_status().get("scaledjobs") == "batch", 30, "status.scaledjobs")

        old = {j["metadata"]["name"] for j in first}
        plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(_scaled_job(prom, "busybox:two")))

        def rolled() -> bool:
            js = jobs()
            names = {j["metadata"]["name"] for j in js}
            return (not names & old and len(js) == 2
                    and all(j["metadata"]["annotations"]["scaledjob.keda.sh/generation"] == "2" for j in js))

        wait_for(rolled, 90, "the previous generation's Jobs gone and two new ones")
        assert {p["spec"]["containers"][0]["image"] for p in pods() if p["metadata"].get("deletionTimestamp")
                is None} <= {"busybox:two"}
        events = plane.get_json("events", "-n", NS, "--field-selector",
                                "involvedObject.kind=ScaledJob")["items"]
        reasons = {e["reason"] for e in events}
        assert {"KEDAJobsCreated", "ScaledJobRolloutCleanupCompleted", "KEDAScalersStarted"} <= reasons
        assert "Forbidden" not in log.read_text() and "forbidden" not in log.read_text(), log.read_text()[-3000:]
        sj = plane.get_json("scaledjob", "batch", "-n", NS)
        assert {c["type"]: c["status"] for c in sj["status"]["conditions"]}["Ready"] == "True"
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except Exception:  # noqa: BLE001
                proc.kill()
        prom.close()
