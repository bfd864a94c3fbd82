"""Shared pieces of the Alertmanager renderer: versions, durations, reading references, name prefixes."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from promop.duration import DurationError, format_duration, parse_duration
from promop.render.model import Problem
from promop.render.store import Reject, Scope, Store
from promop.render.versions import Version, VersionError

DEFAULT_ALERTMANAGER_VERSION = "v0.33.1"
DEFAULT_ALERTMANAGER_BASE_IMAGE = "quay.io/prometheus/alertmanager"
CERTS_DIR = "/etc/alertmanager/certs"
TEMPLATES_DIR = "/etc/alertmanager/templates"

__all__ = [
    "AMScope", "Fatal", "Reject", "Store", "Version", "am_version", "format_duration", "normalise_duration",
    "prefixed", "CERTS_DIR",
]


class Fatal(Exception):
    """An error that fails the whole Alertmanager sync (upstream's reconcile error): the previous
    generated configuration stays in place. `field` is a path in the Alertmanager or its base config."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


class AMVersion(Version):
    """A Version that remembers its answers to at_least(): the version gates ask the same few
    questions for every field of every AlertmanagerConfig."""

    __slots__ = ("_gates",)

    def __init__(self, text: str | None):
        super().__init__(text)
        self._gates: dict[str, bool] = {}

    def at_least(self, minimum: str) -> bool:
        answer = self._gates.get(minimum)
        if answer is None:
            answer = self._gates[minimum] = super().at_least(minimum)
        return answer


def am_version(spec: Mapping[str, Any]) -> Version:
    """spec.version as an Alertmanager version (default v0.33.1); raises Fatal as upstream's gate does."""
    text = spec.get("version")
    if text is not None and not isinstance(text, str):
        raise Fatal("spec.version", f"{text!r} is not an Alertmanager version; use a form like v0.27.0")
    try:
        version = AMVersion(text or DEFAULT_ALERTMANAGER_VERSION)
    except VersionError:
        raise Fatal("spec.version", f"unsupported Alertmanager version {text!r}; use a form like v0.27.0") from None
    if version.parts[0] != 0 or version < "0.15.0":
        raise Fatal("spec.version", f"unsupported Alertmanager version {version}: promop supports v0.15.0 up to v0.x")
    return version


@lru_cache(maxsize=4096)
def _duration_text(value: str) -> str:
    """Memoised: a configuration repeats the same few durations (a DurationError is not cached)."""
    return format_duration(parse_duration(value))


def normalise_duration(value: Any, field: str, error: type[Exception] = Reject) -> str:
    """A duration re-printed as Alertmanager's config marshalling does; bad input raises `error`."""
    try:
        return _duration_text(value) if type(value) is str else format_duration(parse_duration(value))
    except DurationError as exc:
        raise error(field, str(exc)) from None


def prefixed(namespace: str, name: str, value: Any) -> Any:
    """`<ns>/<name>/<value>` for a receiver or time interval name of an AlertmanagerConfig; empty stays empty."""
    return f"{namespace}/{name}/{value}" if value else value


class AMScope(Scope):
    """A Scope reading in one namespace, with TLS files under /etc/alertmanager/certs."""

    def __init__(self, store: Store, kind: str, namespace: str, name: str, version: Version):
        super().__init__(store, kind, namespace, name, version)
        self.dropped: list[Problem] = []

    def asset(self, kind: str, name: str, key: str, value: str | None, register: bool = True) -> str:
        filename = f"{0 if kind == 'Secret' else 1}_{self.namespace}_{name}_{key}"
        if value is not None and register:
            self.assets[filename] = value
        return f"{CERTS_DIR}/{filename}"

    def secret(self, ref: Any, field: str) -> str:
        """A SecretKeySelector's value (a missing Secret or key rejects)."""
        value = self.read("Secret", ref, field)
        return "" if value is None else value

    def secret_or_configmap(self, ref: Any, field: str) -> str:
        _, _, _, value = self.read_secret_or_configmap(ref, field)
        return "" if value is None else value
