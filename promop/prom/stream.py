"""Decode a large `{"status":..., "data": [ {...}, {...} ]}` answer batch by batch.

A `/api/v1/series` answer for a big Prometheus is tens of megabytes; decoded
whole it costs several times that in Python objects. This reads the body as it
arrives and decodes the `data` array a batch of objects at a time, so memory
stays near one batch plus whatever the caller keeps.

Batches end at a `},{"` boundary. That byte sequence can also occur inside a
label value (`"x},{"` ends a string), but a cut there leaves an unterminated
string, which the JSON decoder refuses; the decoder then tries an earlier
boundary or waits for more bytes. So a batch is only ever whole objects.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import orjson

_BOUNDARY = b'},{"'
_TRIES = 8


class StreamDecodeError(ValueError):
    pass


def _decode_prefix(buf: bytearray, end: int) -> list[Any] | None:
    """Decode buf[0:end+1] as a JSON array (buf[0] is '[' or ','; buf[end] is '}'), or None."""
    first = buf[0]
    buf[0] = 0x5B  # '['
    after = buf[end + 1]
    buf[end + 1] = 0x5D  # ']'
    try:
        with memoryview(buf) as whole, whole[: end + 2] as view:
            return orjson.loads(view)
    except orjson.JSONDecodeError:
        return None
    finally:
        buf[0] = first
        buf[end + 1] = after


def iter_data_batches(chunks: Iterable[bytes], batch_bytes: int = 1 << 20,
                      field: bytes = b'"data":') -> Iterator[list[Any]]:
    """Yield the elements of the top-level `data` array in batches, as the bytes arrive.

    Elements must be JSON objects (as in /api/v1/series). The final batch may
    be empty. Raises StreamDecodeError when the body is not such a document.
    """
    buf = bytearray()
    started = False
    chunks = iter(chunks)
    for chunk in chunks:
        if not chunk:
            continue
        buf += chunk
        if not started:
            at = buf.find(field)
            if at < 0:
                if len(buf) > (1 << 16):
                    raise StreamDecodeError("no data array in the first 64KiB of the answer")
                continue
            i = at + len(field)
            while i < len(buf) and buf[i] in b" \t\r\n":
                i += 1
            if i >= len(buf):
                continue
            if buf[i] != 0x5B:  # not an array (null, or something else): decode at the end
                started = None  # type: ignore[assignment]
                break
            del buf[:i]  # buf now starts with '['
            started = True
        if len(buf) < batch_bytes:
            continue
        end = len(buf)
        for _ in range(_TRIES):
            cut = buf.rfind(_BOUNDARY, 1, end)
            if cut < 0:
                break
            items = _decode_prefix(buf, cut)
            if items is not None:
                del buf[: cut + 1]  # buf starts with ',' before the next object
                yield items
                break
            end = cut
    if started is None:
        for chunk in chunks:  # drain what is left, then decode whole
            buf += chunk
        started = False
    if not started:
        try:
            doc = orjson.loads(bytes(buf))
        except orjson.JSONDecodeError as exc:
            raise StreamDecodeError(f"answer is not JSON: {exc}") from None
        data = doc.get("data") if isinstance(doc, dict) else None
        yield list(data or [])
        return
    # The rest is `[` or `,` + last objects + `]` + the end of the top-level object.
    if buf[:1] == b",":
        buf[0] = 0x5B
    try:
        doc = orjson.loads(b'{"data":' + bytes(buf))
    except orjson.JSONDecodeError as exc:
        raise StreamDecodeError(f"answer is not JSON (truncated?): {exc}") from None
    yield list(doc.get("data") or [])
