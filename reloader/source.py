"""Reading the input config: optional gunzip and UTF-8 validation, streamed.

Errors become InputError with a message that names the file, the problem and
what happens next, so an operator reading the sidecar's log knows what to fix.
"""
from __future__ import annotations

import codecs
import gzip
import zlib
from typing import BinaryIO, Iterator

GZIP_MAGIC = b"\x1f\x8b\x08"
CHUNK_SIZE = 1 << 20


class InputError(Exception):
    """The input config cannot be turned into an output; the last output stays."""


def is_gzip(head: bytes) -> bool:
    return head.startswith(GZIP_MAGIC)


def _raw_chunks(stream: BinaryIO, path: str, gzipped: bool) -> Iterator[bytes]:
    if not gzipped:
        while chunk := stream.read(CHUNK_SIZE):
            yield chunk
        return
    reader = gzip.GzipFile(fileobj=stream, mode="rb")
    try:
        while True:
            try:
                chunk = reader.read(CHUNK_SIZE)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(
                    f"config file {path} starts with the gzip magic bytes but cannot be "
                    f"decompressed ({exc}); fix the input, the previous output is kept"
                ) from exc
            if not chunk:
                return
            yield chunk
    finally:
        reader.close()


def decoded_chunks(stream: BinaryIO, path: str) -> Iterator[bytes]:
    """Yield the config's bytes, gunzipped if needed, after checking they are UTF-8."""
    head = stream.read(len(GZIP_MAGIC))
    stream.seek(0)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    offset = 0
    for chunk in _raw_chunks(stream, path, is_gzip(head)):
        _check_utf8(decoder, chunk, offset, path, final=False)
        offset += len(chunk)
        yield chunk
    _check_utf8(decoder, b"", offset, path, final=True)


def _check_utf8(decoder: codecs.IncrementalDecoder, chunk: bytes, offset: int, path: str, final: bool) -> None:
    try:
        decoder.decode(chunk, final)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"config file {path} is not valid UTF-8 (after gunzip) near byte {offset + exc.start}: "
            f"{exc.reason}; fix the input, the previous output is kept"
        ) from exc
