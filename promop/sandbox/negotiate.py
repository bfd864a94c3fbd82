"""Accept-header negotiation: full objects, PartialObjectMetadata(List), or a Table."""

from __future__ import annotations

FULL, PARTIAL, TABLE = "full", "partial", "table"


def response_format(accept: str | None) -> str:
    """The first media range we can serve, in the client's order (JSON only, no protobuf)."""
    if not accept:
        return FULL
    for media_range in accept.split(","):
        parts = [p.strip() for p in media_range.split(";")]
        media = parts[0].lower()
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if media not in ("application/json", "*/*", "application/*"):
            continue
        shape = params.get("as")
        if shape is None:
            return FULL
        if shape in ("PartialObjectMetadata", "PartialObjectMetadataList") and \
                params.get("g", "meta.k8s.io") == "meta.k8s.io":
            return PARTIAL
        if shape == "Table" and params.get("g", "meta.k8s.io") == "meta.k8s.io":
            return TABLE
        # APIGroupDiscoveryList and other shapes: fall through to the client's next choice
    return FULL
