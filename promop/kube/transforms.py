"""What an informer does to each object before caching it, and the per-page pass.

The default transform drops metadata.managedFields: large, and nobody reads
it (client-go informers strip it too). `keyed_page` transforms a whole LIST
page and keys each object in the same pass, while the page's objects are
still hot in the CPU cache.
"""

from __future__ import annotations

import logging
from typing import Callable

from promop.kube.logfields import kv
from promop.kube.store import object_key

log = logging.getLogger("promop.kube.reflector")

Transform = Callable[[dict], dict]


def strip_managed_fields(obj: dict) -> dict:
    """The default transform: drop metadata.managedFields (large, and nobody reads it)."""
    meta = obj.get("metadata")
    if type(meta) is dict and "managedFields" in meta:
        del meta["managedFields"]
    return obj


def drops_managed_fields(transform: Transform | None) -> bool:
    """Whether `transform` drops metadata.managedFields (so a LIST may cut them out before decoding):
    the default, or a transform marked `strips_managed_fields = True`; any other transform gets them
    as the server sent them."""
    return transform is strip_managed_fields or getattr(transform, "strips_managed_fields", False) is True


def keyed_page(items: list[dict], transform: Transform | None, where: str) -> list:
    """[key, object, key, object, ...] for a LIST page, each object transformed.

    A flat list rather than (key, object) pairs: a tuple holding a dict is
    one more object for the garbage collector to track, per cached object.
    A failing transform keeps the object as it came; an object without a
    name is dropped. Both are logged with `where` (the informer's name).
    """
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
