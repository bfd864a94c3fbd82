"""`promop run`'s early LISTs (promop.operator.early_lists): every one of them is the very request an
informer of the operator then sends, so each is taken, and none is sent twice; with --namespaces and
--deny-namespaces too. An object created after the early LIST still reaches the operator."""

from __future__ import annotations

import pytest
from operator_testlib import OPERATOR_AGENT, eventually

from promop.cli import build_parser
from promop.kube import prefetch
from promop.kube.resources import NAMESPACES, SERVICEMONITORS
from promop.operator import early_lists
from promop.operator.options import from_args

KINDS = ("servicemonitors", "podmonitors", "prometheusrules", "probes", "scrapeconfigs")


@pytest.fixture(autouse=True)
def no_leftovers():
    prefetch.clear()
    yield
    prefetch.clear()


def monitor(name: str, namespace: str) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": name}}, "endpoints": [{"port": "web"}]}}


@pytest.mark.parametrize("argv, where, seen", [
    ((), [None], {"team-a/a", "team-b/b", "other/o"}),
    (("--deny-namespaces", "other"), [None], {"team-a/a", "team-b/b"}),
    (("--namespaces", "team-a,team-b"), ["team-a", "team-b"], {"team-a/a", "team-b/b"}),
])
def test_every_early_list_is_taken_by_the_informer_that_would_have_sent_it(cluster, kube, start_operator, tmp_path,
                                                                          argv, where, seen):
    for ns in ("team-a", "team-b", "other"):
        kube.create(NAMESPACES, {"metadata": {"name": ns}})
    kube.create(SERVICEMONITORS, monitor("a", "team-a"), "team-a")
    kube.create(SERVICEMONITORS, monitor("o", "other"), "other")
    options = from_args(build_parser("run").parse_args(
        ["run", "--kubeconfig", cluster.write_kubeconfig(tmp_path / "kubeconfig"), *argv]))
    assert options.early_lists
    early_lists.start(options).join(30)
    prefix = "/apis/monitoring.coreos.com"
    expected = sorted(f"{prefix}/{'v1alpha1' if k == 'scrapeconfigs' else 'v1'}"
                      f"{f'/namespaces/{ns}' if ns else ''}/{k}" for k in KINDS for ns in where)
    assert prefetch.pending() == expected
    kube.create(SERVICEMONITORS, monitor("b", "team-b"), "team-b")   # after the early LIST
    cluster.reset_requests()
    running = start_operator(namespaces=options.namespaces, deny_namespaces=options.deny_namespaces)
    assert prefetch.pending() == []   # each taken by its informer: the same request, to the letter
    own = [r for r in cluster.requests if r.user_agent == OPERATOR_AGENT and r.verb == "list"
           and r.resource in KINDS and "limit=1&" not in f"{r.path}&"]   # not crd_served's probe
    assert own == []
    store = running.controller.servicemonitors.store
    eventually(lambda: {f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in store.list()} == seen,
               what="the ServiceMonitors in the operator's cache")


def test_promop_run_without_the_flag_sends_none(cluster, tmp_path):
    options = from_args(build_parser("run").parse_args(
        ["run", "--kubeconfig", cluster.write_kubeconfig(tmp_path / "kubeconfig"), "--no-early-lists"]))
    assert not options.early_lists


def test_a_long_namespace_allow_list_sends_none_early(cluster, tmp_path):
    many = ",".join(f"team-{i}" for i in range(early_lists.MAX_REQUESTS))
    options = from_args(build_parser("run").parse_args(
        ["run", "--kubeconfig", cluster.write_kubeconfig(tmp_path / "kubeconfig"), "--namespaces", many]))
    cluster.reset_requests()
    early_lists.start(options).join(30)
    assert prefetch.pending() == [] and not [r for r in cluster.requests if r.verb == "list"]
