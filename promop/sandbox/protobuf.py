"""Just enough of Kubernetes' protobuf encoding to accept what kubectl's imperative generators
send (`kubectl create namespace|configmap|secret|serviceaccount`): the `k8s\\0` envelope and
those kinds' fields. Everything else sent as protobuf is answered with 415."""

from __future__ import annotations

from typing import Callable

from promop.sandbox.errors import bad_request

MAGIC = b"k8s\x00"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited fields."""
    out, pos = [], 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.append((number, value))
    return out


def _string(value) -> str:
    return value.decode()


def _map(decode_value: Callable) -> Callable:
    def decode(entries: list[bytes]) -> dict:
        result = {}
        for entry in entries:
            parts = dict(fields(entry))
            result[_string(parts.get(1, b""))] = decode_value(parts.get(2, b""))
        return result
    return decode


def _b64(value: bytes) -> str:
    import base64

    return base64.b64encode(value).decode()


# field number -> (json name, decoder, repeated)
Schema = dict[int, tuple[str, Callable, bool]]


def _message(schema: Schema) -> Callable:
    def decode(data: bytes) -> dict:
        grouped: dict[int, list] = {}
        for number, value in fields(data):
            grouped.setdefault(number, []).append(value)
        result = {}
        for number, values in grouped.items():
            if number not in schema:
                continue
            name, decoder, repeated = schema[number]
            if decoder is MAP_STR or decoder is MAP_BYTES:
                result[name] = decoder(values)
            elif repeated:
                result[name] = [decoder(v) for v in values]
            else:
                value = decoder(values[-1])
                if value != "":  # gogo-protobuf sends empty strings; JSON omits them
                    result[name] = value
        return result
    return decode


MAP_STR = _map(_string)
MAP_BYTES = _map(_b64)

OWNER_REFERENCE = _message({1: ("kind", _string, False), 3: ("name", _string, False),
                            4: ("uid", _string, False), 5: ("apiVersion", _string, False),
                            6: ("controller", bool, False),
                            7: ("blockOwnerDeletion", bool, False)})
OBJECT_META = _message({
    1: ("name", _string, False), 2: ("generateName", _string, False),
    3: ("namespace", _string, False), 11: ("labels", MAP_STR, False),
    12: ("annotations", MAP_STR, False), 13: ("ownerReferences", OWNER_REFERENCE, True),
    14: ("finalizers", _string, True),
})
OBJECT_REFERENCE = _message({1: ("kind", _string, False), 2: ("namespace", _string, False),
                             3: ("name", _string, False)})
LOCAL_REFERENCE = _message({1: ("name", _string, False)})

KINDS: dict[str, Callable] = {
    "Namespace": _message({1: ("metadata", OBJECT_META, False),
                           2: ("spec", _message({1: ("finalizers", _string, True)}), False)}),
    "ConfigMap": _message({1: ("metadata", OBJECT_META, False), 2: ("data", MAP_STR, False),
                           3: ("binaryData", MAP_BYTES, False), 4: ("immutable", bool, False)}),
    "Secret": _message({1: ("metadata", OBJECT_META, False), 2: ("data", MAP_BYTES, False),
                        3: ("type", _string, False), 4: ("stringData", MAP_STR, False),
                        5: ("immutable", bool, False)}),
    "ServiceAccount": _message({1: ("metadata", OBJECT_META, False),
                                2: ("secrets", OBJECT_REFERENCE, True),
                                3: ("imagePullSecrets", LOCAL_REFERENCE, True),
                                4: ("automountServiceAccountToken", bool, False)}),
}


def decode(body: bytes) -> dict | None:
    """The object in a protobuf request body, or None when its kind is not supported here."""
    if not body.startswith(MAGIC):
        return None
    try:
        unknown = dict(fields(body[len(MAGIC):]))
        type_meta = dict(fields(unknown.get(1, b"")))
        api_version, kind = _string(type_meta.get(1, b"")), _string(type_meta.get(2, b""))
        decoder = KINDS.get(kind)
        if decoder is None or api_version != "v1":
            return None
        obj = decoder(unknown.get(2, b""))
    except (IndexError, ValueError, TypeError, AttributeError) as exc:
        raise bad_request(f"the protobuf request body is malformed: {exc!r}") from None
    obj.update(apiVersion=api_version, kind=kind)
    return obj
