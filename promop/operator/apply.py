"""Create-or-update of managed objects, writing only when something differs.

`Applier.apply` compares with diff.semantically_equal first; updates carry the
current resourceVersion, so a concurrent writer causes a 409 that we resolve by
re-reading, never a lost update. A StatefulSet update the API refuses as
Invalid (422: an immutable field changed) is deleted with foreground
propagation and created again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from promop.kube.client import KubeClient
from promop.kube.errors import AlreadyExists, Conflict, Invalid, NotFound
from promop.kube.resources import Resource
from promop.operator.diff import for_update, normalise, semantically_equal
from promop.host.logs import fields

log = logging.getLogger("promop.operator.apply")

CREATED, UPDATED, UNCHANGED, RECREATED, DELETED = "created", "updated", "unchanged", "recreated", "deleted"
_CONFLICT_RETRIES = 3


class RetryLater(Exception):
    """The object is in a transient state (e.g. still terminating); sync again after a backoff."""


class OwnerGone(Exception):
    """The owner of the objects being written was deleted while our cache still had it: creating objects
    for it would leak them."""


def owner_check(client: KubeClient, res: Resource, owner: dict) -> Callable[[], None]:
    """A `before_create` for the objects `owner` owns: is it (same uid) still there? A direct GET, because
    the cache may lag behind a deletion whose garbage collection already ran; creating then would leak
    objects owned by nothing. Creates are rare, so the GET is cheap. Raises OwnerGone."""
    md = owner.get("metadata") or {}
    ns, name, uid = md.get("namespace") or "", md.get("name") or "", md.get("uid")

    def check() -> None:
        try:
            live = client.get(res, name, ns)
        except NotFound:
            raise OwnerGone(f"{ns}/{name}") from None
        live_md = live.get("metadata") or {}
        if live_md.get("uid") != uid or live_md.get("deletionTimestamp"):
            raise OwnerGone(f"{ns}/{name}")
    return check


@dataclass(frozen=True)
class Applied:
    """What `Applier.apply` did: `before` is the object it compared with or wrote over (None:
    absent), `after` the server's answer to the write, or `before` when nothing was written."""

    action: str
    before: dict | None
    after: dict | None


def _name(obj: dict) -> tuple[str | None, str]:
    md = obj.get("metadata") or {}
    return md.get("namespace"), md["name"]


class Applier:
    """Writes desired objects through `client`; `on_sts_recreate` counts 422 recreations."""

    def __init__(self, client: KubeClient, on_sts_recreate: Any = None) -> None:
        self.client = client
        self.on_sts_recreate = on_sts_recreate

    def apply(self, res: Resource, desired: dict, current: dict | None, *, refetch: bool = True,
              before_create: Callable[[], None] | None = None) -> Applied:
        """Make the API hold `desired`; `current` is what we believe is there (None: absent).

        On a conflict, `refetch` GETs the object and tries again; without it (objects
        read from an informer cache) RetryLater asks for a later sync with a fresher cache.
        `before_create` runs before any create (it may raise to prevent it).
        """
        ns, name = _name(desired)
        for _ in range(_CONFLICT_RETRIES):
            if current is None:
                if before_create is not None:
                    before_create()
                try:
                    after = self.client.create(res, normalise(desired), ns)
                    log.debug("created", **fields(resource=res.label, object=f"{ns}/{name}"))
                    return Applied(CREATED, None, after)
                except AlreadyExists:
                    current = self._reread(res, name, ns, refetch, "exists but is not in our cache yet")
                    continue
            if semantically_equal(desired, current):
                return Applied(UNCHANGED, current, current)
            try:
                after = self.client.update(res, for_update(desired, current), ns)
                log.debug("updated", **fields(resource=res.label, object=f"{ns}/{name}"))
                return Applied(UPDATED, current, after)
            except Conflict:
                current = self._reread(res, name, ns, refetch, "changed since our cache saw it")
            except NotFound:
                current = None
            except Invalid as exc:
                if res.kind != "StatefulSet":
                    raise
                return Applied(RECREATED, current, self._recreate(res, desired, ns, name, exc))
        raise RetryLater(f"{res.label} {ns}/{name}: still conflicting after {_CONFLICT_RETRIES} attempts; "
                         "another writer keeps changing it")

    def _recreate(self, res: Resource, desired: dict, ns: str | None, name: str, exc: Exception) -> dict:
        log.warning("update refused as invalid: deleting and recreating",
                    **fields(resource=res.label, object=f"{ns}/{name}", error=str(exc)))
        if self.on_sts_recreate:
            self.on_sts_recreate()
        self.delete(res, name, ns, propagation_policy="Foreground")
        try:
            return self.client.create(res, normalise(desired), ns)
        except AlreadyExists:
            raise RetryLater(f"{res.label} {ns}/{name} is still being deleted; it is recreated on the next sync") \
                from None

    def delete(self, res: Resource, name: str, namespace: str | None, propagation_policy: str | None = None) -> bool:
        """Delete if present; False when it was already gone."""
        try:
            self.client.delete(res, name, namespace, propagation_policy=propagation_policy)
        except NotFound:
            return False
        log.debug("deleted", **fields(resource=res.label, object=f"{namespace}/{name}"))
        return True

    def _reread(self, res: Resource, name: str, ns: str | None, refetch: bool, why: str) -> dict | None:
        """After a 409: GET the object again, or (cache-fed objects) ask for a later sync."""
        if not refetch:
            raise RetryLater(f"{res.label} {ns}/{name} {why}")
        return self._get(res, name, ns)

    def _get(self, res: Resource, name: str, ns: str | None) -> dict | None:
        try:
            return self.client.get(res, name, ns)
        except NotFound:
            return None
