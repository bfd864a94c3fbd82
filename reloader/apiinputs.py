"""The config Secret and rule ConfigMaps read through the API, with kubelet's mounts as fallback.

kubelet refreshes mounted Secrets and ConfigMaps only on its periodic sync (a
minute or more), so a change written by the operator waits there. Watching the
objects themselves brings it in about a second. Each input has two sources:

- the API (a watch per object): applied as soon as it shows new content;
- the mounted copy (the existing volumes): used while the API cannot be
  watched, never when it puts back content the API has already replaced
  (see freshness.py).

The chosen config content is staged in a file next to the output, from which
the usual pass renders it (gunzip, $(VAR) expansion, atomic write, hash,
reload); rule ConfigMaps are mirrored key by key into their directories.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
import threading
from typing import Callable

from .atomic import OutputError, write_atomically
from .freshness import Freshness
from .kubeapi import Api, ObjectWatch
from .specs import ObjectRef, parse_object_ref, parse_secret_files, parse_specs, stage_path  # noqa: F401 (re-exported)
from .logs import Log


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files_digest(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(b"\xff" + name.encode() + b"\xff" + files[name])
    return h.hexdigest()


def _rv(obj: dict) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class _Input:
    """What a Secret input and a ConfigMap mirror share: a watch, freshness, and a lock."""

    def __init__(self, ref: ObjectRef, log: Log, trigger: Callable[[], None]):
        self.ref = ref
        self.log = log
        self.trigger = trigger
        self.freshness = Freshness()
        self.lock = threading.Lock()
        self.watch: ObjectWatch | None = None
        self._stale_logged: str | None = None

    def api_healthy(self) -> bool:
        return self.watch is not None and self.watch.connected.is_set()

    def _offer_mount(self, digest: str) -> bool:
        """Whether the mounted content should be applied (the caller holds the lock)."""
        if self.api_healthy():
            return False  # the API is watched: it is at least as new as kubelet's copy
        if self.freshness.is_stale_mount(digest):
            if self._stale_logged != digest:
                self._stale_logged = digest
                self.log.info("mounted copy is older than the version read through the API; not applied",
                              object=str(self.ref))
            return False
        return self.freshness.offer_mount(digest)


class SecretInput(_Input):
    """One key of the config Secret, staged in `stage` for the pass to render."""

    def __init__(self, ref: ObjectRef, key: str, mounted: str, stage: str, log: Log, trigger: Callable[[], None]):
        super().__init__(ref, log, trigger)
        self.key = key
        self.mounted = mounted
        self.stage = stage
        self._mount_fingerprint: tuple | None = None

    def on_object(self, obj: dict) -> None:
        encoded = (obj.get("data") or {}).get(self.key)
        if encoded is None:
            self.log.warning("the Secret has no such key; keeping the current config", object=str(self.ref),
                             key=self.key)
            return
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            self.log.error("the Secret's key is not valid base64; keeping the current config",
                           object=str(self.ref), key=self.key)
            return
        with self.lock:
            if not self.freshness.offer_api(_rv(obj), _digest(raw)):
                return
            if not self._stage(raw, "api", _rv(obj)):
                return
        self.trigger()

    def on_missing(self) -> None:
        self.log.warning("the config Secret does not exist; keeping the current config", object=str(self.ref))

    def refresh_from_mount(self) -> None:
        """Called before every pass: take the mounted file if it is the newer source."""
        try:
            st = os.stat(self.mounted)
        except OSError:
            return
        fingerprint = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, self.api_healthy())
        if fingerprint == self._mount_fingerprint and os.path.exists(self.stage):
            return
        try:
            with open(self.mounted, "rb") as f:
                raw = f.read()
        except OSError:
            return
        with self.lock:
            if self._offer_mount(_digest(raw)) or not os.path.exists(self.stage):
                if not self._stage(raw, "mounted file", ""):
                    return
            self._mount_fingerprint = fingerprint

    def _stage(self, raw: bytes, source: str, rv: str) -> bool:
        try:
            write_atomically(self.stage, [raw])
        except OutputError as exc:
            self.log.error("cannot stage the config", err=str(exc))
            return False
        fields = {"resource_version": rv} if rv else {}
        self.log.info("config source", source=source, object=str(self.ref), bytes=len(raw), **fields)
        return True


class ConfigMapMirror(_Input):
    """A rule ConfigMap's keys written as files into `directory` (keys that went away removed)."""

    def __init__(self, ref: ObjectRef, directory: str, mounted_dir: str, log: Log, trigger: Callable[[], None]):
        super().__init__(ref, log, trigger)
        self.directory = directory
        self.mounted_dir = mounted_dir

    def on_object(self, obj: dict) -> None:
        files: dict[str, bytes] = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
        for k, v in (obj.get("binaryData") or {}).items():
            try:
                files[k] = base64.b64decode(v)
            except (binascii.Error, ValueError):
                self.log.error("binaryData key is not valid base64; skipped", object=str(self.ref), key=k)
        self._apply_api(_rv(obj), files)

    def on_missing(self) -> None:
        # As an optional ConfigMap volume would show it: an empty directory.
        self._apply_api("", {})

    def _apply_api(self, rv: str, files: dict[str, bytes]) -> None:
        with self.lock:
            if not self.freshness.offer_api(rv, files_digest(files)):
                return
            self._write(files, "api", rv)
        self.trigger()

    def refresh_from_mount(self) -> None:
        if not self.mounted_dir:
            return
        files = read_visible_files(self.mounted_dir)
        if files is None:
            return
        with self.lock:
            if self._offer_mount(files_digest(files)):
                self._write(files, "mounted directory", "")

    def _write(self, files: dict[str, bytes], source: str, rv: str) -> None:
        try:
            os.makedirs(self.directory, exist_ok=True)
            for name, data in sorted(files.items()):
                if "/" in name or name.startswith(".."):
                    self.log.warning("ConfigMap key is not a plain file name; skipped", object=str(self.ref),
                                     key=name)
                    continue
                path = os.path.join(self.directory, name)
                if _content(path) != data:
                    write_atomically(path, [data])
            for name in os.listdir(self.directory):
                path = os.path.join(self.directory, name)
                if name not in files and not name.startswith(".") and os.path.isfile(path):
                    os.unlink(path)
        except (OSError, OutputError) as exc:
            self.log.error("cannot write the rule files", object=str(self.ref), dir=self.directory, err=str(exc))
            return
        fields = {"resource_version": rv} if rv else {}
        self.log.info("rule files source", source=source, object=str(self.ref), dir=self.directory,
                      keys=len(files), **fields)


