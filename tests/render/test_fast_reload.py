"""Fast reload: the rendered pod reads its config through the API, and the Role allows exactly that."""

from __future__ import annotations

import copy

import pytest
from .helpers import prometheus_obj

from promop.render import fast_reload
from promop.render.model import RenderInputs, RenderOptions
from promop.render.pipeline import render
from reloader.cli import _usage_problem
from reloader.flags import parse as parse_reloader_flags


def _rule(name: str, namespace: str = "monitoring") -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"groups": [{"name": name, "rules": [{"record": f"{name}:up", "expr": "up"}]}]}}


def _prometheus(annotation: str | None = None, **spec) -> dict:
    p = prometheus_obj(**spec)
    if annotation is not None:
        p["metadata"]["annotations"] = {fast_reload.ANNOTATION: annotation}
    return p


def _render(p: dict, options: RenderOptions = RenderOptions()):
    return render(RenderInputs(prometheus=p, prometheus_rules=[_rule("a"), _rule("b")], options=options))


def _containers(result) -> dict[str, dict]:
    pod = result.statefulsets[0]["spec"]["template"]["spec"]
    return {c["name"]: c for c in pod["containers"] + pod["initContainers"]}


def test_annotated_prometheus_gets_api_reloaders_and_a_role_for_exactly_its_objects():
    result = _render(_prometheus("true", serviceAccountName="prometheus-k8s"))
    assert [c["metadata"]["name"] for c in result.rule_configmaps] == ["prometheus-k8s-rulefiles-0"]
    # as upstream, the pod names at least three rule ConfigMaps (absent ones are optional), so the
    # reloaders follow all three and the Role names all three
    cms = [f"prometheus-k8s-rulefiles-{i}" for i in range(3)]
    containers = _containers(result)

    prom_mounts = {m["mountPath"]: m for m in containers["prometheus"]["volumeMounts"]}
    assert prom_mounts["/etc/prometheus/rules"] == {"mountPath": "/etc/prometheus/rules", "name": "rules-from-api",
                                                    "readOnly": True}
    assert not any(p.startswith("/etc/prometheus/rules/") for p in prom_mounts)  # no kubelet-fed rule volume
    for name in ("config-reloader", "init-config-reloader"):
        c = containers[name]
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        assert mounts["/etc/prometheus/rules"] == "rules-from-api"
        assert mounts["/etc/prometheus/rules-mounted/prometheus-k8s-rulefiles-0"] == "prometheus-k8s-rulefiles-0"
        assert mounts["/etc/prometheus/config"] == "config"  # the mounted fallback stays
        args = c["args"]
        assert "--watch-secret=monitoring/prometheus-k8s:prometheus.yaml.gz" in args
        for cm in cms:
            assert f"--watch-configmap=monitoring/{cm}=/etc/prometheus/rules/{cm},mount=/etc/prometheus/rules-mounted/{cm}" in args
            assert f"--watched-dir=/etc/prometheus/rules/{cm}" not in args
        # the sidecar itself accepts what the operator gives it
        opts = parse_reloader_flags(list(args))
        assert _usage_problem(opts) is None, args
    volumes = result.statefulsets[0]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "rules-from-api", "emptyDir": {}} in volumes

    role, binding = result.reloader_rbac
    assert role["kind"] == "Role" and role["metadata"]["name"] == "prometheus-k8s-config-reader"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["prometheus-k8s"], "verbs": ["get", "watch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": cms, "verbs": ["get", "watch"]},
    ]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": "prometheus-k8s-config-reader"}
    assert role["metadata"]["ownerReferences"][0]["kind"] == "Prometheus"
    objects = [o["kind"] for o in result.objects()]
    assert objects.index("RoleBinding") < objects.index("StatefulSet")  # permissions before pods


def test_without_opt_in_nothing_changes():
    plain = _render(_prometheus())
    assert plain.reloader_rbac == []
    assert [o["kind"] for o in plain.objects()].count("Role") == 0
    args = _containers(plain)["config-reloader"]["args"]
    assert not any(a.startswith("--watch-") for a in args)
    assert fast_reload.mode(_prometheus(), RenderOptions()).reason == "MountedFiles"


def test_operator_flag_turns_it_on_and_the_annotation_can_opt_out():
    on = RenderOptions(fast_reload=True)
    assert _render(_prometheus(), on).reloader_rbac
    assert not _render(_prometheus("false"), on).reloader_rbac
    assert fast_reload.mode(_prometheus(), on).fast


@pytest.mark.parametrize("annotation, spec, reason", [
    ("maybe", {}, "InvalidAnnotation"),
    ("true", {"automountServiceAccountToken": False}, "NoServiceAccountToken"),
])
def test_modes_that_cannot_run_fast_say_why(annotation, spec, reason):
    p = _prometheus(annotation, **spec)
    m = fast_reload.mode(p, RenderOptions())
    assert not m.fast and m.reason == reason and m.message
    assert _render(p).reloader_rbac == []


def test_switching_mode_rolls_the_pods():
    p = _prometheus()
    before = _render(p).input_hash
    flagged = _render(copy.deepcopy(p), RenderOptions(fast_reload=True)).input_hash
    annotated = _render(_prometheus("true")).input_hash
    assert len({before, flagged, annotated}) == 3


def test_default_service_account_when_none_is_set():
    _, binding = _render(_prometheus("true")).reloader_rbac
    assert binding["subjects"][0]["name"] == "default"
