"""The operator in a real pod: installed from the README, Ready, leading, restarted, failed over.

The operator is installed as docs/operator.md says (`kubectl apply -f crds/`, wait Established,
`promop manifests --image ... | kubectl apply -f -`), from an image built from this working tree.
"""

from __future__ import annotations

import re
import time

import realkube
from realkube import http_status, http_text, wait_for

from deadlines import scaled

from .stack import (OPERATOR_NS, Operator, Workloads, holder_pod, lease_holder,
                    operator_pods, record, wait_operator_leading, wait_stable)


def reconciles(pod_ip: str) -> dict[str, float]:
    """prometheus_operator_reconcile_operations_total by controller, from the pod's /metrics."""
    text = http_text(f"http://{pod_ip}:8080/metrics")
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^prometheus_operator_reconcile_operations_total\{controller="([^"]+)"\} (\S+)$', text, re.M)}


def first_syncs_done(pod_ip: str) -> bool:
    """The new operator has reconciled the 3 Prometheus (main, fast, slow) and the Alertmanager.

    The PrometheusAgent controller exports no reconcile metrics (upstream's does); its first syncs
    run beside these, and the quiet period of wait_stable covers them.
    """
    counts = reconciles(pod_ip)
    return counts.get("prometheus", 0) >= 3 and counts.get("alertmanager", 0) >= 1


def test_operator_pod_runs_ready_and_holds_its_lease(real_cluster, promop_operator: Operator):
    pod = wait_operator_leading(real_cluster)
    name = pod["metadata"]["name"]
    container = pod["spec"]["containers"][0]
    assert container["image"] == real_cluster.image, "the bundle must run the image given to --image"
    assert f"--config-reloader-image={real_cluster.reloader_image}" in container["args"]
    ip = pod["status"]["podIP"]
    assert http_status(f"http://{ip}:8080/healthz") == 200
    assert http_status(f"http://{ip}:8080/readyz") == 200
    # The Lease is held by this pod and renewed (client-go's retry period, 2 s).
    lease = real_cluster.get_json("lease", "promop", "-n", OPERATOR_NS)
    assert lease["spec"]["holderIdentity"].startswith(f"{name}_")
    first = lease["spec"]["renewTime"]
    wait_for(lambda: real_cluster.get_json("lease", "promop", "-n", OPERATOR_NS)["spec"]["renewTime"]
             != first, scaled(15), "the Lease renewed")
    assert promop_operator.ready_seconds > 0
    for what, ref in (("promop image", real_cluster.image), ("reloader image", real_cluster.reloader_image)):
        size = realkube.image_size_bytes(ref)
        if size:
            record(f"{what} {ref} uncompressed MB", round(size / 1e6))


def test_restarted_operator_writes_nothing_but_its_lease(real_cluster, promop_operator: Operator,
                                                         workloads: Workloads):
    workloads.wait_ready()
    namespaces = (workloads.ns, OPERATOR_NS)
    old = wait_operator_leading(real_cluster)
    # A long quiet period: a status.bindings write refused for a stale cache (409, two agents
    # binding one PodMonitor) is retried with the queue's exponential backoff, and one still pending
    # when the operator is deleted is the new operator's to finish (seen once in CI with 8 s).
    before = wait_stable(workloads, namespaces, quiet=30, timeout=scaled(150))
    assert any(k.startswith("StatefulSet ") for k in before) and any(
        k.startswith("Secret ") for k in before), before
    # Both agents' bindings are on the PodMonitor they share: one lost to a 409 (the other agent's
    # binding written first) would be written only by the restarted operator (CI saw exactly that).
    pm = real_cluster.get_json("podmonitor", "agents-scrape", "-n", workloads.ns)
    bound = sorted(b["name"] for b in (pm.get("status") or {}).get("bindings") or ()
                   if b.get("resource") == "prometheusagents")
    assert bound == ["agent-ds", "agent-sts"], f"bindings on PodMonitor agents-scrape before the restart: {bound}"
    real_cluster.kubectl("delete", "pod", "-n", OPERATOR_NS, old["metadata"]["name"], "--wait=false")
    new = wait_for(lambda: (p := wait_operator_leading(real_cluster, timeout=scaled(90)))
                   and p["metadata"]["name"] != old["metadata"]["name"] and p,
                   scaled(120), "a new operator pod leading")
    ip = new["status"]["podIP"]
    # The new operator has reconciled the workloads...
    wait_for(lambda: first_syncs_done(ip), scaled(60), "the new operator's first syncs")
    # ... and wrote nothing: every object it manages keeps its resourceVersion.
    after = wait_stable(workloads, namespaces)
    changed = {k: (before.get(k), v) for k, v in after.items() if before.get(k) != v}
    gone = sorted(set(before) - set(after))
    assert not changed and not gone, f"a restarted operator wrote: {changed}, deleted: {gone}"


def test_two_replicas_one_leader_and_the_other_takes_over(real_cluster, promop_operator: Operator,
                                                          workloads: Workloads):
    workloads.wait_ready()
    real_cluster.kubectl("scale", "deployment", "promop", "-n", OPERATOR_NS, "--replicas=2")
    try:
        leader = wait_operator_leading(real_cluster, replicas=2, timeout=scaled(90))
        pods = [p["metadata"]["name"] for p in operator_pods(real_cluster)]
        standby = next(p for p in pods if p != leader["metadata"]["name"])
        # One leader: the standby is Ready (caches synced) but does not hold the Lease.
        assert holder_pod(real_cluster) == leader["metadata"]["name"] != standby
        started = time.monotonic()
        deleted = leader["metadata"]["name"]
        real_cluster.kubectl("delete", "pod", "-n", OPERATOR_NS, deleted, "--wait=false")
        # The leader releases the Lease on SIGTERM; the Deployment's replacement pod then races the
        # standby for it (client-go's semantics: whoever tries first wins). Either is a failover; a
        # Lease still held by the deleted pod, or by nobody, is not.
        new_holder = wait_for(lambda: lease_moved_on(real_cluster, deleted), scaled(60),
                              f"a live pod other than the deleted {deleted} taking the Lease", interval=0.2)
        record("operator failover (leader pod deleted -> another pod holds the Lease) s",
               round(time.monotonic() - started, 1))
        record("operator failover: the Lease went to", "the standby" if new_holder == standby
               else "the Deployment's replacement pod")
        # The new leader reconciles: a ServiceMonitor change still reaches Prometheus.
        marker = f"failover-{time.time_ns()}"
        took = workloads.timed_marker_change("fast", marker, scaled(30))[1]
        record("ServiceMonitor change after failover -> Prometheus config s", round(took, 2))
    finally:
        real_cluster.kubectl("scale", "deployment", "promop", "-n", OPERATOR_NS, "--replicas=1")
        wait_operator_leading(real_cluster, replicas=1, timeout=scaled(120))
    assert lease_holder(real_cluster)


def lease_moved_on(cluster, deleted: str) -> str:
    """The Lease's holder once it is a live operator pod other than `deleted`; raises (a "not yet"
    for wait_for, kept for its timeout message) with who holds it meanwhile."""
    holder = holder_pod(cluster)
    live = sorted(p["metadata"]["name"] for p in operator_pods(cluster))
    if holder and holder != deleted and holder in live:
        return holder
    raise AssertionError(f"the Lease is held by {holder or 'nobody'!r}; live operator pods: {live}")
