"""The MemHpa CustomResourceDefinition (`memhpas.autoscaling.promop.dev`), built as data.

`crds/autoscaling.promop.dev_memhpas.yaml` is this dict dumped (a test keeps
them equal). Bounds that MemHpa corrects (minReplicas < 1, a target outside
1..100) are deliberately not schema errors: the controller corrects them and
says so, as the original did, without rewriting the user's spec.
"""

from __future__ import annotations

import yaml

from promop.autoscale.memhpa import GROUP, KIND, PLURAL, VERSION
from promop.kube.resources import Resource

MEMHPAS = Resource(GROUP, VERSION, PLURAL, kind=KIND)
FILE_NAME = f"{GROUP}_{PLURAL}.yaml"

_POLICY = {"type": "object", "required": ["type", "value", "periodSeconds"], "properties": {
    "type": {"type": "string", "enum": ["Pods", "Percent"]},
    "value": {"type": "integer", "format": "int32", "minimum": 1},
    "periodSeconds": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 1800}}}
_RULES = {"type": "object", "properties": {
    "stabilizationWindowSeconds": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 3600},
    "selectPolicy": {"type": "string", "enum": ["Max", "Min", "Disabled"]},
    "policies": {"type": "array", "items": _POLICY, "x-kubernetes-list-type": "atomic"},
    "tolerance": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}}}
_CONDITION = {"type": "object", "required": ["type", "status"], "properties": {
    "type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"},
    "message": {"type": "string"}, "lastTransitionTime": {"type": "string", "format": "date-time"}}}


def crd() -> dict:
    spec_props = {
        "scaleTargetRef": {
            "type": "object", "required": ["kind", "name"],
            "description": "The workload to scale: a Deployment, StatefulSet, ReplicaSet or any resource with "
                           "a scale subresource, in the MemHpa's namespace.",
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                           "name": {"type": "string"}}},
        "minReplicas": {"type": "integer", "format": "int32",
                        "description": "Lower bound (default 1; values below 1 are corrected to 1)."},
        "maxReplicas": {"type": "integer", "format": "int32",
                        "description": "Upper bound (below minReplicas: corrected to minReplicas + 4)."},
        "targetUtilizationPercentage": {
            "type": "integer", "format": "int32",
            "description": "Target memory use as a percentage of the pods' memory limits (or requests); "
                           "default 80, values outside 1..100 are corrected to 80."},
        "utilizationBase": {"type": "string", "enum": ["limits", "requests"], "default": "limits",
                            "description": "Divide usage by the containers' memory limits (default, as MemHpa) "
                                           "or requests."},
        "behavior": {"type": "object", "description": "autoscaling/v2 behavior; when set it replaces the "
                                                      "3 min up / 5 min down cool-down.",
                     "properties": {"scaleUp": _RULES, "scaleDown": _RULES}},
        "query": {"type": "string",
                  "description": "PromQL giving per-pod memory in bytes, labelled by pod; {{namespace}} and "
                                 "{{pods}} (a regex of the target's pod names) are substituted. Default: the "
                                 "working set of the pods' containers from cAdvisor."},
    }
    status_props = {
        "observedGeneration": {"type": "integer", "format": "int64"},
        "currentReplicas": {"type": "integer", "format": "int32"},
        "desiredReplicas": {"type": "integer", "format": "int32"},
        "currentMemoryUtilizationPercentage": {"type": "integer", "format": "int32"},
        "currentAverageMemory": {"type": "string"},
        "lastScaleTime": {"type": "string", "format": "date-time"},
        "conditions": {"type": "array", "items": _CONDITION, "x-kubernetes-list-type": "map",
                       "x-kubernetes-list-map-keys": ["type"]},
    }
    columns = [
        {"name": "Reference", "type": "string", "jsonPath": ".spec.scaleTargetRef.name"},
        {"name": "Kind", "type": "string", "jsonPath": ".spec.scaleTargetRef.kind", "priority": 1},
        {"name": "Target", "type": "integer", "jsonPath": ".spec.targetUtilizationPercentage"},
        {"name": "Utilization", "type": "integer", "jsonPath": ".status.currentMemoryUtilizationPercentage"},
        {"name": "MinPods", "type": "integer", "jsonPath": ".spec.minReplicas"},
        {"name": "MaxPods", "type": "integer", "jsonPath": ".spec.maxReplicas"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.currentReplicas"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": KIND, "listKind": f"{KIND}List", "plural": PLURAL, "singular": KIND.lower(),
                      "shortNames": ["mhpa"], "categories": ["all"]},
            "scope": "Namespaced",
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "MemHpa scales a workload on the memory its pods use, read from Prometheus.",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": {"type": "object", "required": ["scaleTargetRef", "maxReplicas"],
                                 "properties": spec_props},
                        "status": {"type": "object", "properties": status_props},
                    }}},
            }],
        },
    }


def crd_yaml() -> str:
    return yaml.safe_dump(crd(), sort_keys=False, default_flow_style=False, width=120)


if __name__ == "__main__":  # python3 -m promop.autoscaler.crd > crds/autoscaling.promop.dev_memhpas.yaml
    print(crd_yaml(), end="")
