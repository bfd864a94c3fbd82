"""Change detection: SHA-256 over paths and contents, as upstream does.

Each file contributes 0xff + path + 0xff + content, so renames and content
changes both change the hash.
"""
from __future__ import annotations

import hashlib
import os
from typing import BinaryIO, Collection, Sequence

_SEP = b"\xff"
_BLOCK = 1 << 20


def add_stream(h: "hashlib._Hash", path: str, stream: BinaryIO) -> None:
    h.update(_SEP + os.fsencode(path) + _SEP)
    while block := stream.read(_BLOCK):
        h.update(block)


def dirs_digest(dirs: Sequence[str], exclude: Collection[str] = ()) -> str:
    """Hash every regular file (symlinks followed) under the watched directories.

    Kubelet's own `..<timestamp>` and `..data` entries are skipped: the visible
    names are symlinks through them, so contents are still covered exactly once
    and a swap that leaves contents unchanged does not look like a change.
    A file that disappears while walking is skipped: its removal is an event
    that triggers another pass. `exclude` (absolute paths) keeps the config
    file out: it is covered by its own digest, which only moves once the
    config could be rendered.
    """
    h = hashlib.sha256()
    for top in dirs:
        for path in _files(top):
            if os.path.abspath(path) in exclude:
                continue
            try:
                with open(path, "rb") as stream:
                    add_stream(h, path, stream)
            except (FileNotFoundError, IsADirectoryError):
                continue
    return h.hexdigest()


def _files(top: str) -> list[str]:
    found: list[str] = []
    try:
        entries = sorted(os.scandir(top), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return found
    for entry in entries:
        if entry.name.startswith(".."):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                found.extend(_files(entry.path))
            elif entry.is_file(follow_symlinks=True):
                found.append(entry.path)
        except OSError:
            continue
    return found