class SecretFileMirror(_Input):
    """One key of a Secret written as `<directory>/<key>`: a config part (--watch-secret-file).

    Several part Secrets share one directory, so each mirror touches only its own file; the fallback
    is the same key in the mounted (projected) directory. A deleted Secret removes the file."""

    def __init__(self, ref: ObjectRef, key: str, directory: str, mounted_dir: str, log: Log,
                 trigger: Callable[[], None]):
        super().__init__(ref, log, trigger)
        self.key = key
        self.path = os.path.join(directory, key)
        self.mounted = os.path.join(mounted_dir, key) if mounted_dir else ""

    def on_object(self, obj: dict) -> None:
        encoded = (obj.get("data") or {}).get(self.key)
        try:
            raw = base64.b64decode(encoded, validate=True) if encoded is not None else None
        except (binascii.Error, ValueError):
            self.log.error("the Secret's key is not valid base64; keeping the current file", object=str(self.ref),
                           key=self.key)
            return
        with self.lock:
            if not self.freshness.offer_api(_rv(obj), _digest(raw) if raw is not None else ""):
                return
            self._write(raw, "api")
        self.trigger()

    def on_missing(self) -> None:
        with self.lock:
            if not self.freshness.offer_api("", ""):
                return
            self._write(None, "api")
        self.trigger()

    def refresh_from_mount(self) -> None:
        raw = _content(self.mounted) if self.mounted else None
        if raw is None:
            return
        with self.lock:
            # while the API is watched, a missing file means the Secret is gone: kubelet's copy lags
            if self._offer_mount(_digest(raw)) or (not os.path.exists(self.path) and not self.api_healthy()):
                self._write(raw, "mounted file")

    def _write(self, raw: bytes | None, source: str) -> None:
        try:
            if raw is None:
                if os.path.exists(self.path):
                    os.unlink(self.path)
            elif _content(self.path) != raw:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                write_atomically(self.path, [raw])
        except (OSError, OutputError) as exc:
            self.log.error("cannot write the Secret's file", object=str(self.ref), file=self.path, err=str(exc))
            return
        self.log.info("secret file source", source=source, object=str(self.ref), file=self.path,
                      bytes=-1 if raw is None else len(raw))


