"""Run `promop <args>` inside the test process, as `python -m promop <args>` would run it.

Why: a fresh interpreter importing promop costs 1-2 s a call on a quiet machine (5-15 s on a loaded
CI runner), and the CLI tests made hundreds of such calls only to read an exit code and a few lines.
In-process, the imports are paid once per pytest worker.

What it keeps equal to a real process: the same entry point (`promop.cli.main`, which
`promop/__main__.py` calls), argv, text stdin/stdout/stderr, the exit code (a SystemExit's code
mapped the way the interpreter maps it), and an unexpected exception ending in a traceback on
stderr with exit 1, so `"Traceback" not in proc.stderr` still proves what it proved. Global state a
command may change (logging handlers and levels, environment, working directory, signal handlers,
warning filters, sys.argv) is restored afterwards, so tests stay independent in any order; each
pytest-xdist worker is its own process, so nothing is shared between workers.

What it cannot prove, and what stays a real subprocess in the tests: that `python -m promop`
starts at all, what a command imports (lazy imports), signals, broken pipes and real stdin pipes.
"""

from __future__ import annotations

import io
import logging
import os
import signal
import sys
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE", "SIGUSR1")
                 if hasattr(signal, name))


@dataclass
class Completed:
    """What subprocess.run(..., capture_output=True, text=True) returns, for the fields tests read."""
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def promop(*args: str, input: str = "", cwd: str | os.PathLike | None = None,
           env: Mapping[str, str] | None = None) -> Completed:
    """`promop *args` run in this process; `env` replaces the environment, as subprocess's does."""
    from promop.cli import main

    argv = [str(a) for a in args]
    stdout, stderr = _text_stream(), _text_stream()
    with _restored_globals(), _redirected(argv, io.StringIO(input), stdout, stderr):
        if cwd is not None:
            os.chdir(cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        code = _exit_code(main, argv)
    return Completed(["promop", *argv], code, _text(stdout), _text(stderr))


def _exit_code(main, argv: list[str]) -> int:
    """The process's exit status: main's return value, or a SystemExit's code as the interpreter maps
    it (None is 0, a non-int is printed and is 1); anything else is a traceback on stderr and 1."""
    try:
        result = main(argv)
    except SystemExit as exc:
        result = exc.code
    except Exception:  # a real process prints the traceback and exits 1; KeyboardInterrupt propagates
        traceback.print_exc(file=sys.stderr)
        return 1
    finally:
        _flush()
    if result is None:
        return 0
    if isinstance(result, int):
        return result & 0xFF
    print(result, file=sys.stderr)
    return 1


def _text_stream() -> io.TextIOWrapper:
    """A text stream with a .buffer and an encoding, like a real sys.stdout on a pipe."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    """Decoded as subprocess.run(text=True) decodes it (universal newlines)."""
    stream.flush()
    data = stream.buffer.getvalue().decode("utf-8", errors="replace")  # type: ignore[attr-defined]
    return data.replace("\r\n", "\n").replace("\r", "\n")


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


@contextmanager
def _redirected(argv: Sequence[str], stdin, stdout, stderr) -> Iterator[None]:
    saved = sys.argv, sys.stdin, sys.stdout, sys.stderr
    sys.argv = [sys.executable, *argv]
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved


@contextmanager
def _restored_globals() -> Iterator[None]:
    """Undo what a command does to the process: `logs.setup` replaces the root handlers and levels,
    a long-running command installs signal handlers, a command may read or set the environment."""
    cwd, environ = os.getcwd(), dict(os.environ)
    handlers = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    logging_state = _logging_state()
    with warnings.catch_warnings():
        _python_default_warning_filters()
        try:
            yield
        finally:
            os.chdir(cwd)
            if dict(os.environ) != environ:
                os.environ.clear()
                os.environ.update(environ)
            for sig, handler in handlers.items():
                if handler is not None and signal.getsignal(sig) is not handler:
                    signal.signal(sig, handler)
            _restore_logging(logging_state)


def _python_default_warning_filters() -> None:
    """A fresh interpreter's filters (no -W): pytest's would show warnings a user never sees, or hide
    ones a user sees, on stderr."""
    warnings.resetwarnings()
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=category)


def _logging_state():
    root = logging.getLogger()
    levels = {name: logger.level for name, logger in logging.Logger.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}
    return list(root.handlers), root.level, levels, logging.root.manager.disable


def _restore_logging(state) -> None:
    """Root handlers and every logger's level as before; a logger first made during the run goes back to
    NOTSET (nothing in promop or its dependencies sets a level on import; `logs.setup` sets urllib3's)."""
    handlers, level, levels, disable = state
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            logger.setLevel(levels.get(name, logging.NOTSET))
    logging.disable(disable)
