"""`promop run --manage-crds --kubelet-service=...` as a user runs it: a subprocess with a kubeconfig."""

from __future__ import annotations

import signal
import subprocess
import sys

from promop.kube.client import KubeClient
from promop.kube.resources import CRDS, ENDPOINTS, NAMESPACES, STATEFULSETS
from promop.operator.alertmanager import ALERTMANAGERS
from promop.sandbox import Sandbox

from .operator_helpers import ROOT, alertmanager, eventually
from .test_kubelet import add_node, node


def test_run_installs_crds_then_runs_the_alertmanager_and_kubelet_controllers(tmp_path):
    with Sandbox(port=0, simulate_statefulsets=True) as sb:
        kube = KubeClient(sb.api_client())
        add_node(kube, node("n1", "10.0.0.1"))
        kubeconfig = sb.write_kubeconfig(tmp_path / "kubeconfig")
        proc = subprocess.Popen([sys.executable, "-m", "promop", "run", "--kubeconfig", kubeconfig,
                                 "--web.listen-address", "127.0.0.1:0", "--manage-crds",
                                 "--kubelet-service", "kube-system/kubelet"],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            eventually(lambda: any(c["metadata"]["name"] == "alertmanagers.monitoring.coreos.com"
                                   for c in kube.list(CRDS)["items"]), 30, "the CRDs installed")
            eventually(lambda: kube.get(ENDPOINTS, "kubelet", "kube-system")["subsets"][0]["addresses"][0]["ip"]
                       == "10.0.0.1", 30, "the kubelet Endpoints")
            kube.create(NAMESPACES, {"metadata": {"name": "monitoring"}})
            eventually(lambda: kube.create(ALERTMANAGERS, alertmanager(), "monitoring"), 10, "the Alertmanager created")
            eventually(lambda: kube.get(STATEFULSETS, "alertmanager-main", "monitoring"), 30, "its StatefulSet")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        assert code == 0, proc.stderr.read()
