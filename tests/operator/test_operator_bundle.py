"""The install bundle: manifests/ is `promop manifests` with defaults, and it is safe to run."""

from __future__ import annotations

import yaml
import pytest
from operator_testlib import ROOT, eventually, kubectl_runner

from promop.cli import main
from promop.operator.bundle import components, render_bundle


def test_manifests_dir_is_the_default_rendering():
    files = {f.name: f.text for f in render_bundle()}
    on_disk = {p.name: p.read_text() for p in (ROOT / "manifests").glob("*.yaml")}
    assert on_disk == files, "manifests/ is stale: run `promop manifests --output-dir manifests`"


@pytest.mark.parametrize("component", [c for c in components() if c != "operator"])
def test_component_manifests_dirs_are_the_default_rendering(component):
    files = {f.name: f.text for f in render_bundle(component=component)}
    on_disk = {p.name: p.read_text() for p in (ROOT / "manifests" / component).glob("*.yaml")}
    assert on_disk == files, (f"manifests/{component}/ is stale: run "
                              f"`promop manifests --component {component} --output-dir manifests/{component}`")


def test_unknown_component_is_a_usage_error(capsys):
    assert main(["manifests", "--component", "nope"]) == 2
    assert "promop manifests: --component nope: unknown" in capsys.readouterr().err


def test_cli_renders_namespace_and_image(capsys):
    assert main(["manifests", "--namespace", "obs", "--image", "registry.example/promop:dev"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds[0] == "Namespace" and docs[0]["metadata"]["name"] == "obs"
    for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service",
                 "ServiceMonitor", "Prometheus"):
        assert kind in kinds
    for d in docs:
        if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert d["metadata"]["namespace"] == "obs", d
    binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"] == "promop")
    assert binding["subjects"][0]["namespace"] == "obs"
    deploy = next(d for d in docs if d["kind"] == "Deployment")
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/promop:dev"
    assert "--config-reloader-image=registry.example/promop:dev" in container["args"]


def test_cli_points_the_reloaders_at_their_own_image(capsys):
    assert main(["manifests", "--image", "registry.example/promop:dev",
                 "--reloader-image", "registry.example/promop-config-reloader:dev"]) == 0
    deploy = next(d for d in yaml.safe_load_all(capsys.readouterr().out) if d and d["kind"] == "Deployment")
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/promop:dev"  # the operator itself keeps the full image
    assert "--config-reloader-image=registry.example/promop-config-reloader:dev" in container["args"]
    assert not [a for a in container["args"] if a == "--config-reloader-image=registry.example/promop:dev"]


def test_deployment_is_locked_down():
    docs = [d for f in render_bundle() for d in f.documents()]
    deploy = next(d for d in docs if d["kind"] == "Deployment")
    pod = deploy["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    c = pod["containers"][0]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["ports"][0]["containerPort"] == 8080
    svc = next(d for d in docs if d["kind"] == "Service")
    assert svc["spec"]["ports"][0]["port"] == 8080
    assert svc["spec"]["selector"] == deploy["spec"]["selector"]["matchLabels"]
    sm = next(d for d in docs if d["kind"] == "ServiceMonitor")
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert sm["spec"]["endpoints"][0]["port"] == svc["spec"]["ports"][0]["name"]
    role = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "promop")
    assert not any("*" in r["verbs"] or "*" in r["resources"] for r in role["rules"])


def test_dockerfile_ships_both_commands():
    text = (ROOT / "Dockerfile").read_text()
    assert "promop-config-reloader" in text and "USER 65534" in text
    assert "pip install" in text and "COPY reloader" in text and "COPY promop" in text


def test_examples_are_attributed_and_parse():
    files = sorted((ROOT / "examples").glob("*.yaml"))
    kinds = [yaml.safe_load(f.read_text())["kind"] for f in files]
    assert kinds.count("Prometheus") == 1 and kinds.count("ServiceMonitor") >= 13
    assert kinds.count("PrometheusRule") >= 8 and kinds[0] == "Namespace"
    copied = 0
    for f in files:
        text = f.read_text()
        if text.startswith("# Copied from prometheus-operator/kube-prometheus"):
            assert "Apache-2.0, Copyright The Prometheus Operator Authors" in text
            copied += 1
    assert copied == 24  # 22 + the kube-prometheus Alertmanager and its alertmanager-main Service


def test_kubectl_installs_the_bundle_and_the_example_prometheus_is_reconciled(kubectl, kube, start_operator):
    from promop.kube.resources import SECRETS
    from promop.operator.demo import decode_config

    # the README's two steps, verbatim
    kubectl("apply", "-f", "crds/")
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", "crds/")
    out = kubectl("apply", "-f", "manifests/").stdout
    for line in ("namespace/promop", "clusterrole.rbac.authorization.k8s.io/promop", "deployment.apps/promop",
                 "servicemonitor.monitoring.coreos.com/promop", "prometheus.monitoring.coreos.com/main"):
        assert line in out, out
    start_operator()
    secret = eventually(lambda: kube.get(SECRETS, "prometheus-main", "promop"), 20, "the example's config")
    config = yaml.safe_load(decode_config(secret))
    assert [j["job_name"] for j in config["scrape_configs"]] == ["serviceMonitor/promop/promop/0"]


CUSTOM = {"06-servicemonitor.yaml": "servicemonitor.monitoring.coreos.com/promop",
          "08-prometheus.yaml": "prometheus.monitoring.coreos.com/main"}


def test_one_command_install_on_a_fresh_cluster_needs_a_second_run(sandbox, tmp_path):
    """What the README says of `kubectl apply -f crds/ -f manifests/`: kubectl maps every object
    before creating any, so on a cluster without the CRDs the first run applies everything but
    the ServiceMonitor and the Prometheus, fails on those two (exit 1), and a second run completes."""
    kubectl = kubectl_runner(sandbox, tmp_path)
    first = kubectl("apply", "-f", "crds/", "-f", "manifests/", check=False)
    assert first.returncode == 1, first.stdout + first.stderr
    failed = {name for name in (p.name for p in (ROOT / "manifests").glob("*.yaml")) if name in first.stderr}
    assert failed == set(CUSTOM), first.stderr
    docs = [d for f in render_bundle() for d in f.documents()]
    crds = len(list((ROOT / "crds").glob("*.yaml")))
    assert len(first.stdout.splitlines()) == crds + len(docs) - len(CUSTOM), first.stdout
    assert not any(obj in first.stdout for obj in CUSTOM.values())
    second = kubectl("apply", "-f", "crds/", "-f", "manifests/")
    for obj in CUSTOM.values():
        assert f"{obj} created" in second.stdout, second.stdout
    assert kubectl("apply", "-f", "crds/", "-f", "manifests/").stdout.count(" unchanged") == crds + len(docs)


def test_deployment_args_are_valid_run_flags(monkeypatch):
    import argparse

    from promop.operator import options

    docs = [d for f in render_bundle("obs", "img:1") for d in f.documents()]
    container = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["promop"] and container["args"][0] == "run"
    parser = argparse.ArgumentParser()
    options.add_flags(parser)
    monkeypatch.setenv("POD_NAMESPACE", "obs")
    opts = options.from_args(parser.parse_args(container["args"][1:]))
    assert opts.leader_elect and opts.lease_namespace == "obs" and opts.config_reloader_image == "img:1"
    assert opts.listen_host_port()[1] == 8080 and opts.log_format == "json"
