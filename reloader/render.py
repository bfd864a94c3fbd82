"""Input config to output file: gunzip if needed, check UTF-8, expand $(VAR), write atomically."""
from __future__ import annotations

from typing import BinaryIO, Mapping

from .atomic import write_atomically
from .envsubst import Expansion, expand_chunks
from .source import InputError, decoded_chunks


def render(stream: BinaryIO, path: str, out: str, env: Mapping[bytes, bytes]) -> tuple[int, Expansion]:
    """Stream `stream` (the file at `path`) into `out`; memory stays at a few chunks.

    Raises InputError for bad input and OutputError for an unwritable output;
    in both cases `out` is left as it was.
    """
    expansion = Expansion()
    try:
        size = write_atomically(out, expand_chunks(decoded_chunks(stream, path), env, expansion))
    except OSError as exc:  # reading the input failed; output errors are OutputError
        raise InputError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    return size, expansion


def render_file(path: str, out: str, env: Mapping[bytes, bytes]) -> tuple[int, Expansion]:
    try:
        stream = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot open config file {path}: {exc.strerror or exc}") from exc
    with stream:
        return render(stream, path, out, env)
