"""crds/keda.sh_*.yaml: KEDA's four CRDs as upstream ships them (names, short names, categories,
printer columns, status subresource, CEL rule), ScaledJob trimmed only where client-side apply needs it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from promop.schema import crd_schema, validate

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "crds"
CANDIDATES = [p / "shared" / "reference" / "upstream-crds" / "keda" for p in (ROOT.parent, ROOT.parents[1])]
UPSTREAM = next((p for p in CANDIDATES if p.is_dir()), None)
FILES = ["keda.sh_scaledobjects.yaml", "keda.sh_scaledjobs.yaml", "keda.sh_triggerauthentications.yaml",
         "keda.sh_clustertriggerauthentications.yaml"]


def ours(name: str) -> dict:
    return yaml.safe_load((CRDS / name).read_text())


def upstream(name: str) -> dict:
    if UPSTREAM is None:
        pytest.skip("../shared is not checked out (KEDA's CRDs)")
    return yaml.safe_load((UPSTREAM / name).read_text())


@pytest.mark.parametrize("name", FILES)
def test_small_enough_for_client_side_apply(name):
    assert (CRDS / name).stat().st_size < 256 * 1024


@pytest.mark.parametrize("name", [f for f in FILES if f != "keda.sh_scaledjobs.yaml"])
def test_verbatim(name):
    assert ours(name) == upstream(name)


def test_scaled_job_differs_only_in_the_pod_template():
    mine, theirs = ours("keda.sh_scaledjobs.yaml"), upstream("keda.sh_scaledjobs.yaml")
    path = ("spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties", "jobTargetRef",
            "properties", "template")

    def template(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        return node

    assert template(mine)["template"] == {"description": template(theirs)["template"]["description"], "type": "object",
                                          "x-kubernetes-preserve-unknown-fields": True}
    a, b = copy.deepcopy(mine), copy.deepcopy(theirs)
    del template(a)["template"], template(b)["template"]
    assert a == b


@pytest.mark.parametrize("name,short", [("keda.sh_scaledobjects.yaml", ["so"]), ("keda.sh_scaledjobs.yaml", ["sj"])])
def test_names_columns_status(name, short):
    crd = ours(name)
    assert crd["spec"]["names"]["shortNames"] == short
    version = crd["spec"]["versions"][0]
    assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}


def test_scaled_object_printer_columns():
    cols = [c["name"] for c in ours("keda.sh_scaledobjects.yaml")["spec"]["versions"][0]["additionalPrinterColumns"]]
    assert cols == ["ScaleTargetKind", "ScaleTargetName", "Min", "Max", "Ready", "Active", "Fallback", "Paused",
                    "Triggers", "Authentications", "Age"]


def test_generator_is_up_to_date():
    if UPSTREAM is None:
        pytest.skip("../shared is not checked out (KEDA's CRDs)")
    proc = subprocess.run([sys.executable, str(CRDS / "generate_keda.py"), "--check", "--source", str(UPSTREAM)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def scaled_object(**spec) -> dict:
    base = {"scaleTargetRef": {"name": "web"}, "triggers": [{"type": "prometheus", "metadata": {"threshold": "1"}}]}
    base.update(spec)
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "a"}, "spec": base}


def test_schema_accepts_a_keda_example_and_applies_the_cel_rule():
    schema = crd_schema("ScaledObject", "v1alpha1", "keda.sh", folder=CRDS)
    assert validate(scaled_object(minReplicaCount=2, maxReplicaCount=5), schema) == []
    assert validate(scaled_object(minReplicaCount=100), schema) == []          # max defaults to 100 in the rule
    (v,) = validate(scaled_object(minReplicaCount=101), schema)
    assert "minReplicaCount must be less than or equal to maxReplicaCount" in str(v)
    assert validate(scaled_object(triggers=[]), schema) != []                   # minItems 1
    bad = scaled_object(fallback={"failureThreshold": 3, "replicas": 1, "behavior": "sometimes"})
    assert validate(bad, schema) != []


def test_scaled_job_schema_accepts_any_pod_template():
    schema = crd_schema("ScaledJob", "v1alpha1", "keda.sh", folder=CRDS)
    sj = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "metadata": {"name": "j"}, "spec": {
        "jobTargetRef": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}],
                                               "restartPolicy": "Never"}}},
        "triggers": [{"type": "prometheus", "metadata": {"threshold": "1"}}]}}
    assert validate(sj, schema) == []
