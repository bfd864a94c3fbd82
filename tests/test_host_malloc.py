"""promop.host.malloc: every promop command runs with at most two malloc arenas (glibc), unless the user set
MALLOC_ARENA_MAX. Checked by what glibc reports (malloc_info's heaps) after 8 threads allocate at once."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                           reason="M_ARENA_MAX is glibc's")

HEAPS = textwrap.dedent("""
    import ctypes, os, sys, tempfile, threading
    if sys.argv[1] == "limit":
        from promop.host.malloc import limit_malloc_arenas
        print("applied" if limit_malloc_arenas() else "kept")
    barrier = threading.Barrier(8)
    def work():
        barrier.wait()  # all 8 allocate at the same moment: glibc hands contending threads new arenas
        for _ in range(100):
            keep = [bytearray(512) for _ in range(2000)]
            del keep
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    libc = ctypes.CDLL(None)
    libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, (ctypes.c_char_p, ctypes.c_char_p)
    libc.malloc_info.argtypes, libc.fclose.argtypes = (ctypes.c_int, ctypes.c_void_p), (ctypes.c_void_p,)
    fd, path = tempfile.mkstemp()
    os.close(fd)
    fp = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    print(open(path).read().count("<heap nr="))
    os.unlink(path)
""")


def _heaps(mode: str, **env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    proc = subprocess.run([sys.executable, "-c", HEAPS, mode], capture_output=True, text=True, timeout=120,
                          env={**environ, "PYTHONPATH": str(ROOT), **env}, check=True)
    return proc.stdout.split()


@glibc
def test_two_arenas_at_most_where_glibc_would_make_more():
    assert int(_heaps("none")[0]) > 2, "without the limit glibc makes an arena per contending thread"
    applied, heaps = _heaps("limit")
    assert applied == "applied" and int(heaps) <= 2


@glibc
def test_a_value_the_user_set_is_kept():
    kept, heaps = _heaps("limit", MALLOC_ARENA_MAX="4")
    assert kept == "kept" and 2 < int(heaps) <= 4


def test_every_command_limits_the_arenas_before_it_runs(monkeypatch):
    import promop.cli as cli

    calls = []
    monkeypatch.setattr(cli, "limit_malloc_arenas", lambda: calls.append(1) or True)
    assert cli.main([]) == 2  # no command: help, exit 2; the limit comes first all the same
    assert calls == [1]
