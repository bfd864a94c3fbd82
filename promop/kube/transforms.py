"""What an informer does to each object before caching it, and the fused per-page pass.

The default is `strip_and_share`: drop metadata.managedFields (large, and
nobody reads it; client-go informers strip it too) and intern the metadata
strings that repeat across objects. `keyed_page` applies a transform to a
whole LIST page and keys each object in the same pass, while the page is
still in the CPU cache; for the default transform it skips the per-object
guard and key function, because at 10,000 objects every call per object shows.
"""

from __future__ import annotations

import logging
import sys
from typing import Callable

from promop.kube.logfields import kv
from promop.kube.store import object_key

log = logging.getLogger("promop.kube.reflector")

Transform = Callable[[dict], dict]

_intern = sys.intern
_str = str


def strip_managed_fields(obj: dict) -> dict:
    """The default transform: drop metadata.managedFields (large, and nobody reads it)."""
    meta = obj.get("metadata")
    if type(meta) is dict and "managedFields" in meta:
        del meta["managedFields"]
    return obj


def share_strings(obj: dict) -> dict:
    """Intern the metadata strings that repeat across objects, in place.

    Namespace, kind, apiVersion, creation time, generateName and label values
    recur in thousands of objects; each JSON decode makes a fresh copy.
    Interned, the cache holds one. Dict keys need nothing: orjson already
    shares them. All of these are short by API validation (at most 63
    characters, or 253 for a namespace-like name), so interning is cheap.
    Strings are immutable, so readers cannot tell; unused interned strings
    are freed.
    """
    value = obj.get("apiVersion")
    if type(value) is str:
        obj["apiVersion"] = _intern(value)
    value = obj.get("kind")
    if type(value) is str:
        obj["kind"] = _intern(value)
    meta = obj.get("metadata")
    if type(meta) is not dict:
        return obj
    for field in ("namespace", "creationTimestamp", "generateName"):
        value = meta.get(field)
        if type(value) is str:
            meta[field] = _intern(value)
    labels = meta.get("labels")
    if labels and type(labels) is dict:
        for key, value in labels.items():  # values only: same keys, so no resize while iterating
            if type(value) is str:
                labels[key] = _intern(value)
    return obj


def strip_and_share(obj: dict) -> dict:
    """`strip_managed_fields` then `share_strings`, in one call."""
    meta = obj.get("metadata")
    if type(meta) is dict and "managedFields" in meta:
        del meta["managedFields"]
    return share_strings(obj)


def drops_managed_fields(transform: Transform | None) -> bool:
    """Whether `transform` is one of ours that drops metadata.managedFields (so a LIST may cut
    them out before decoding; any other transform gets them as the server sent them)."""
    return transform is strip_managed_fields or transform is strip_and_share


def chain(first: Transform | None, second: Transform | None) -> Transform | None:
    """`second(first(obj))`, with the default pair recognised (so `keyed_page` takes its fast path)."""
    if first is strip_managed_fields and second is share_strings:
        return strip_and_share
    if first is None or second is None:
        return first or second
    return lambda obj: second(first(obj))


def keyed_page(items: list[dict], transform: Transform | None, where: str) -> list:
    """[key, object, key, object, ...] for a LIST page, each object transformed.

    A flat list rather than (key, object) pairs: a tuple holding a dict is
    one more object for the garbage collector to scan, per cached object.
    A failing transform keeps the object as it came; an object without a
    name is dropped. Both are logged with `where` (the informer's name).
    """
    if transform is strip_and_share:
        return _default_keyed_page(items, where)
    out: list = []
    append = out.append
    for obj in items:
        if transform is not None:
            obj = transformed(obj, transform, where)
        try:
            key = object_key(obj)
        except ValueError as exc:
            log.error("informer skipped a listed object", extra=kv(informer=where, err=exc))
            continue
        append(key)
        append(obj)
    return out


def transformed(obj: dict, transform: Transform, where: str) -> dict:
    """`transform(obj)`; if the hook fails, the object as it came (and an error log saying so)."""
    try:
        return transform(obj)
    except Exception as exc:  # noqa: BLE001 - a buggy hook must not stop the informer
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        log.error("informer transform failed; keeping the object untransformed", extra=kv(
            informer=where, namespace=meta.get("namespace"), name=meta.get("name"), err=exc))
        return obj


def _default_keyed_page(items: list[dict], where: str) -> list:
    """`keyed_page` for `strip_and_share`: the same result, without the per-object
    `transformed` guard and `object_key` call (the checks are made once, here)."""
    out: list = []
    append = out.append
    str_ = _str
    for obj in items:
        try:
            meta = obj["metadata"]
            name = meta["name"]
        except (KeyError, TypeError):
            meta, name = None, None
        ns = meta.get("namespace") if type(meta) is dict else None
        if type(meta) is not dict or type(name) is not str_ or not name or (ns is not None and type(ns) is not str_):
            # the rare odd object: the plain path says what is wrong with it
            out.extend(keyed_page([obj], _strip_then_share, where))
            continue
        if "managedFields" in meta:
            del meta["managedFields"]
        share_strings(obj)
        append(meta["namespace"] + "/" + name if ns else name)
        append(obj)
    return out


def _strip_then_share(obj: dict) -> dict:
    """`strip_and_share` under another identity, so that `keyed_page` takes its plain path."""
    return strip_and_share(obj)
