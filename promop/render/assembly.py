"""The monitors' part of the config, assembled from their fragments, and patched after an edit.

build_config (promop.render.generate) concatenates every accepted fragment's jobs and texts,
collects rejections, warnings and TLS assets, and cuts the text into gzip pieces
(promop.render.config.pieces). At 30,000 monitors doing that from scratch was a large share of
an edit's sync. With a memo (kept by the render cache) the fragments list is compared with the
last one by position (promop.render.listdiff's way: the render cache hands over the same
Fragment while a monitor is unchanged), and an edit that keeps a monitor's identity, job count
and job names and has no rejection, warning or asset before or after replaces its jobs, texts
and group in place, and only the pieces holding them are rebuilt. Anything else assembles again.
The result is the same either way (tests/render/test_assembly.py).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from itertools import chain, compress
from operator import is_not
from typing import TYPE_CHECKING

from promop.render.listdiff import change_limit
from promop.render.model import Problem

if TYPE_CHECKING:
    from promop.render.generate import Fragment

# A job group whose key's CRC-32 is a multiple of this ends a piece (and gzip member): about 32
# monitors' jobs a piece, cut where only the groups themselves decide (promop.render.config).
MEMBER_GROUPS = 32


class Assembled:
    """Every accepted fragment's job names and group (key and texts), in order, with what was rejected or warned.
    Shared with the renders' results: read-only once returned."""

    __slots__ = ("frags", "job_count", "job_names", "groups", "rejected", "warnings", "assets", "taken", "group_at")

    def __init__(self) -> None:
        self.frags: list = []
        self.job_count = 0
        self.job_names: dict[tuple[str, str, str], list[str]] = {}
        self.groups: list[tuple[str, list[str]]] = []
        self.rejected: list[Problem] = []
        self.warnings: list[Problem] = []
        self.assets: dict[str, str] = {}
        self.taken: set[str] = set()  # every job name
        self.group_at: list[int] = []  # per fragment: its place in `groups` (-1: rejected)


def assemble(fragments: Sequence["Fragment"], last: Assembled | None = None) -> Assembled:
    """The fragments assembled; patched from `last` (the previous call's result) where it can be."""
    if last is not None and len(fragments) == len(last.frags):
        changed = list(compress(range(len(fragments)), map(is_not, fragments, last.frags)))
        if len(changed) <= change_limit(len(fragments)) and all(_in_place(last.frags[i], fragments[i]) for i in changed):
            return _patched(fragments, last, changed)
    return _assembled(fragments)


def _in_place(old: "Fragment", new: "Fragment") -> bool:
    """Can `new` take `old`'s place without moving anything else or touching the collected problems?"""
    return not (old.rejected or new.rejected or old.warnings or new.warnings or old.assets or new.assets) \
        and old.identity == new.identity and len(old.texts) == len(new.texts) and old.job_names == new.job_names


def _patched(fragments: Sequence["Fragment"], last: Assembled, changed: list[int]) -> Assembled:
    out = Assembled()
    out.frags, out.job_count, out.groups = list(fragments), last.job_count, list(last.groups)
    out.job_names = last.job_names
    out.rejected, out.warnings, out.assets, out.taken = last.rejected, last.warnings, last.assets, last.taken
    out.group_at = last.group_at
    for i in changed:
        frag = fragments[i]
        out.groups[last.group_at[i]] = frag.group  # its job_names entry is equal (an _in_place condition)
    return out


def _assembled(fragments: Sequence["Fragment"]) -> Assembled:
    out = Assembled()
    out.frags = list(fragments)
    groups, job_names = out.groups, out.job_names
    rejected, warnings, assets = out.rejected, out.warnings, out.assets
    group_at = out.group_at
    for frag in fragments:  # once per selected monitor: what it needs is precomputed in the Fragment
        if frag.rejected:
            rejected += frag.rejected
            warnings += frag.warnings
            group_at.append(-1)
            continue
        if frag.warnings:
            warnings += frag.warnings
        group_at.append(len(groups))
        out.job_count += len(frag.job_names)
        if frag.assets:
            assets.update(frag.assets)
        job_names[frag.identity] = frag.job_names
        groups.append(frag.group)
    out.taken = set(chain.from_iterable(job_names.values()))
    return out


# ---- the config text's pieces -------------------------------------------------------------------

Piece = tuple  # strings whose concatenation is one stretch of the config text


class Pieces:
    """The last config's pieces and, per group, the run piece it is in (run pieces span groups
    [start, end) in `runs`)."""

    __slots__ = ("first", "last_text", "groups", "keys", "pieces", "piece_of", "runs")

    def __init__(self) -> None:
        self.first = ""
        self.last_text: str | None = None
        self.groups: list = []
        self.keys: list[str] = []
        self.pieces: list[Piece] = []
        self.piece_of: list[int] = []
        self.runs: dict[int, tuple[int, int]] = {}


def cut(first: str, groups: Sequence[tuple[str, Sequence[str]]], last_text: str | None,
        memo: Pieces | None = None) -> Pieces:
    """[(first,), runs of groups' texts..., (last_text,)]: a run ends at a group whose key's CRC-32 is
    a multiple of MEMBER_GROUPS (and holds text). Patched from `memo` when the same keys come with
    some groups replaced."""
    if memo is not None and memo.first == first and memo.last_text == last_text and len(groups) == len(memo.groups):
        changed = list(compress(range(len(groups)), map(is_not, groups, memo.groups)))
        if len(changed) <= change_limit(len(groups)) and all(
                groups[i][0] == memo.keys[i] and len(groups[i][1]) == len(memo.groups[i][1]) for i in changed):
            return _recut(groups, memo, changed)
    return _cut(first, groups, last_text)


def _recut(groups: Sequence[tuple[str, Sequence[str]]], memo: Pieces, changed: list[int]) -> Pieces:
    out = Pieces()
    out.first, out.last_text, out.keys, out.piece_of, out.runs = memo.first, memo.last_text, memo.keys, memo.piece_of, memo.runs
    out.groups, out.pieces = list(groups), list(memo.pieces)
    for k in {memo.piece_of[i] for i in changed} - {-1}:  # -1: a group without text after the last run
        start, end = memo.runs[k]
        out.pieces[k] = tuple(chain.from_iterable(g[1] for g in groups[start:end]))
    return out


def _cut(first: str, groups: Sequence[tuple[str, Sequence[str]]], last_text: str | None) -> Pieces:
    out = Pieces()
    out.first, out.last_text, out.groups = first, last_text, list(groups)
    out.keys = [g[0] for g in groups]
    pieces: list[Piece] = [(first,)]
    run: list[str] = []
    start = 0
    for i, (key, texts) in enumerate(groups):
        run += texts
        out.piece_of.append(len(pieces))
        if zlib.crc32(key.encode()) % MEMBER_GROUPS == 0 and run:
            out.runs[len(pieces)] = (start, i + 1)
            pieces.append(tuple(run))
            run, start = [], i + 1
    if run:
        out.runs[len(pieces)] = (start, len(groups))
        pieces.append(tuple(run))
    # groups after the last run with text (none of their own) belong to no piece
    out.piece_of = [k if k in out.runs else -1 for k in out.piece_of]
    if last_text is not None:
        pieces.append((last_text,))
    out.pieces = pieces
    return out


def text_of(pieces: Sequence[Piece]) -> str:
    return "".join(chain.from_iterable(pieces))
