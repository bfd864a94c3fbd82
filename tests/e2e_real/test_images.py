"""The images every node pulls (issue 30 item 2): the reloader's own image stays small, since
each Prometheus and Alertmanager pod pulls it for its sidecar (docs/reloader.md, "Image")."""
from __future__ import annotations

import realkube

from .stack import record

RELOADER_IMAGE_MAX_MB = 150


def test_the_reloader_image_is_small_and_runs_every_sidecar(real_cluster):
    size = realkube.image_size_bytes(real_cluster.reloader_image)
    assert size is not None, f"no tarball for {real_cluster.reloader_image}"
    promop = realkube.image_size_bytes(real_cluster.image)
    record("reloader image uncompressed MB", round(size / 1e6))
    if promop:
        record("promop image uncompressed MB", round(promop / 1e6))
    assert real_cluster.reloader_image != real_cluster.image, "the tier must run the reloader's own image"
    assert size <= RELOADER_IMAGE_MAX_MB * 1e6, f"reloader image {size / 1e6:.0f} MB > {RELOADER_IMAGE_MAX_MB} MB"
