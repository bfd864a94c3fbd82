"""Fast reload through the operator: the Role, the pods' reloader flags and the FastReload condition."""

from __future__ import annotations

from operator_testlib import NS, eventually, names, prometheus

from promop.kube.resources import NAMESPACES, PROMETHEUSES, ROLEBINDINGS, ROLES, STATEFULSETS


def _condition(kube, name: str = "p") -> dict | None:
    conditions = (kube.get(PROMETHEUSES, name, NS).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "FastReload"), None)


def _reloader_args(kube) -> list[str]:
    sts = kube.get(STATEFULSETS, "prometheus-p", NS)
    return next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "config-reloader")["args"]


def test_annotation_turns_it_on_and_off(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    p = prometheus()
    p["metadata"]["annotations"] = {"promop.dev/fast-reload": "true"}
    kube.create(PROMETHEUSES, p)
    op = start_operator()
    eventually(lambda: names(kube, ROLES) == ["prometheus-p-config-reader"], 20, "the reloader's Role")
    eventually(lambda: names(kube, ROLEBINDINGS) == ["prometheus-p-config-reader"], 20, "its RoleBinding")
    eventually(lambda: f"--watch-secret={NS}/prometheus-p:prometheus.yaml.gz" in _reloader_args(kube), 20,
               "the reloader reading through the API")
    eventually(lambda: (_condition(kube) or {}).get("reason") == "APIWatch", 20, "FastReload condition")
    assert _condition(kube)["status"] == "True"

    kube.patch(PROMETHEUSES, "p", {"metadata": {"annotations": {"promop.dev/fast-reload": "false"}}}, NS)
    eventually(lambda: not any(a.startswith("--watch-") for a in _reloader_args(kube)), 20, "mounted files again")
    eventually(lambda: names(kube, ROLES) == [] and names(kube, ROLEBINDINGS) == [], 20, "the Role deleted")
    eventually(lambda: (_condition(kube) or {}).get("reason") == "MountedFiles", 20, "FastReload False")
    eventually(op.idle, 20)


def test_the_flag_turns_it_on_for_every_prometheus_and_says_when_it_cannot(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    kube.create(PROMETHEUSES, prometheus())
    kube.create(PROMETHEUSES, prometheus("no-token", automountServiceAccountToken=False))
    start_operator(fast_reload=True)
    eventually(lambda: names(kube, ROLES) == ["prometheus-p-config-reader"], 20, "a Role for p only")
    eventually(lambda: (_condition(kube) or {}).get("status") == "True", 20, "p in fast mode")
    eventually(lambda: (_condition(kube, "no-token") or {}).get("reason") == "NoServiceAccountToken", 20,
               "no-token says why not")


def test_without_opt_in_status_is_upstreams(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    kube.create(PROMETHEUSES, prometheus())
    op = start_operator()
    eventually(lambda: {c["type"] for c in (kube.get(PROMETHEUSES, "p", NS).get("status") or {}).get(
        "conditions") or []} == {"Available", "Reconciled"}, 20, "upstream's conditions")
    eventually(op.idle, 20)
    assert names(kube, ROLES) == []
