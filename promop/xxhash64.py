"""XXH64 (seed 0), the hash upstream names volumes with (k8s.ResourceNamer.UniqueDNS1123Label).

Written from the public XXH64 specification; checked against upstream's own
expected names (e.g. "name" -> 6c5f7b2e, "some-secret" -> 3556f148). A pure
function over bytes: no I/O, no dependencies.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1
_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P3 = 1609587929392839161
_P4 = 9650029242287828579
_P5 = 2870177450012600261


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _MASK
    return (_rotl(acc, 31) * _P1) & _MASK


def _merge(acc: int, value: int) -> int:
    acc ^= _round(0, value)
    return (acc * _P1 + _P4) & _MASK


def _lane(data: bytes, at: int, size: int = 8) -> int:
    return int.from_bytes(data[at:at + size], "little")


def _stripes(data: bytes, seed: int) -> tuple[int, int]:
    """(accumulator, bytes consumed) of the 32-byte stripes."""
    if len(data) < 32:
        return (seed + _P5) & _MASK, 0
    acc = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed & _MASK, (seed - _P1) & _MASK]
    i = 0
    while i + 32 <= len(data):
        acc = [_round(a, _lane(data, i + 8 * j)) for j, a in enumerate(acc)]
        i += 32
    h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _MASK
    for a in acc:
        h = _merge(h, a)
    return h, i


def xxh64(data: bytes, seed: int = 0) -> int:
    """The 64-bit XXH64 digest of `data`."""
    h, i = _stripes(data, seed)
    n = len(data)
    h = (h + n) & _MASK
    while i + 8 <= n:
        h ^= _round(0, _lane(data, i))
        h = (_rotl(h, 27) * _P1 + _P4) & _MASK
        i += 8
    if i + 4 <= n:
        h ^= (_lane(data, i, 4) * _P1) & _MASK
        h = (_rotl(h, 23) * _P2 + _P3) & _MASK
        i += 4
    for byte in data[i:]:
        h ^= (byte * _P5) & _MASK
        h = (_rotl(h, 11) * _P1) & _MASK
    h ^= h >> 33
    h = (h * _P2) & _MASK
    h ^= h >> 29
    h = (h * _P3) & _MASK
    return h ^ (h >> 32)
