"""--thanos-default-base-image: the image of the Thanos sidecar and of ThanosRuler when the spec names none.

Upstream: TestThanosDefaultBaseImageFlag in pkg/thanos/statefulset_test.go and
pkg/prometheus/server/statefulset_test.go (`<flag>:<DefaultThanosVersion>`); the image fields of the spec
win in upstream's BuildImagePath order (image, then baseImage@sha, baseImage:tag, baseImage:version).
"""

from __future__ import annotations

import argparse

import pytest

from promop.host.flags import OptionsError
from promop.operator import options as operator_options
from promop.render.model import RenderInputs, RenderOptions
from promop.render.pipeline import render
from promop.render.statefulset import build_statefulsets
from promop.render.thanos.ruler_render import RulerInputs, render_ruler
from promop.render.thanos.versions import DEFAULT_THANOS_BASE_IMAGE, DEFAULT_THANOS_VERSION

FLAG = "nondefaultuseflag/quay.io/thanos/thanos"


def _ruler(spec: dict | None = None) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler",
            "metadata": {"name": "r", "namespace": "ns", "uid": "u"}, "spec": {"queryEndpoints": [""], **(spec or {})}}


def _prometheus(thanos: dict) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"thanos": thanos}}


def _ruler_image(spec: dict | None = None, options: RenderOptions = RenderOptions()) -> str:
    result = render_ruler(RulerInputs(ruler=_ruler(spec), options=options))
    return result.statefulset["spec"]["template"]["spec"]["containers"][0]["image"]


def _sidecar_image(thanos: dict, options: RenderOptions = RenderOptions()) -> str:
    sts = build_statefulsets(_prometheus(thanos), options, [], [], "h")[0]
    (sidecar,) = [c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "thanos-sidecar"]
    return sidecar["image"]


def test_render_options_default_is_upstreams_thanos_image():
    assert RenderOptions().thanos_default_base_image == DEFAULT_THANOS_BASE_IMAGE == "quay.io/thanos/thanos"


def test_flag_changes_the_thanos_ruler_image():
    assert _ruler_image() == f"quay.io/thanos/thanos:{DEFAULT_THANOS_VERSION}"
    assert _ruler_image(options=RenderOptions(thanos_default_base_image=FLAG)) == f"{FLAG}:{DEFAULT_THANOS_VERSION}"
    assert _ruler_image({"version": "v0.40.1"}, RenderOptions(thanos_default_base_image=FLAG)) == f"{FLAG}:v0.40.1"


def test_spec_image_wins_over_the_flag_for_the_ruler():
    assert _ruler_image({"image": "mine/thanos:dev"}, RenderOptions(thanos_default_base_image=FLAG)) == "mine/thanos:dev"


def test_flag_changes_the_sidecar_image():
    assert _sidecar_image({}) == f"quay.io/thanos/thanos:{DEFAULT_THANOS_VERSION}"
    assert _sidecar_image({}, RenderOptions(thanos_default_base_image=FLAG)) == f"{FLAG}:{DEFAULT_THANOS_VERSION}"


@pytest.mark.parametrize("thanos, want", [
    ({"image": "mine/thanos:dev"}, "mine/thanos:dev"),
    ({"baseImage": "base/thanos"}, f"base/thanos:{DEFAULT_THANOS_VERSION}"),
    ({"baseImage": "base/thanos", "tag": "t1"}, "base/thanos:t1"),
    ({"sha": "abc"}, f"{FLAG}@sha256:abc"),
    ({"tag": "t1", "version": "v0.40.0"}, f"{FLAG}:t1"),
    ({"version": "v0.40.0"}, f"{FLAG}:v0.40.0"),
])
def test_sidecar_spec_image_fields_win_over_the_flag(thanos, want):
    assert _sidecar_image(thanos, RenderOptions(thanos_default_base_image=FLAG)) == want


def test_flag_rolls_the_statefulsets_only_when_it_changes_something():
    ruler_hash = [render_ruler(RulerInputs(ruler=_ruler(), options=o)).input_hash
                  for o in (RenderOptions(), RenderOptions(thanos_default_base_image=FLAG))]
    assert ruler_hash[0] != ruler_hash[1]
    prom = [render(RenderInputs(prometheus=_prometheus({}), options=o)).input_hash
            for o in (RenderOptions(), RenderOptions(thanos_default_base_image=FLAG))]
    assert prom[0] != prom[1]


def _parse(*argv: str):
    parser = argparse.ArgumentParser()
    operator_options.add_flags(parser)
    return operator_options.from_args(parser.parse_args(list(argv)))


def test_operator_flag_reaches_the_render_options():
    opts = _parse(f"--thanos-default-base-image={FLAG}")
    assert opts.thanos_default_base_image == FLAG
    assert opts.render_options().thanos_default_base_image == FLAG
    assert _parse().render_options().thanos_default_base_image == "quay.io/thanos/thanos"


def test_operator_flag_empty_means_the_default_as_upstream():
    assert _parse("--thanos-default-base-image=").render_options().thanos_default_base_image == DEFAULT_THANOS_BASE_IMAGE


def test_operator_flag_with_spaces_is_refused_in_one_line():
    with pytest.raises(OptionsError, match="--thanos-default-base-image 'a b': not an image name"):
        _parse("--thanos-default-base-image=a b")


def test_all_three_default_base_image_flags_exist():
    parser = argparse.ArgumentParser()
    operator_options.add_flags(parser)
    flags = {a for action in parser._actions for a in action.option_strings}
    assert {"--prometheus-default-base-image", "--alertmanager-default-base-image",
            "--thanos-default-base-image"} <= flags
