"""Accept-header negotiation: full objects, PartialObjectMetadata(List), or a Table."""

from __future__ import annotations

from promop.kube import discovery as disco

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


def discovery_format(accept: str | None, aggregated: bool) -> str:
    """For a discovery path: `v2`/`v2beta1` (an APIGroupDiscoveryList, only `/api` and `/apis` serve
    it: `aggregated`), `legacy`, or `not-acceptable` (406), in the client's order as the apiserver
    negotiates (kubectl 1.26+ sends v2, v2beta1, then plain JSON; kube-aggregator v2beta1 alone)."""
    answer = disco.negotiate(accept, aggregated=aggregated)
    if answer == disco.NOT_ACCEPTABLE and any(
            m.split(";")[0].strip().lower() in ("application/yaml", "application/vnd.kubernetes.protobuf")
            and "as=" not in m for m in (accept or "").split(",")):
        return disco.LEGACY   # the apiserver would answer YAML or protobuf: the sandbox answers JSON, as elsewhere
    return answer
