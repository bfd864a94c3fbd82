"""`promop manifests --component adapter`: what an install needs, consistent with the command."""

from __future__ import annotations

import shlex

import yaml

from promop.adapter.default_config import default_config_yaml
from promop.adapter.rbac import cluster_role_rules
from promop.cli import build_parser
from promop.operator.bundle import render_bundle


def _docs(namespace: str = "monitoring") -> list[dict]:
    return [d for f in render_bundle(namespace, "example/promop:1", "adapter") for d in f.documents()]


def test_bundle_objects() -> None:
    docs = _docs()
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for want in [("ServiceAccount", "promop-adapter"), ("ClusterRole", "promop-adapter"),
                 ("ClusterRoleBinding", "promop-adapter:system:auth-delegator"),
                 ("RoleBinding", "promop-adapter-auth-reader"), ("ConfigMap", "promop-adapter-config"),
                 ("Deployment", "promop-adapter"), ("Service", "promop-adapter"),
                 ("APIService", "v1beta2.custom.metrics.k8s.io"), ("APIService", "v1beta1.custom.metrics.k8s.io"),
                 ("APIService", "v1beta1.external.metrics.k8s.io"), ("APIService", "v1beta1.metrics.k8s.io")]:
        assert want in kinds, want
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    reader = by[("RoleBinding", "promop-adapter-auth-reader")]
    assert reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"]["name"] == "extension-apiserver-authentication-reader"
    assert by[("ClusterRole", "promop-adapter")]["rules"] == cluster_role_rules()
    assert by[("ConfigMap", "promop-adapter-config")]["data"]["config.yaml"] == default_config_yaml()
    for d in docs:
        if d["kind"] == "APIService":
            assert d["spec"]["service"] == {"name": "promop-adapter", "namespace": "monitoring", "port": 443}


def test_deployment_args_are_accepted_by_the_command() -> None:
    dep = next(d for d in _docs() if d["kind"] == "Deployment")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["promop"]
    args = build_parser().parse_args(container["args"])
    assert args.func.__name__ == "run_serve" and args.config == "/etc/adapter/config.yaml"
    assert args.prometheus_url == "http://prometheus-operated.monitoring.svc:9090"
    assert args.secure_port == container["ports"][0]["containerPort"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/etc/adapter" in mounts and "/tmp" in mounts      # read-only root: certs go to /tmp/cert
    assert shlex.join(container["args"])
    assert yaml.safe_dump(dep)
