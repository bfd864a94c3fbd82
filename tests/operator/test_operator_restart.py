"""A restarted operator, or a new leader, over a cluster that is already reconciled writes nothing.

Here the operator remembers nothing of the writes that made the cluster what it is, so only the
semantic diff (promop.operator.diff, the status and bindings comparisons) can tell that nothing
changed. The `broken_diff` variant makes the diff always say "different" and checks that the very
same scenario then writes: the test has teeth.
"""

from __future__ import annotations

import base64

import pytest
from operator_testlib import FAST_LEASE, NS, eventually, jobs, operator_writes, prometheus, rule, service_monitor

from promop.kube.resources import (CONFIGMAPS, NAMESPACES, PROMETHEUSES, PROMETHEUSRULES, SECRETS, SERVICEMONITORS,
                                   STATEFULSETS)

PEM_CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
FIRST, SECOND = "promop-first", "promop-second"


def _reconcile(cluster, kube, start_operator, **opts):
    """A cluster reconciled by a first operator: 2 shards, rules, TLS assets, status, bindings."""
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    kube.create(SECRETS, {"metadata": {"name": "ca", "namespace": NS},
                          "data": {"ca.crt": base64.b64encode(PEM_CERT.encode()).decode()}})
    first = start_operator(agent=FIRST, **opts)
    if opts.get("leader_elect"):
        eventually(first.operator.leading.is_set, 20, "the first operator leads")
    kube.create(PROMETHEUSES, prometheus(shards=2))
    for i in range(3):
        kube.create(SERVICEMONITORS, service_monitor(f"sm{i}"))
    kube.create(SERVICEMONITORS, service_monitor("tls", scheme="https",
                                                 tlsConfig={"ca": {"secret": {"name": "ca", "key": "ca.crt"}}}))
    kube.create(SERVICEMONITORS, service_monitor("bad", interval="10s", scrapeTimeout="30s"))
    kube.create(PROMETHEUSRULES, rule("r", "up", "sum(up)"))
    eventually(lambda: len(jobs(kube) or []) == 4, 20, "4 jobs")

    def in_place() -> bool:
        secrets = {s["metadata"]["name"]: s for s in kube.list(SECRETS, NS)["items"]}
        assert "prometheus-p-tls-assets-0" in secrets
        assert any("ca.crt" in k for k in secrets["prometheus-p-tls-assets-0"].get("data") or {})
        assert [s["metadata"]["name"] for s in kube.list(STATEFULSETS, NS)["items"]] == [
            "prometheus-p", "prometheus-p-shard-1"]
        assert any(c["metadata"]["name"].startswith("prometheus-p-rulefiles") for c in kube.list(CONFIGMAPS, NS)["items"])
        status = kube.get(PROMETHEUSES, "p", NS).get("status") or {}
        assert status.get("shards") == 2 and len(status.get("shardStatuses") or []) == 2
        assert {c["type"]: c["status"] for c in status["conditions"]} == {"Available": "True", "Reconciled": "True"}
        for sm in kube.list(SERVICEMONITORS, NS)["items"]:
            assert (sm.get("status") or {}).get("bindings"), sm["metadata"]["name"]
        return True
    eventually(in_place, 30, "shards, rules, TLS assets, status and bindings")
    first.settle(cluster)
    return first


def _break_the_diff(monkeypatch) -> None:
    import promop.operator.apply
    import promop.operator.reporter

    monkeypatch.setattr(promop.operator.apply, "semantically_equal", lambda desired, current: False)
    monkeypatch.setattr(promop.operator.reporter, "status_changed", lambda current, desired: True)


def _check(cluster, agent: str, broken_diff: bool) -> None:
    writes = [w for w in operator_writes(cluster, agent) if w.resource not in ("events", "leases")]
    if broken_diff:
        written = {w.resource + (f"/{w.subresource}" if w.subresource else "") for w in writes}
        assert {"secrets", "configmaps", "services", "statefulsets", "prometheuses/status"} <= written, written
    else:
        assert writes == []
        # it compared: with nothing remembered, the config Secret was read from the API
        assert cluster.count_requests(verb="get", resource="secrets") >= 1


@pytest.mark.parametrize("broken_diff", [False, True], ids=["diff", "broken-diff"])
def test_restarted_operator_writes_nothing_but_events(cluster, kube, start_operator, monkeypatch, broken_diff):
    first = _reconcile(cluster, kube, start_operator)
    assert first.shutdown() == 0
    if broken_diff:
        _break_the_diff(monkeypatch)
    cluster.reset_requests()
    second = start_operator(agent=SECOND)
    eventually(lambda: second.controller.syncer.last_report.get(f"{NS}/p"), 20, "the restarted operator's sync")
    second.settle(cluster)
    second.controller.enqueue_all()  # and a resync on top
    second.settle(cluster)
    _check(cluster, SECOND, broken_diff)


@pytest.mark.parametrize("broken_diff", [False, True], ids=["diff", "broken-diff"])
def test_new_leader_writes_nothing_but_events(cluster, kube, start_operator, monkeypatch, broken_diff):
    lease = {"leader_elect": True, "lease_name": "promop", "lease_namespace": "default",
             "leader_kwargs": FAST_LEASE}
    first = _reconcile(cluster, kube, start_operator, identity=FIRST, **lease)
    second = start_operator(agent=SECOND, identity=SECOND, **lease)
    assert not second.operator.leading.is_set()
    if broken_diff:
        _break_the_diff(monkeypatch)
    cluster.reset_requests()
    assert first.shutdown() == 0  # releases the lease
    eventually(second.operator.leading.is_set, 20, "the standby takes over")
    eventually(lambda: second.controller.syncer.last_report.get(f"{NS}/p"), 20, "the new leader's sync")
    second.settle(cluster)
    _check(cluster, SECOND, broken_diff)