def _content(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def read_visible_files(directory: str) -> dict[str, bytes] | None:
    """The files of a mounted ConfigMap as a pod sees them (kubelet's `..` entries skipped)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    files = {}
    for name in names:
        if name.startswith("."):
            continue
        data = _content(os.path.join(directory, name))
        if data is not None:
            files[name] = data
    return files


class ApiInputs:
    """Every input the reloader follows through the API, and their watches."""

    def __init__(self, api: Api, inputs: list[_Input], log: Log,
                 on_event: Callable[[str], None], on_error: Callable[[str], None]):
        self.api = api
        self.inputs = inputs
        self.log = log
        for item in inputs:
            kind = item.ref.plural
            item.watch = ObjectWatch(api, item.ref, item.on_object, item.on_missing, log,
                                     on_event=lambda kind=kind: on_event(kind),
                                     on_error=lambda kind=kind, item=item: self._lost(kind, item, on_error))

    @staticmethod
    def _lost(kind: str, item: _Input, on_error: Callable[[str], None]) -> None:
        """A watch failed: count it, and run a pass. A mounted copy that changed while the API still
        looked healthy was refused then; from now on it is the source, and without a pass it would
        wait for the next --watch-interval."""
        on_error(kind)
        item.trigger()

    def start(self) -> None:
        for item in self.inputs:
            assert item.watch is not None
            item.watch.start()

    def fetch_once(self) -> None:
        """Init mode: read every object once; on failure the mounted copy is used."""
        for item in self.inputs:
            assert item.watch is not None
            if item.watch.fetch_once():
                item.watch.connected.set()  # for this one pass, the API's answer is the newest
        self.refresh_from_mounts()
        for item in self.inputs:
            assert item.watch is not None
            item.watch.connected.clear()

    def refresh_from_mounts(self) -> None:
        for item in self.inputs:
            item.refresh_from_mount()

    def close(self) -> None:
        for item in self.inputs:
            if item.watch is not None:
                item.watch.close()


def build(api: Api, secret: tuple[ObjectRef, str] | None, mirrors: list[tuple[ObjectRef, str, str]],
          mounted_config: str, output: str, log: Log, trigger: Callable[[], None],
          on_event: Callable[[str], None], on_error: Callable[[str], None],
          secret_files: list[tuple[ObjectRef, str, str, str]] | None = None) -> ApiInputs:
    inputs: list[_Input] = [SecretFileMirror(ref, key, d, m, log, trigger) for ref, key, d, m in secret_files or ()]
    if secret is not None:
        inputs.append(SecretInput(secret[0], secret[1], mounted_config, stage_path(output), log, trigger))
    inputs += [ConfigMapMirror(ref, directory, mounted, log, trigger) for ref, directory, mounted in mirrors]
    return ApiInputs(api, inputs, log, on_event, on_error)
