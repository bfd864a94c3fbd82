"""`Sandbox(publish_root_ca=True)`: kube-root-ca.crt in every namespace, put back when deleted or
changed, as kube-controller-manager's root-ca-cert-publisher does (tests/real_api/test_gc_api.py
checks the same on the real control plane)."""

from __future__ import annotations

import time

from deadlines import scaled

from promop.kube.client import KubeClient
from promop.kube.errors import NotFound
from promop.kube.resources import CONFIGMAPS, NAMESPACES
from promop.sandbox import Sandbox


def wait(check, what: str):
    deadline = time.monotonic() + scaled(5)
    while True:
        try:
            value = check()
        except NotFound:
            value = None
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_published_in_every_namespace_and_restored():
    with Sandbox(port=0, publish_root_ca=True) as sb:
        kube = KubeClient(sb.api_client())
        for ns in ("default", "kube-system", "kube-public"):
            wait(lambda ns=ns: kube.get(CONFIGMAPS, "kube-root-ca.crt", ns), f"{ns}/kube-root-ca.crt")
        kube.create(NAMESPACES, {"metadata": {"name": "team"}})
        cm = wait(lambda: kube.get(CONFIGMAPS, "kube-root-ca.crt", "team"), "team/kube-root-ca.crt")
        assert cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
        assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith("Contains a CA bundle")
        assert [m["manager"] for m in cm["metadata"]["managedFields"]] == ["kube-controller-manager"]
        kube.delete(CONFIGMAPS, "kube-root-ca.crt", "team")
        wait(lambda: kube.get(CONFIGMAPS, "kube-root-ca.crt", "team"), "the ConfigMap put back")
        kube.patch(CONFIGMAPS, "kube-root-ca.crt", {"data": {"ca.crt": "x"}}, "team")
        wait(lambda: kube.get(CONFIGMAPS, "kube-root-ca.crt", "team")["data"]["ca.crt"] == cm["data"]["ca.crt"],
             "the CA put back")


def test_off_by_default():
    with Sandbox(port=0) as sb:
        kube = KubeClient(sb.api_client())
        kube.create(NAMESPACES, {"metadata": {"name": "team"}})
        assert sb.background.wait_idle(scaled(5))
        assert kube.list(CONFIGMAPS, "team")["items"] == []
