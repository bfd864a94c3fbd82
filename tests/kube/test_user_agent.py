"""Every request names promop, its version and the component (what an apiserver's audit log shows)."""

from __future__ import annotations

import sys
import threading
import types

from prometheus_client import CollectorRegistry

from promop import __version__
from promop.kube.client import KubeClient
from promop.kube.resources import CONFIGMAPS
from promop.kube.user_agent import default_component, user_agent


def _agents(sandbox, since: int) -> set[str]:
    return {r.user_agent for r in sandbox.requests[since:]}


def test_every_kind_of_request_carries_the_component(sandbox):
    kube = KubeClient(sandbox.api_client(), qps=0, burst=0, registry=CollectorRegistry(), component="unit-test")
    sandbox.reset_requests()
    body = {"metadata": {"name": "ua", "namespace": "default"}, "data": {"k": "v"}}
    kube.create(CONFIGMAPS, body)
    kube.get(CONFIGMAPS, "ua", "default")
    kube.patch(CONFIGMAPS, "ua", {"data": {"k": "w"}}, "default")
    _, rv = kube.list_all(CONFIGMAPS, "default")
    with kube.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=1, idle_timeout=10) as stream:
        list(stream)
    kube.delete(CONFIGMAPS, "ua", "default")
    verbs = [r.verb for r in sandbox.requests]
    assert verbs == ["create", "get", "patch", "list", "watch", "delete"]
    assert _agents(sandbox, 0) == {f"promop/{__version__} (unit-test)"}


def test_the_default_component_is_the_program(sandbox, tmp_path):
    kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")
    kube = KubeClient.from_kubeconfig(kubeconfig, registry=CollectorRegistry())
    sandbox.reset_requests()
    kube.list(CONFIGMAPS, "default", limit=1)
    assert _agents(sandbox, 0) == {user_agent(default_component())}
    assert default_component() not in ("", "__main__", "-c")


def test_default_component_names(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/promop", "run"])
    assert default_component() == "promop"
    monkeypatch.setattr(sys, "argv", ["/srv/tool.py"])
    assert default_component() == "tool"
    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name="promop.__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", ["/src/promop/__main__.py", "demo"])
    assert default_component() == "promop"
    monkeypatch.setattr(sys, "argv", ["-c"])
    assert default_component() == "python"


def test_a_user_agent_the_owner_chose_is_kept(sandbox):
    api = sandbox.api_client()
    api.user_agent = "my-script/1.0"
    kube = KubeClient(api, qps=0, burst=0, registry=CollectorRegistry(), component="ignored")
    sandbox.reset_requests()
    kube.list(CONFIGMAPS, "default", limit=1)
    assert _agents(sandbox, 0) == {"my-script/1.0"}


def test_the_operator_connects_as_the_operator_component(sandbox, tmp_path):
    from promop.operator.app import connect
    from promop.operator.options import Options

    kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")
    sandbox.reset_requests()
    client = connect(Options(kubeconfig=kubeconfig), threading.Event(), registry=CollectorRegistry())
    assert client is not None
    assert _agents(sandbox, 0) == {f"promop/{__version__} (operator)"}
