"""What the Prometheus and Alertmanager StatefulSets share. The image: one rule for both (upstream's `operator.BuildImagePathForAgent`
order: spec.image, else baseImage with sha, tag or version, else the operator's default base and version)."""

from __future__ import annotations

import pytest

from promop.render.alertmanager.common import DEFAULT_ALERTMANAGER_BASE_IMAGE, DEFAULT_ALERTMANAGER_VERSION
from promop.render.alertmanager.model import AMRenderOptions
from promop.render.alertmanager.statefulset import image as alertmanager_image
from promop.render.model import RenderOptions
from promop.render.statefulset import image as prometheus_image

CASES = [
    # (spec, expected with base "B")
    ({"image": "my/image:1", "baseImage": "x", "tag": "t", "sha": "abc", "version": "v1"}, "my/image:1"),
    ({"baseImage": "x", "sha": "abc", "tag": "t", "version": "v1"}, "x@sha256:abc"),
    ({"baseImage": "x", "tag": "t", "version": "v1"}, "x:t"),
    ({"baseImage": "x", "version": "v1.2.3"}, "x:v1.2.3"),
    ({"version": "v1.2.3"}, "B:v1.2.3"),
    ({"sha": "abc"}, "B@sha256:abc"),
]


@pytest.mark.parametrize("spec,expected", CASES)
def test_prometheus_and_alertmanager_images_follow_one_rule(spec, expected):
    assert prometheus_image(spec, RenderOptions(prometheus_default_base_image="B")) == expected
    assert alertmanager_image(spec, AMRenderOptions(alertmanager_default_base_image="B")) == expected


def test_without_a_version_each_gets_its_own_default():
    assert alertmanager_image({}, AMRenderOptions()) == f"{DEFAULT_ALERTMANAGER_BASE_IMAGE}:{DEFAULT_ALERTMANAGER_VERSION}"
    prom = prometheus_image({}, RenderOptions(prometheus_default_base_image="B"))
    assert prom.startswith("B:v") and prom != f"B:{DEFAULT_ALERTMANAGER_VERSION}"


def test_an_image_never_asks_for_the_default_version():
    # a spec.image with an unusable spec.version still renders the image (the version is reported elsewhere)
    assert prometheus_image({"image": "i", "version": 3}, RenderOptions()) == "i"


# ---- the shared StatefulSet spec keeps each kind's own governing Service --------------------------

def _prometheus(spec: dict) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": spec}


def _alertmanager(spec: dict) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u2"}, "spec": spec}


@pytest.mark.parametrize("spec,prometheus_service,alertmanager_service", [
    ({}, "prometheus-operated", "alertmanager-operated"),  # upstream's governing Services
    ({"serviceName": "mine"}, "mine", "mine"),
])
def test_each_statefulset_names_its_own_governing_service(spec, prometheus_service, alertmanager_service):
    from promop.render.alertmanager.statefulset import build_statefulset as build_am
    from promop.render.statefulset import build_statefulsets

    prom = build_statefulsets(_prometheus({"version": "v2.45.0", **spec}), RenderOptions(), [], [], "h")[0]
    am = build_am(_alertmanager({"version": "v0.27.0", **spec}), AMRenderOptions(), [], "h")
    assert prom["spec"]["serviceName"] == prometheus_service
    assert am["spec"]["serviceName"] == alertmanager_service
    assert am["metadata"]["annotations"]["prometheus-operator-input-hash"] == "h"
