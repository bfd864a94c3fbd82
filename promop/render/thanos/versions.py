"""Thanos versions and images: the defaults upstream 0.93 assumes and its version gates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.versions import Version, VersionError

DEFAULT_THANOS_VERSION = "v0.42.4"  # the Thanos release upstream 0.93 pins (go.mod)
DEFAULT_THANOS_BASE_IMAGE = "quay.io/thanos/thanos"

HTTP_CLIENT_FILE_SINCE = "0.24.0"  # --prometheus.http-client-file
TLS_CIPHERS_CURVES_SINCE = "0.42.0"  # --grpc-server-tls-ciphers / --grpc-server-tls-curves
DELAYED_COMPACTION_THANOS_SINCE = "0.41.0"  # the shipper writes a meta file Prometheus can wait on
DELAYED_COMPACTION_PROMETHEUS_SINCE = "3.9.0"  # --storage.tsdb.delay-compact-file.path


class ThanosVersionError(ValueError):
    """A Thanos version that is not a semantic version."""


def thanos_version(text: str | None, field: str = "spec.thanos.version") -> Version:
    """The parsed Thanos version (the default when unset); one-line error when unparsable."""
    try:
        version = Version(text or DEFAULT_THANOS_VERSION)
        if any(len(part) > 1 and part.isdigit() and part.startswith("0") for part in version.pre.split(".")):
            raise VersionError("a numeric pre-release identifier has a leading zero")  # invalid in semver
        return version
    except VersionError:
        raise ThanosVersionError(f"{field}: {text!r} is not a Thanos version; use a form like "
                                 f"{DEFAULT_THANOS_VERSION}") from None


def thanos_image(spec: Mapping[str, Any], default_base: str = DEFAULT_THANOS_BASE_IMAGE) -> str:
    """image wins; else <baseImage>@sha256:<sha>, <baseImage>:<tag>, <baseImage>:<version> (upstream's order)."""
    if spec.get("image"):
        return spec["image"]
    base = spec.get("baseImage") or default_base
    if spec.get("sha"):
        return f"{base}@sha256:{spec['sha']}"
    if spec.get("tag"):
        return f"{base}:{spec['tag']}"
    return f"{base}:{spec.get('version') or DEFAULT_THANOS_VERSION}"
