"""Our CRDs keep upstream's structural markers wherever a field exists in both.

crds/generate*.py trim upstream's CRDs (descriptions, big pod-template subtrees turned into
preserve-unknown-fields). Trimming may widen what is accepted, but a marker that decides how
the apiserver stores, merges or validates a field (list and map types, list-map keys,
int-or-string, defaults, CEL rules) must stay as upstream has it: the hostAliases list-map keys
were lost once, and a real apiserver refused the whole Alertmanager CRD.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from promop.schema.crds import _Loader

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = [p / "shared" / "reference" / "upstream-crds" for p in (ROOT.parent, ROOT.parents[1])]
UPSTREAM = next((p for p in CANDIDATES if p.is_dir()), None)
OURS = sorted(p.name for p in (ROOT / "crds").glob("monitoring.coreos.com_*.yaml"))
# markers the apiserver acts on; each must be equal wherever the node exists in both schemas
MARKERS = ("x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
           "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource", "x-kubernetes-validations", "default")
# on a subtree we accept as any object (preserve-unknown-fields where upstream has a schema), the
# node's own list/map markers stay; what is below it is deliberately not checked
NODE_MARKERS = MARKERS[:3]


@functools.lru_cache(maxsize=None)
def load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=_Loader)


def upstream(name: str) -> dict:
    if UPSTREAM is None:
        pytest.skip("../shared is not checked out (upstream CRDs)")
    return load(UPSTREAM / name)


def pairs(ours: Any, theirs: Any, path: str) -> Iterator[tuple[str, dict, dict, bool]]:
    """(path, our node, upstream's node, whether ours is a preserved stand-in) for every node in both."""
    if not isinstance(ours, dict) or not isinstance(theirs, dict):
        return
    preserved = bool(ours.get("x-kubernetes-preserve-unknown-fields")) and not theirs.get(
        "x-kubernetes-preserve-unknown-fields")
    yield path, ours, theirs, preserved
    if preserved and ours.get("type") != "array":
        return
    for name, sub in (ours.get("properties") or {}).items():
        yield from pairs(sub, (theirs.get("properties") or {}).get(name), f"{path}.{name}")
    for name in ("items", "additionalProperties"):
        yield from pairs(ours.get(name), theirs.get(name), f"{path}[]" if name == "items" else f"{path}{{}}")


def differences(ours: dict, theirs: dict) -> list[str]:
    out = []
    by_name = {v["name"]: v for v in theirs["spec"]["versions"]}
    for version in ours["spec"]["versions"]:
        up = by_name.get(version["name"])
        assert up is not None, f"version {version['name']} is not upstream's"
        ours_root, up_root = version["schema"]["openAPIV3Schema"], up["schema"]["openAPIV3Schema"]
        for path, o, t, preserved in pairs(ours_root, up_root, version["name"]):
            in_items = path.endswith("[]") and preserved
            for marker in NODE_MARKERS if preserved else MARKERS:
                if marker == "x-kubernetes-list-map-keys" and in_items:
                    continue
                if o.get(marker) != t.get(marker):
                    out.append(f"{path}: {marker} is {o.get(marker)!r}, upstream {t.get(marker)!r}")
            if t.get("x-kubernetes-preserve-unknown-fields") and not o.get("x-kubernetes-preserve-unknown-fields"):
                out.append(f"{path}: upstream preserves unknown fields, we prune them")
    return out


# Ours -> upstream's file it comes from: AlertmanagerConfig is the `-full` variant (v1alpha1 and v1beta1).
SOURCE = {"monitoring.coreos.com_alertmanagerconfigs.yaml": "monitoring.coreos.com_alertmanagerconfigs-full.yaml"}


@pytest.mark.parametrize("name", OURS)
def test_markers_as_upstream_wherever_the_field_exists_in_both(name):
    assert differences(load(ROOT / "crds" / name), upstream(SOURCE.get(name, name))) == []


def test_the_comparison_sees_a_lost_list_map_key():
    """The mistake that shipped: hostAliases without its list-map keys (and without key properties)."""
    import copy

    ours = copy.deepcopy(load(ROOT / "crds" / "monitoring.coreos.com_alertmanagers.yaml"))
    spec = ours["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    del spec["hostAliases"]["x-kubernetes-list-map-keys"]
    got = differences(ours, upstream("monitoring.coreos.com_alertmanagers.yaml"))
    assert got == ["v1.spec.hostAliases: x-kubernetes-list-map-keys is None, upstream ['ip']"]


def test_the_comparison_sees_a_changed_default_and_a_lost_rule():
    import copy

    ours = copy.deepcopy(load(ROOT / "crds" / "monitoring.coreos.com_prometheuses.yaml"))
    spec = ours["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    with_default = next(k for k, v in spec["properties"].items() if "default" in v)
    spec["properties"][with_default]["default"] = "changed"
    ruled = spec.get("x-kubernetes-validations")
    if ruled:
        spec.pop("x-kubernetes-validations")
    got = differences(ours, upstream("monitoring.coreos.com_prometheuses.yaml"))
    assert any(f"v1.spec.{with_default}: default is 'changed'" in d for d in got), got
    assert not ruled or any("v1.spec: x-kubernetes-validations is None" in d for d in got), got


# kubernetes/autoscaler's VPA CRDs (vertical-pod-autoscaler/deploy/vpa-v1-crd-gen.yaml, v1) are not
# in ../shared: their markers for every field our VPA CRDs define, transcribed from that file.
# `{}` is additionalProperties, `[]` items. Upstream has no list-type, list-map-keys or default there.
VPA_UPSTREAM_MARKERS = {
    "autoscaling.k8s.io_verticalpodautoscalers.yaml": {
        "v1.spec.targetRef": {"x-kubernetes-map-type": "atomic"},
        **{f"v1.spec.resourcePolicy.containerPolicies[].{name}": {"x-kubernetes-int-or-string": True}
           for name in ("minAllowed{}", "maxAllowed{}", "oomBumpUpRatio", "oomMinBumpUp")},
        **{f"v1.status.recommendation.containerRecommendations[].{name}{{}}": {"x-kubernetes-int-or-string": True}
           for name in ("target", "lowerBound", "upperBound", "uncappedTarget")},
        # ours: a stand-in for upstream's typed startupBoost (its CEL rules live below it)
        "v1.spec.startupBoost": {"x-kubernetes-preserve-unknown-fields": True},
    },
    "autoscaling.k8s.io_verticalpodautoscalercheckpoints.yaml": {
        f"v1.status.{h}.bucketWeights": {"x-kubernetes-preserve-unknown-fields": True}
        for h in ("cpuHistogram", "memoryHistogram")},
}


def markers_of(crd: dict) -> dict[str, dict]:
    out: dict[str, dict] = {}

    def walk(s: Any, path: str) -> None:
        if not isinstance(s, dict):
            return
        found = {k: v for k, v in s.items() if k.startswith("x-kubernetes-") or k == "default"}
        if found:
            out[path] = found
        for name, sub in (s.get("properties") or {}).items():
            walk(sub, f"{path}.{name}")
        walk(s.get("items"), f"{path}[]")
        walk(s.get("additionalProperties"), f"{path}{{}}")

    for version in crd["spec"]["versions"]:
        walk(version["schema"]["openAPIV3Schema"], version["name"])
    return out


@pytest.mark.parametrize("name", sorted(VPA_UPSTREAM_MARKERS))
def test_vpa_crds_carry_upstreams_markers(name):
    assert markers_of(load(ROOT / "crds" / name)) == VPA_UPSTREAM_MARKERS[name]
