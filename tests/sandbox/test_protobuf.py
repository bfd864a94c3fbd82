"""The protobuf subset kubectl's generators send, decoded without kubectl."""

from __future__ import annotations

from promop.sandbox import protobuf


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, value) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    value = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(value)) + value


def entry(key: str, value) -> bytes:
    return field(1, key) + field(2, value)


def envelope(kind: str, raw: bytes) -> bytes:
    return protobuf.MAGIC + field(1, field(1, "v1") + field(2, kind)) + field(2, raw)


def test_config_map():
    meta = field(1, "cfg") + field(2, "") + field(3, "ns") + field(11, entry("app", "x"))
    raw = field(1, meta) + field(2, entry("a", "b")) + field(2, entry("c", "d")) + field(4, 1)
    assert protobuf.decode(envelope("ConfigMap", raw)) == {
        "apiVersion": "v1", "kind": "ConfigMap", "immutable": True,
        "metadata": {"name": "cfg", "namespace": "ns", "labels": {"app": "x"}},
        "data": {"a": "b", "c": "d"}}


def test_secret_bytes_become_base64():
    raw = field(1, field(1, "s")) + field(2, entry("k", b"\x00\xff")) + field(3, "Opaque")
    decoded = protobuf.decode(envelope("Secret", raw))
    assert decoded["data"] == {"k": "AP8="} and decoded["type"] == "Opaque"


def test_unsupported_kinds_and_non_envelopes_are_none():
    assert protobuf.decode(envelope("Deployment", b"")) is None
    assert protobuf.decode(b"{}") is None
