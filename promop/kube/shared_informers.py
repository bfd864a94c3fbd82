"""One informer per distinct watch in a process, shared by the controllers that ask for it.

client-go's SharedInformerFactory: the Prometheus, PrometheusAgent and ThanosRuler controllers each
watch ServiceMonitors, PodMonitors, PrometheusRules, Namespaces... with the same scope. Each its own
informer means each its own LIST at start (0.9 s more at 30,000 ServiceMonitors) and its own copy
of every object. Here they get one Informer whenever they ask with equal arguments (resource,
namespaces, selectors, every option), and each controller registers its own handlers on it.

`SharedInformers.informer(res, **kwargs)` returns a `SharedInformer`: a handle that behaves as the
Informer (store, add_handler, has_synced, pending, ...), whose start() and stop() count the users:
the informer starts with the first handle started and stops when the last started handle stops. So
each controller keeps starting and stopping "its" informers as before. Arguments that cannot be
compared (an unhashable option) give an informer of its own, as without sharing.
"""

from __future__ import annotations

import threading
from typing import Any

from promop.kube.informer import Informer

__all__ = ["SharedInformer", "SharedInformers"]


def _frozen(value: Any) -> Any:
    """`value` as a hashable key part: dicts and lists by content, anything else as itself."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    hash(value)  # TypeError: not shareable
    return value


class _Entry:
    """One underlying informer and how many started handles use it."""

    def __init__(self, informer: Informer) -> None:
        self.informer = informer
        self.running = 0
        self.lock = threading.Lock()


class SharedInformer:
    """A controller's handle on a shared Informer: everything delegates, start/stop are counted."""

    def __init__(self, entry: _Entry) -> None:
        self._entry = entry
        self._started = False
        self._stopped = False

    @property
    def informer(self) -> Informer:
        return self._entry.informer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._entry.informer, name)

    def start(self) -> None:
        """Start the informer unless another handle already did."""
        if self._started:
            raise RuntimeError(f"informer {self._entry.informer.name} already started by this controller")
        entry = self._entry
        with entry.lock:
            self._started = True
            entry.running += 1
            if entry.running == 1:
                entry.informer.start()

    def stop(self, timeout: float = 5) -> None:
        """Stop the informer once no other started handle uses it."""
        entry = self._entry
        with entry.lock:
            if not self._started or self._stopped:
                self._stopped = True
                return
            self._stopped = True
            entry.running -= 1
            last = entry.running == 0
        if last:
            entry.informer.stop(timeout)


class SharedInformers:
    """The process's informers by what they watch (a client-go SharedInformerFactory)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._entries: dict[Any, _Entry] = {}
        self._lock = threading.Lock()

    def informer(self, res: Any, **kwargs: Any) -> SharedInformer | Informer:
        """The informer of `res` with these Informer arguments: the one already made for equal
        arguments, else a new one. Unhashable arguments: a new, unshared Informer."""
        try:
            key = (res.group, res.version, res.plural, _frozen(kwargs))
        except TypeError:
            return Informer(self.client, res, **kwargs)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry(Informer(self.client, res, **kwargs))
        return SharedInformer(entry)

    def __len__(self) -> int:
        return len(self._entries)
