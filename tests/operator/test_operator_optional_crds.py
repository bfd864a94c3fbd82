"""A cluster with promop's older CRDs (no Probe, no ScrapeConfig CRD): the operator still syncs.

An informer on a resource the apiserver does not serve never syncs, so watching it would hold the
whole operator at start; upstream leaves such a kind out with a warning, and so do we.
"""

from __future__ import annotations

import logging

import pytest
from operator_testlib import NS, eventually, jobs, prometheus, service_monitor

from promop.kube.errors import NotFound
from promop.kube.resources import CRDS, NAMESPACES, PROMETHEUSES, SERVICEMONITORS


@pytest.fixture
def ns(kube):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    return NS


def _gone(kube, name: str) -> bool:
    try:
        kube.get(CRDS, name)
    except NotFound:
        return True
    return False


def test_operator_syncs_without_the_probe_and_scrapeconfig_crds(kube, start_operator, ns, caplog):
    for name in ("probes.monitoring.coreos.com", "scrapeconfigs.monitoring.coreos.com"):
        kube.delete(CRDS, name)
        eventually(lambda name=name: _gone(kube, name), 20, f"CRD {name} deleted")
    with caplog.at_level(logging.WARNING, logger="promop.operator.controller"):
        start_operator()  # waits for the caches to sync: it would time out with an unserved informer
    warned = [r.getMessage() for r in caplog.records if "CRD not installed" in r.getMessage()]
    assert len(warned) == 4  # both kinds, once by the Prometheus controller and once by the PrometheusAgent one
    kube.create(SERVICEMONITORS, service_monitor("web"), NS)
    kube.create(PROMETHEUSES, prometheus(probeSelector={}, scrapeConfigSelector={}), NS)
    eventually(lambda: jobs(kube) == [f"serviceMonitor/{NS}/web/0"], 30, "the ServiceMonitor's job")
