"""Atomic output: a reader (Prometheus) sees the old file or the new one, never half."""
from __future__ import annotations

import os
from typing import Callable, Iterable

OUTPUT_MODE = 0o644


class OutputError(Exception):
    """The output could not be written; the previous output is unchanged."""


def write_atomically(path: str, chunks: Iterable[bytes], mode: int = OUTPUT_MODE) -> int:
    """Write chunks to a temp file next to `path`, fsync, rename; return the size.

    Exceptions raised by `chunks` itself (e.g. bad input) propagate unchanged
    after the temp file is removed.
    """
    directory = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    try:
        fd, tmp = _create_temp(directory, name)
    except OSError as exc:
        raise OutputError(
            f"cannot create a temporary file in {directory} for {path}: {exc.strerror}; "
            f"check that the directory exists and is writable, the previous output is kept"
        ) from exc
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            _io(f"cannot set the mode of {tmp}", os.fchmod, out.fileno(), mode)
            for chunk in chunks:  # errors from the input itself propagate unchanged
                _io(f"cannot write {tmp}", out.write, chunk)
                size += len(chunk)
            _io(f"cannot write {tmp}", out.flush)
            _io(f"cannot fsync {tmp}", os.fsync, out.fileno())
        _io(f"cannot rename {tmp} to {path}", os.replace, tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    _fsync_dir(directory)
    return size


def _create_temp(directory: str, name: str) -> tuple[int, str]:
    """tempfile.mkstemp's exclusive create, without importing tempfile (with shutil, random, bz2
    and lzma it is a measurable share of the init container's start-up CPU)."""
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {directory}")


def is_temp_of(path: str, candidate: str) -> bool:
    """True when `candidate` is one of the temp files write_atomically makes for `path`."""
    name = os.path.basename(path)
    other = os.path.basename(candidate)
    return (
        os.path.dirname(os.path.abspath(candidate)) == os.path.dirname(os.path.abspath(path))
        and other.startswith(f".{name}.")
        and other.endswith(".tmp")
    )


def remove_stale_temps(path: str) -> list[str]:
    """Delete temp files a killed earlier run left next to `path`; return their names."""
    directory = os.path.dirname(os.path.abspath(path))
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        candidate = os.path.join(directory, name)
        if is_temp_of(path, candidate):
            try:
                os.unlink(candidate)
                removed.append(name)
            except OSError:
                continue
    return removed


def _io(what: str, fn: Callable[..., object], *args: object) -> None:
    try:
        fn(*args)
    except OSError as exc:
        raise OutputError(f"{what}: {exc.strerror or exc}; the previous output is kept") from exc


def _discard(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
