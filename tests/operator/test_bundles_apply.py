"""Every bundle we ship applies to the sandbox as to a real cluster (issue 21 §4): the sandbox
validates names per kind as kube-apiserver does (RBAC names are path segments, so the adapter's
`promop-adapter:system:auth-delegator` binding is fine), and `kubectl apply` of each
`promop manifests` rendering, every component and option, must succeed and create every object."""

from __future__ import annotations

import pytest
from operator_testlib import ROOT, kubectl_runner

from promop.kube.client import KubeClient
from promop.operator.bundle import as_stream, components, render_bundle
from promop.operator.install import install_crds

VARIANTS = [(c, {}) for c in components()] + [
    ("operator", {"manage_crds": True}),
    ("operator", {"kubelet_service": "kube-system/kubelet"}),
    ("operator", {"namespace": "monitoring"}),
    ("admission-webhook", {"ca_bundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="}),
]
# Objects a bundle replaces rather than creates: the admission webhook re-applies the
# AlertmanagerConfig CRD of crds/ with its conversion webhook wired.
REPLACED = {"admission-webhook": {"customresourcedefinition.apiextensions.k8s.io/"
                                  "alertmanagerconfigs.monitoring.coreos.com configured"}}


@pytest.mark.kubectl
@pytest.mark.parametrize("component,options", VARIANTS,
                         ids=[f"{c}-{'-'.join(o) or 'default'}" for c, o in VARIANTS])
def test_bundle_applies_with_kubectl(sandbox, tmp_path, component, options):
    kubectl = kubectl_runner(sandbox, tmp_path)
    # the CRDs first, as the README's install does (kubectl's own apply of crds/: tests/sandbox/test_crd_validation.py)
    install_crds(KubeClient(sandbox.api_client()), ROOT / "crds")
    files = render_bundle(component=component, **options)
    namespace = options.get("namespace", "promop")
    docs = [d for f in files for d in f.documents()]
    if not any(d["kind"] == "Namespace" for d in docs):  # installed after the operator's bundle
        kubectl("create", "namespace", namespace)
    out = kubectl("apply", "-f", "-", input=as_stream(files)).stdout
    assert len(out.splitlines()) == len(docs), out
    replaced = REPLACED.get(component, set())
    assert all(line.endswith(" created") or line in replaced for line in out.splitlines()), out
    assert replaced <= set(out.splitlines()), out
    again = kubectl("apply", "-f", "-", input=as_stream(files)).stdout
    assert again.count(" unchanged") == len(docs), again
