"""The VPA and checkpoint CRDs accept objects written for upstream's and reject what upstream's reject."""

from __future__ import annotations

from pathlib import Path

import pytest

from promop.kube.errors import ApiError
from promop.recommender.controller import CHECKPOINTS, VPAS

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_VPA = {
    "apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
    "metadata": {"name": "hamster-vpa", "namespace": "default"},
    "spec": {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "hamster"},
        "updatePolicy": {"updateMode": "InPlaceOrRecreate", "minReplicas": 2,
                         "evictionRequirements": [{"resources": ["cpu"],
                                                   "changeRequirement": "TargetHigherThanRequests"}]},
        "recommenders": [{"name": "default"}],
        "resourcePolicy": {"containerPolicies": [
            {"containerName": "*", "minAllowed": {"cpu": "100m", "memory": "50Mi"},
             "maxAllowed": {"cpu": 1, "memory": "500Mi"}, "controlledResources": ["cpu", "memory"],
             "controlledValues": "RequestsAndLimits", "oomBumpUpRatio": "1.5", "oomMinBumpUp": "200Mi",
             "memoryAggregationIntervalSeconds": 86400, "memoryAggregationIntervalCount": 8},
            {"containerName": "istio-proxy", "mode": "Off"}]},
    },
    "status": {"recommendation": {"containerRecommendations": [
        {"containerName": "hamster", "target": {"cpu": "587m", "memory": "262144k"},
         "lowerBound": {"cpu": "25m"}, "upperBound": {"cpu": "100G"}, "uncappedTarget": {"cpu": "587m"}}]},
        "conditions": [{"type": "RecommendationProvided", "status": "True",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
}


def test_upstream_objects_are_accepted(kube):
    kube.create(VPAS, UPSTREAM_VPA, "default")
    got = kube.get(VPAS, "hamster-vpa", "default")
    assert got["spec"]["resourcePolicy"]["containerPolicies"][0]["oomMinBumpUp"] == "200Mi"
    assert "status" not in got or not got["status"].get("recommendation")  # status is a subresource
    kube.create(CHECKPOINTS, {
        "apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscalerCheckpoint",
        "metadata": {"name": "hamster-vpa-hamster", "namespace": "default"},
        "spec": {"vpaObjectName": "hamster-vpa", "containerName": "hamster"},
        "status": {"lastUpdateTime": "2026-01-01T00:00:00Z", "version": "v3",
                   "cpuHistogram": {"referenceTimestamp": "2026-01-01T00:00:00Z", "bucketWeights": {"25": 10000},
                                    "totalWeight": 207.7},
                   "memoryHistogram": {"referenceTimestamp": None, "bucketWeights": {}, "totalWeight": 0},
                   "firstSampleStart": "2026-01-01T00:00:00Z", "lastSampleStart": "2026-01-02T00:00:00Z",
                   "totalSamplesCount": 1440}}, "default")
    cp = kube.get(CHECKPOINTS, "hamster-vpa-hamster", "default")
    assert cp["status"]["cpuHistogram"]["bucketWeights"] == {"25": 10000}


def schema(crd_file: str) -> dict:
    """The CRD's openAPIV3Schema as JSON Schema (`nullable` becomes a null type)."""
    import yaml

    crd = yaml.safe_load((ROOT / "crds" / crd_file).read_text())

    def fix(node):
        if isinstance(node, dict):
            node = {k: fix(v) for k, v in node.items()}
            if node.pop("nullable", False) and "type" in node:
                node["type"] = [node["type"], "null"]
            return node
        if isinstance(node, list):
            return [fix(x) for x in node]
        return node

    return fix(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def test_upstream_objects_validate_against_the_schemas():
    import jsonschema

    jsonschema.validate(UPSTREAM_VPA, schema("autoscaling.k8s.io_verticalpodautoscalers.yaml"))


@pytest.mark.parametrize("mutate", [
    lambda v: v["spec"]["updatePolicy"].update(updateMode="Sometimes"),
    lambda v: v["spec"].pop("targetRef"),
    lambda v: v["spec"]["targetRef"].pop("name"),
    lambda v: v["spec"]["resourcePolicy"]["containerPolicies"][0].update(controlledResources=["gpu"]),
    lambda v: v["spec"]["resourcePolicy"]["containerPolicies"][1].update(mode="Sometimes"),
    lambda v: v["spec"]["resourcePolicy"]["containerPolicies"][0]["maxAllowed"].update(cpu="lots"),
])
def test_invalid_objects_are_rejected_by_the_schema(mutate):
    import copy

    import jsonschema

    vpa = copy.deepcopy(UPSTREAM_VPA)
    mutate(vpa)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(vpa, schema("autoscaling.k8s.io_verticalpodautoscalers.yaml"))
