"""SharedInformers: equal watches get one informer, each user its handlers, start/stop counted."""

from __future__ import annotations

import threading

import pytest

from promop.kube.informer import Informer
from promop.kube.resources import CONFIGMAPS, SECRETS
from promop.kube.shared_informers import SharedInformer, SharedInformers


class _Client:
    """Only what an Informer touches before start()."""


def test_equal_arguments_share_one_informer_and_store() -> None:
    shared = SharedInformers(_Client())
    a = shared.informer(CONFIGMAPS, namespaces=["a", "b"], label_selector="x=1", resync_period=0)
    b = shared.informer(CONFIGMAPS, namespaces=["a", "b"], label_selector="x=1", resync_period=0)
    assert isinstance(a, SharedInformer) and isinstance(b, SharedInformer)
    assert a is not b and a.informer is b.informer and a.store is b.store
    assert len(shared) == 1


@pytest.mark.parametrize("other", [
    {"namespaces": ["a"], "label_selector": "x=1", "resync_period": 0},          # another scope
    {"namespaces": ["a", "b"], "label_selector": "x=2", "resync_period": 0},     # another selector
    {"namespaces": ["a", "b"], "label_selector": "x=1", "resync_period": 5},     # another option
    {"namespaces": ["a", "b"], "label_selector": "x=1", "resync_period": 0, "metadata_only": True},
])
def test_any_different_argument_gives_another_informer(other: dict) -> None:
    shared = SharedInformers(_Client())
    a = shared.informer(CONFIGMAPS, namespaces=["a", "b"], label_selector="x=1", resync_period=0)
    assert shared.informer(CONFIGMAPS, **other).informer is not a.informer
    assert shared.informer(SECRETS, namespaces=["a", "b"], label_selector="x=1",
                           resync_period=0).informer is not a.informer


def test_unhashable_arguments_are_not_shared() -> None:
    shared = SharedInformers(_Client())
    kw = {"indexers": {"by": lambda o: []}, "registry": None}
    a = shared.informer(CONFIGMAPS, **kw)
    kw_unhashable = {"transform": _Unhashable()}
    b = shared.informer(CONFIGMAPS, **kw_unhashable)
    c = shared.informer(CONFIGMAPS, **kw_unhashable)
    assert isinstance(a, SharedInformer)
    assert isinstance(b, Informer) and isinstance(c, Informer) and b is not c


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, obj: dict) -> dict:
        return obj


def test_the_informer_starts_with_the_first_handle_and_stops_with_the_last(monkeypatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(Informer, "start", lambda self: calls.append("start"))
    monkeypatch.setattr(Informer, "stop", lambda self, timeout=5: calls.append("stop"))
    shared = SharedInformers(_Client())
    a, b, c = (shared.informer(CONFIGMAPS) for _ in range(3))
    a.start()
    b.start()
    assert calls == ["start"]
    with pytest.raises(RuntimeError, match="already started"):
        a.start()
    a.stop()
    a.stop()  # twice from one handle counts once
    c.stop()  # never started: does not count
    assert calls == ["start"]
    b.stop()
    assert calls == ["start", "stop"]


def test_handlers_of_every_user_are_called(monkeypatch) -> None:
    shared = SharedInformers(_Client())
    a, b = shared.informer(CONFIGMAPS), shared.informer(CONFIGMAPS)
    a.add_handler(on_add=lambda obj, initial: None)
    b.add_handler(on_add=lambda obj, initial: None)
    assert len(a.informer._listeners) == 2  # one listener (thread, queue) per user


def test_concurrent_starts_start_once(monkeypatch) -> None:
    count = []
    lock = threading.Lock()

    def start(self) -> None:
        with lock:
            count.append(1)

    monkeypatch.setattr(Informer, "start", start)
    shared = SharedInformers(_Client())
    handles = [shared.informer(CONFIGMAPS) for _ in range(8)]
    threads = [threading.Thread(target=h.start) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(count) == 1
