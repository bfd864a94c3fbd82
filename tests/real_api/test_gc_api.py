"""Ownership and garbage collection: the sandbox's collector against kube-controller-manager's.

What promop relies on: objects it creates carry ownerReferences, so deleting their owner removes
them (background), a foreground delete keeps the owner until its blocking dependents are gone, and
an object with two owners (a governing Service shared by two Alertmanagers) outlives one of them,
losing only that owner's reference.
"""

from __future__ import annotations

from real_api_lib import eventually

from promop.kube.errors import NotFound
from promop.kube.resources import CONFIGMAPS


def ref(owner: dict, **extra) -> dict:
    md = owner["metadata"]
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": md["name"], "uid": md["uid"], **extra}


def cm(name: str, ns: str, *owners: dict) -> dict:
    return {"metadata": {"name": name, "namespace": ns, "ownerReferences": list(owners)}}


def gone(kube, name: str, ns: str) -> bool:
    try:
        kube.get(CONFIGMAPS, name, ns)
    except NotFound:
        return True
    return False


def test_background_delete_collects_dependents(api):
    kube, ns = api.admin, api.ns
    owner = kube.create(CONFIGMAPS, cm("owner", ns))
    kube.create(CONFIGMAPS, cm("dep", ns, ref(owner, controller=True, blockOwnerDeletion=True)))
    kube.delete(CONFIGMAPS, "owner", ns)
    eventually(lambda: gone(kube, "dep", ns), 30, "the dependent to be collected")


def test_foreground_delete_keeps_the_owner_until_blocking_dependents_go(api):
    kube, ns = api.admin, api.ns
    owner = kube.create(CONFIGMAPS, cm("fg", ns))
    kube.create(CONFIGMAPS, {**cm("held", ns, ref(owner, blockOwnerDeletion=True)),
                             "metadata": {**cm("held", ns, ref(owner, blockOwnerDeletion=True))["metadata"],
                                          "finalizers": ["example.com/hold"]}})
    kube.delete(CONFIGMAPS, "fg", ns, propagation_policy="Foreground")
    marked = kube.get(CONFIGMAPS, "fg", ns)
    assert "foregroundDeletion" in marked["metadata"]["finalizers"] and marked["metadata"]["deletionTimestamp"]
    eventually(lambda: kube.get(CONFIGMAPS, "held", ns)["metadata"].get("deletionTimestamp"), 30,
               "the blocking dependent to be deleted")
    assert not gone(kube, "fg", ns), "the owner went before its blocking dependent"
    kube.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, ns)
    eventually(lambda: gone(kube, "fg", ns) and gone(kube, "held", ns), 30, "owner and dependent gone")


def test_a_dependent_of_two_owners_outlives_one_and_loses_its_reference(api):
    kube, ns = api.admin, api.ns
    a = kube.create(CONFIGMAPS, cm("a", ns))
    b = kube.create(CONFIGMAPS, cm("b", ns))
    kube.create(CONFIGMAPS, cm("shared", ns, ref(a), ref(b)))
    kube.delete(CONFIGMAPS, "a", ns)

    def only_b() -> bool:
        refs = kube.get(CONFIGMAPS, "shared", ns)["metadata"].get("ownerReferences") or []
        return [r["uid"] for r in refs] == [b["metadata"]["uid"]]

    eventually(only_b, 30, "the garbage collector to drop the deleted owner's reference")
    kube.delete(CONFIGMAPS, "b", ns)
    eventually(lambda: gone(kube, "shared", ns), 30, "the dependent to go with its last owner")


def test_orphan_delete_removes_the_references_and_keeps_dependents(api):
    kube, ns = api.admin, api.ns
    owner = kube.create(CONFIGMAPS, cm("orph", ns))
    kube.create(CONFIGMAPS, cm("kept", ns, ref(owner)))
    kube.delete(CONFIGMAPS, "orph", ns, propagation_policy="Orphan")
    eventually(lambda: gone(kube, "orph", ns), 30, "the owner gone")
    eventually(lambda: not kube.get(CONFIGMAPS, "kept", ns)["metadata"].get("ownerReferences"), 30,
               "the orphaned dependent's reference removed")


def test_every_namespace_gets_kube_root_ca_crt(api):
    """kube-controller-manager's root-ca-cert-publisher (the sandbox's with publish_root_ca=True)."""
    kube, ns = api.admin, api.ns
    cm = eventually(lambda: not gone(kube, "kube-root-ca.crt", ns) and kube.get(CONFIGMAPS, "kube-root-ca.crt", ns),
                    30, "kube-root-ca.crt in a new namespace")
    assert cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    assert [m["manager"] for m in cm["metadata"]["managedFields"]] == ["kube-controller-manager"]
    kube.delete(CONFIGMAPS, "kube-root-ca.crt", ns)
    eventually(lambda: not gone(kube, "kube-root-ca.crt", ns), 30, "kube-root-ca.crt put back")
