"""Which source of one input is newer: the API's object or kubelet's mounted copy.

The API is the source of truth and kubelet's mounted files lag it by a minute or
more, so content that arrives through the API is applied at once. The mounted
copy stays the fallback when the API cannot be reached, but it must never put
back content that the API has already replaced: content the API showed at an
older resourceVersion than the one applied is stale. Content the API never
showed is newer than anything we know (it changed while we could not watch),
so it wins. Content is compared by digest.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

# How many digests of past API versions to remember (a mounted copy lags by a few at most).
REMEMBERED = 64


def rv_number(resource_version: str) -> int | None:
    """resourceVersions are opaque, but every apiserver we know uses etcd's integers."""
    try:
        return int(resource_version)
    except (TypeError, ValueError):
        return None


class Freshness:
    """Decides, for one input, whether newly seen content should replace what is applied."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.applied_digest: str | None = None
        # The version of the applied content; x.5 for mounted content the API never showed,
        # which is newer than version x but older than any later one.
        self.applied_rv: float | None = None
        self._seen: OrderedDict[str, int] = OrderedDict()

    def offer_api(self, resource_version: str, digest: str) -> bool:
        """The API shows `digest` at `resource_version`; True: apply it now."""
        rv = rv_number(resource_version)
        with self._lock:
            if rv is not None:
                self._remember(digest, rv)
                if self.applied_rv is not None and rv < self.applied_rv:
                    return False  # an older version than the one applied: never go back
            if digest == self.applied_digest:
                if rv is not None:
                    self.applied_rv = rv
                return False
            self.applied_digest, self.applied_rv = digest, rv
            return True

    def offer_mount(self, digest: str) -> bool:
        """The mounted copy shows `digest`; True: apply it now."""
        with self._lock:
            if digest == self.applied_digest:
                return False
            seen_at = self._seen.get(digest)
            if seen_at is not None and self.applied_rv is not None and seen_at < self.applied_rv:
                return False  # kubelet has not caught up with the API yet
            self.applied_digest = digest
            if seen_at is not None:
                self.applied_rv = seen_at
            elif self.applied_rv is not None:
                self.applied_rv = int(self.applied_rv) + 0.5
            return True

    def is_stale_mount(self, digest: str) -> bool:
        """True when the mounted copy holds content the API has already replaced."""
        with self._lock:
            seen_at = self._seen.get(digest)
            return (digest != self.applied_digest and seen_at is not None and self.applied_rv is not None
                    and seen_at < self.applied_rv)

    def _remember(self, digest: str, rv: int) -> None:
        previous = self._seen.pop(digest, None)
        self._seen[digest] = rv if previous is None else max(previous, rv)
        while len(self._seen) > REMEMBERED:
            self._seen.popitem(last=False)
