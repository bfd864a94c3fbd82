"""The operator run as its own ServiceAccount, with the install bundle's RBAC, in a sandbox that
enforces RBAC (issue 18 §4): it reconciles the bundle's Prometheus and never gets a 401 or 403.
The exact least-privilege comparison is tests/operator/test_operator_rbac.py."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import requests
from prometheus_client import CollectorRegistry
from deadlines import scaled

from promop.kube.client import KubeClient
from promop.operator.app import Operator
from promop.operator.bundle import render_bundle
from promop.operator.install import install_crds
from promop.operator.options import Options
from promop.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]
AGENT = "promop-operator-as-serviceaccount"
PATHS = {
    "Namespace": "/api/v1/namespaces",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Service": "/api/v1/namespaces/{ns}/services",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "ServiceMonitor": "/apis/monitoring.coreos.com/v1/namespaces/{ns}/servicemonitors",
    "Prometheus": "/apis/monitoring.coreos.com/v1/namespaces/{ns}/prometheuses",
}


def eventually(check, timeout: float, what: str):
    deadline = time.monotonic() + scaled(timeout)  # times PROMOP_TEST_TIMEOUT_SCALE (tests/deadlines.py)
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_operator_runs_as_its_service_account_under_rbac():
    with Sandbox(authorization="rbac", simulate_statefulsets=True, bookmark_interval=0.5) as sb:
        admin = KubeClient(sb.api_client())
        install_crds(admin, ROOT / "crds")
        session = requests.Session()
        session.headers["Authorization"] = "Bearer sandbox"
        docs = [d for f in render_bundle() for d in f.documents()]
        for doc in docs:
            path = PATHS[doc["kind"]].format(ns=doc["metadata"].get("namespace", ""))
            response = session.post(sb.url + path, data=json.dumps(doc),
                                    headers={"Content-Type": "application/json"})
            assert response.status_code == 201, response.text
        account = next(d for d in docs if d["kind"] == "ServiceAccount")
        namespace, name = account["metadata"]["namespace"], account["metadata"]["name"]
        api = sb.api_client(sb.service_account_token(namespace, name))
        api.user_agent = AGENT
        registry = CollectorRegistry()
        operator = Operator(Options(listen_address="127.0.0.1:0"),
                            client=KubeClient(api, registry=registry), registry=registry,
                            web=False)
        stop = threading.Event()
        thread = threading.Thread(target=operator.run, args=(stop,), daemon=True)
        thread.start()
        try:
            eventually(operator.synced.is_set, 30, "the operator's caches to sync")
            prometheus = next(d for d in docs if d["kind"] == "Prometheus")
            pnamespace, pname = prometheus["metadata"]["namespace"], prometheus["metadata"]["name"]
            eventually(lambda: session.get(
                f"{sb.url}/apis/apps/v1/namespaces/{pnamespace}/statefulsets/prometheus-{pname}"
            ).status_code == 200, 30, "the operator's StatefulSet")
            eventually(lambda: session.get(
                f"{sb.url}/api/v1/namespaces/{pnamespace}/secrets/prometheus-{pname}"
            ).status_code == 200, 30, "the operator's config Secret")
        finally:
            stop.set()
            thread.join(30)
        mine = [r for r in sb.requests if r.user_agent.startswith(AGENT)]
        assert mine and all(r.code not in (401, 403) for r in mine), \
            sorted({(r.verb, r.resource, r.subresource, r.code) for r in mine
                    if r.code in (401, 403)})
