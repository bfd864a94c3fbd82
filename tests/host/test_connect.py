"""`promop.host.connect`: the first request a component makes must need no RBAC grant.

Found on the real node (tests/e2e_real/test_components_metrics.py): the autoscaler and the
recommender, installed with their bundles' least-privilege ClusterRoles, probed the apiserver by
listing namespaces, which those roles do not grant; every attempt was a 403, logged as "apiserver
unreachable", and the pods never became Ready.
"""

from __future__ import annotations

import logging
import threading

import pytest
from deadlines import scaled
from prometheus_client import CollectorRegistry

from promop.host.connect import connect
from promop.kube.client import KubeClient
from promop.kube.resources import Resource
from promop.sandbox import Sandbox

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", kind="ServiceAccount")


@pytest.fixture
def rbac():
    with Sandbox(authorization="rbac") as sb:
        yield sb


def client_as(sb: Sandbox, token: str):
    return lambda: KubeClient(sb.api_client(token), registry=CollectorRegistry())


def test_an_identity_without_any_grant_connects_at_the_first_attempt(rbac, caplog):
    admin = client_as(rbac, "sandbox")()
    admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": "least"}}, "default")
    token = rbac.service_account_token("default", "least")
    stop = threading.Event()
    give_up = threading.Timer(scaled(5), stop.set)   # a probe needing a grant retries forever
    give_up.start()
    try:
        with caplog.at_level(logging.WARNING, logger="promop.host"):
            client = connect(client_as(rbac, token), stop, base_delay=0.01, max_delay=0.02)
    finally:
        give_up.cancel()
    assert client is not None, "a ServiceAccount with no grant never got past the connection probe"
    assert not [r for r in caplog.records if "unreachable" in r.getMessage()], \
        "a ServiceAccount with no grant was refused by the connection probe"


def test_credentials_the_apiserver_does_not_know_are_retried_until_stopped(rbac, caplog):
    stop = threading.Event()
    attempts: list[int] = []

    def factory():
        attempts.append(1)
        if len(attempts) >= 3:
            stop.set()
        return client_as(rbac, "not-a-token")()

    with caplog.at_level(logging.WARNING, logger="promop.host"):
        assert connect(factory, stop, base_delay=0.01, max_delay=0.02) is None
    assert len(attempts) == 3
    assert any("401" in r.getMessage() or "Unauthorized" in str(r.__dict__) for r in caplog.records)
