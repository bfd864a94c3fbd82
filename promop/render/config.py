"""The top-level Prometheus config, its YAML text and the gzipped config Secret.

Top-level order is upstream's: global, runtime, rule_files, scrape_configs,
storage, alerting, remote_write. The YAML text is assembled from per-job
fragments dumped separately (so RenderCache can reuse them); this gives the
same bytes as dumping the whole dict at once (tested).
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Mapping, Sequence
from typing import Any

from promop.render import assembly
from promop.render.assembly import MEMBER_GROUPS, Piece, text_of  # noqa: F401 - this module's API
from promop.render.emit import emit
from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import RenderOptions

CONFIG_KEY = "prometheus.yaml.gz"
RULES_DIR = "/etc/prometheus/rules"


def dump(data: Any) -> str:
    """YAML text as the renderer writes it everywhere (block style, insertion order; promop.render.emit)."""
    return emit(data)


def dump_job(job: Mapping[str, Any]) -> str:
    """One scrape job as a `- job_name: ...` item, ready to concatenate under `scrape_configs:`."""
    return dump([job])


def rule_files(rule_configmap_names: Sequence[str]) -> list[str]:
    return [f"{RULES_DIR}/{name}/*.yaml" for name in rule_configmap_names]


def assemble(head: Mapping[str, Any], job_texts: Sequence[str], tail: Mapping[str, Any]) -> str:
    """Config text from the head (global, runtime, rule_files), dumped jobs and the tail."""
    parts = [dump(dict(head)) if head else ""]
    parts.append("scrape_configs:\n" + "".join(job_texts) if job_texts else "scrape_configs: []\n")
    if tail:
        parts.append(dump(dict(tail)))
    return "".join(parts)


# A config past this many characters is gzipped as several members (below: one, as gzip.compress
# writes it), cut into pieces by promop.render.assembly: an edit, an addition or a deletion
# changes the member it falls in and no other.
SINGLE_MEMBER_CHARS = 1 << 18


def pieces(head: Mapping[str, Any], groups: Sequence[tuple[str, Sequence[str]]], tail: Mapping[str, Any]) -> list[Piece]:
    """assemble(head, job texts, tail) cut into stable pieces: the head, runs of job groups, the tail.
    Their strings, joined in order, are exactly assemble()'s text (tested)."""
    return cut_pieces(head, groups, tail).pieces


def cut_pieces(head: Mapping[str, Any], groups: Sequence[tuple[str, Sequence[str]]], tail: Mapping[str, Any],
               memo: assembly.Pieces | None = None) -> assembly.Pieces:
    """pieces() with what it takes to patch them: `memo`, the previous config's (promop.render.assembly.cut)."""
    any_jobs = any(texts for _, texts in groups)
    first = (dump(dict(head)) if head else "") + ("scrape_configs:\n" if any_jobs else "scrape_configs: []\n")
    return assembly.cut(first, groups, dump(dict(tail)) if tail else None, memo)


def compress_pieces(config_pieces: Sequence[Piece], memo: dict[Piece, bytes] | None = None) -> tuple[bytes, dict[Piece, bytes]]:
    """The gzipped config text: one gzip member per piece for a large config (RFC 1952 allows
    concatenated members; Go's gzip.Reader, Python's gzip module and the reloader read them as one
    stream), each reused from `memo` while its piece is unchanged, so an edit recompresses one
    member, not ~20 MB. A small config is one member, byte for byte what compress() gives.
    Returns the bytes and the memo of this config's pieces (the only ones worth keeping)."""
    if not _larger_than(config_pieces, SINGLE_MEMBER_CHARS):
        return compress(text_of(config_pieces)), {}
    memo = memo or {}
    fresh: dict[Piece, bytes] = {}
    for piece in config_pieces:
        gz = memo.get(piece)
        if gz is None:
            gz = gzip.compress("".join(piece).encode("utf-8"), compresslevel=6, mtime=0)
        fresh[piece] = gz
    return b"".join(fresh[piece] for piece in config_pieces), fresh


def _larger_than(config_pieces: Sequence[Piece], limit: int) -> bool:
    """Is the text longer than `limit` characters? Stops counting once it is (a large config has
    tens of thousands of strings)."""
    size = 0
    for piece in config_pieces:
        size += sum(map(len, piece))
        if size > limit:
            return True
    return False


def compress(text: str) -> bytes:
    """gzip with mtime 0, so equal configs give equal bytes; an empty config gives empty bytes."""
    if not text:
        return b""
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def config_secret(prometheus: Mapping[str, Any], options: RenderOptions, gz: bytes | None) -> dict:
    """Secret `prometheus-<name>` with key prometheus.yaml.gz (no data at all when unmanaged)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": managed_metadata(prometheus, prefixed_name(prometheus), options),
        "data": {},
    }
    if gz is not None:
        secret["data"][CONFIG_KEY] = base64.b64encode(gz).decode("ascii")
    return secret
