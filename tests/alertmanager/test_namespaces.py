"""--alertmanager-instance-namespaces and --alertmanager-config-namespaces: which namespaces the Alertmanager and
AlertmanagerConfig informers watch (they take precedence over --namespaces/--deny-namespaces, as upstream)."""

from __future__ import annotations

import argparse

import pytest
import yaml

from promop.kube.resources import NAMESPACES, SECRETS, STATEFULSETS
from promop.operator import options as op_options
from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS
from promop.operator.alertmanager.flags import AMOptions

from .operator_helpers import alertmanager, amc, eventually, generated_config


def parse(*argv: str) -> op_options.Options:
    parser = argparse.ArgumentParser()
    op_options.add_flags(parser)
    return op_options.from_args(parser.parse_args(list(argv)))


def test_flags_parse_into_the_alertmanager_options():
    opts = parse("--alertmanager-instance-namespaces=mon, ops,mon", "--alertmanager-config-namespaces=team-a")
    assert opts.alertmanager.instance_namespaces == ("mon", "ops")
    assert opts.alertmanager.config_namespaces == ("team-a",)
    assert parse().alertmanager.instance_namespaces == ()


def receivers(kube) -> list[str]:
    return sorted(r["name"] for r in yaml.safe_load(generated_config(kube, "mon", "main"))["receivers"])


@pytest.mark.parametrize("deny", [False, True])
def test_informers_watch_only_the_given_namespaces(kube, start_operator, deny):
    for ns in ("mon", "other", "team-a", "team-b"):
        kube.create(NAMESPACES, {"metadata": {"name": ns}})
    # the allow-lists win over --deny-namespaces (here denying the very namespaces they list)
    extra = {"deny_namespaces": ("mon", "team-a")} if deny else {"namespaces": ("mon", "other", "team-b")}
    start_operator(alertmanager=AMOptions(instance_namespaces=("mon",), config_namespaces=("team-a",)), **extra)
    kube.create(ALERTMANAGERS, alertmanager("main", "mon", alertmanagerConfigNamespaceSelector={}))
    kube.create(ALERTMANAGERS, alertmanager("elsewhere", "other", alertmanagerConfigNamespaceSelector={}))
    kube.create(ALERTMANAGERCONFIGS, amc("a", "team-a"))
    kube.create(ALERTMANAGERCONFIGS, amc("b", "team-b"))
    eventually(lambda: receivers(kube) == ["null", "team-a/a/r"], 20, "only team-a's AlertmanagerConfig selected")
    eventually(lambda: kube.get(STATEFULSETS, "alertmanager-main", "mon"), 20, "main's StatefulSet")
    # an AlertmanagerConfig edit in team-a still reaches the Secret (the informer there is live)
    kube.create(ALERTMANAGERCONFIGS, amc("a2", "team-a"))
    eventually(lambda: receivers(kube) == ["null", "team-a/a/r", "team-a/a2/r"], 20, "the new team-a object")
    # the Alertmanager outside --alertmanager-instance-namespaces was never synced
    assert not [s for s in kube.list(SECRETS, "other")["items"] if s["metadata"]["name"].startswith("alertmanager-")]
    assert not kube.list(STATEFULSETS, "other")["items"]
