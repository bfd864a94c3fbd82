"""Convergence under faults (no lost update, no hot loop) and leader election between two operators."""

from __future__ import annotations

from operator_testlib import (FAST_LEASE, NS, OPERATOR_AGENT, eventually, jobs, operator_writes, prometheus,
                              scaled, service_monitor)

from promop.kube.resources import LEASES, NAMESPACES, PROMETHEUSES, SERVICEMONITORS

def expected(n: int) -> list[str]:
    return sorted(f"serviceMonitor/{NS}/sm{i}/0" for i in range(n))


def test_faults_converge_without_lost_updates_or_hot_loops(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator()
    kube.create(PROMETHEUSES, prometheus())
    kube.create(SERVICEMONITORS, service_monitor("sm0"))
    eventually(lambda: jobs(kube) == expected(1), 20, "the first job")
    op.settle(cluster)
    cluster.reset_requests()
    n = 1

    def change() -> None:
        nonlocal n
        kube.create(SERVICEMONITORS, service_monitor(f"sm{n}"))
        n += 1

    # dropped watches
    cluster.faults.close_watches()
    change()
    eventually(lambda: jobs(kube) == expected(n), 20, "a change after dropped watches")
    # 410: history compacted, then watches dropped: informers must relist
    change()
    cluster.faults.compact()
    cluster.faults.close_watches()
    change()
    eventually(lambda: jobs(kube) == expected(n), 20, "changes across a 410 relist")
    # 429 bursts (with Retry-After) and 500 bursts on the operator's reads and writes
    cluster.faults.fail_next(4, 429, verb="update", resource="secrets", retry_after=0)
    change()
    eventually(lambda: jobs(kube) == expected(n), 30, "a change through a 429 burst")
    cluster.faults.fail_next(4, 500, verb="update", resource="secrets")
    cluster.faults.fail_next(3, 500, verb="list")
    change()
    eventually(lambda: jobs(kube) == expected(n), 30, "a change through 500 bursts")
    # a sandbox restart while a sync is writing
    cluster.faults.add_latency(0.3, verb="update", resource="secrets")
    change()
    eventually(lambda: op.controller.queue.processing() > 0, 10, "a sync in flight")
    cluster.restart()
    cluster.faults.clear()
    change()
    eventually(lambda: jobs(kube) == expected(n), 40, "convergence after a restart mid-sync")
    op.settle(cluster, 30)

    changes = n - 1
    writes = operator_writes(cluster)
    # per change: the config Secret and the new monitor's binding; plus retries of failed writes
    assert len(writes) <= 3 * changes + 12, writes
    # a resync writes nothing. Requests from now on carry a new agent: a request the restart cut
    # off may still be answered (and logged) by the old server late on a loaded machine.
    resync_agent = f"{OPERATOR_AGENT}-resync"
    op.controller.client.api_client.user_agent = resync_agent
    op.controller.enqueue_all()
    eventually(op.idle, 20)
    assert operator_writes(cluster, resync_agent) == []
    assert any(r.user_agent == resync_agent for r in cluster.requests), "the resync made no request at all"


def writers(cluster, agents: list[str]) -> set[str]:
    """Agents that wrote anything but their Lease."""
    return {a for a in agents for w in operator_writes(cluster, a) if w.resource != "leases"}


def test_leader_election_exactly_one_writes_and_standby_takes_over(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    agents = ["promop-op-a", "promop-op-b"]
    ops = {a: start_operator(agent=a, leader_elect=True, lease_name="promop", lease_namespace="default",
                             identity=a, leader_kwargs=FAST_LEASE) for a in agents}
    leader = eventually(lambda: [a for a, o in ops.items() if o.operator.leading.is_set()], 20, "a leader")[0]
    standby = next(a for a in agents if a != leader)
    assert kube.get(LEASES, "promop", "default")["spec"]["holderIdentity"] == leader
    kube.create(PROMETHEUSES, prometheus())
    kube.create(SERVICEMONITORS, service_monitor("sm0"))
    eventually(lambda: jobs(kube) == expected(1), 20, "the leader's config")
    eventually(ops[leader].idle, 20)
    assert writers(cluster, agents) == {leader}
    assert ops[standby].operator.readiness()[0], "a synced standby is ready"
    assert not ops[standby].operator.leading.is_set()

    assert ops[leader].shutdown() == 0  # SIGTERM path: finish, release the lease, exit 0
    cluster.reset_requests()
    eventually(ops[standby].operator.leading.is_set, 20, "the standby takes over")
    kube.create(SERVICEMONITORS, service_monitor("sm1"))
    eventually(lambda: jobs(kube) == expected(2), 20, "the new leader's config")
    assert writers(cluster, agents) == {standby}


def test_lost_leadership_exits_non_zero(cluster, kube, start_operator):
    r = start_operator(leader_elect=True, lease_name="promop", lease_namespace="default", identity="me",
                       leader_kwargs=FAST_LEASE)
    eventually(r.operator.leading.is_set, 20, "leadership")
    # the apiserver refuses every lease renewal for longer than the renew deadline
    cluster.faults.fail_next(1000, 500, verb="update", resource="leases")
    cluster.faults.fail_next(1000, 500, verb="get", resource="leases")
    r.thread.join(scaled(30))
    assert not r.thread.is_alive()
    assert r.result.get("code") == 1
