"""The Alertmanager controller converges through dropped watches, 410 Expired and bursts of 500/429 errors."""

from __future__ import annotations

import yaml

from promop.kube.errors import ApiError
from promop.kube.resources import NAMESPACES
from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS

from .operator_helpers import alertmanager, amc, eventually, generated_config, modify

NS = "monitoring"


def receivers(kube) -> list[str]:
    try:
        text = generated_config(kube, NS, "main")
    except ApiError as exc:  # the injected failures may hit the test's own reads too
        raise AssertionError(str(exc)) from None
    return sorted(r["name"] for r in yaml.safe_load(text)["receivers"])


def test_converges_through_faults_with_nothing_lost(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    start_operator()
    kube.create(ALERTMANAGERS, alertmanager())
    kube.create(ALERTMANAGERCONFIGS, amc("a"))
    eventually(lambda: receivers(kube) == ["monitoring/a/r", "null"], 20, "the first config")

    faults = cluster.faults
    faults.fail_next(6, 500, verb="update", resource="secrets")  # writes of the generated Secret fail
    faults.fail_next(4, 429, verb="get", resource="secrets", retry_after=1)
    kube.create(ALERTMANAGERCONFIGS, amc("b"))
    faults.close_watches()
    faults.compact()  # the informers' next watch gets 410 Expired and relists
    kube.create(ALERTMANAGERCONFIGS, amc("c"))
    modify(kube, ALERTMANAGERCONFIGS, "a", NS,
           lambda o: o["spec"]["receivers"][0]["webhookConfigs"][0].update(url="http://127.0.0.1:3/after-faults"))
    faults.stall_watches(True)
    kube.delete(ALERTMANAGERCONFIGS, "c", NS)  # delivered only when the watches resume
    faults.stall_watches(False)
    eventually(lambda: faults.pending() == 0, 20, "the injected failures to be served")
    eventually(lambda: receivers(kube) == ["monitoring/a/r", "monitoring/b/r", "null"], 30, "every change applied")
    assert "http://127.0.0.1:3/after-faults" in generated_config(kube, NS, "main")
