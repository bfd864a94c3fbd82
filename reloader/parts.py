"""Config parts: a directory of (gzipped) scrape config files, mirrored as plain YAML for Prometheus.

A config too large for one Secret is split over several (the operator's --config-secret-max-bytes);
the main config loads them with `scrape_config_files: [<out>/*.yaml]`. Prometheus reads plain YAML
there, so each mounted `<name>.yaml.gz` (or `<name>.yaml`) becomes `<out>/<name>.yaml`, gunzipped and
$(VAR)-expanded like the main config; files whose input went away are removed. The input directory
is hashed with the watched directories, so a changed part triggers a reload after it is written.
"""
from __future__ import annotations

import hashlib
import os
from typing import Mapping

from .atomic import OutputError
from .render import render_file
from .source import InputError

SUFFIXES = (".yaml.gz", ".yaml")


def inputs(src: str) -> dict[str, str]:
    """Output name -> input path, for the part files in `src` (kubelet's `..data` entries skipped)."""
    out: dict[str, str] = {}
    for name in sorted(os.listdir(src)):
        if name.startswith(".") or not os.path.exists(os.path.join(src, name)):
            continue  # kubelet's own entries; a link left dangling by a key that went away
        for suffix in SUFFIXES:
            if name.endswith(suffix):
                out[name[: -len(suffix)] + ".yaml"] = os.path.join(src, name)
                break
    return out


class Parts:
    """Mirrors `src` into `out`; remembers what it wrote so an unchanged part is not rewritten."""

    def __init__(self, src: str, out: str):
        self.src = src
        self.out = out
        self.written: dict[str, str] = {}  # output name -> digest of its input

    def sync(self, env: Mapping[bytes, bytes]) -> tuple[int, str | None]:
        """Write changed parts, remove stale ones: (files written, error or None). On an error the
        outputs already there stay (Prometheus keeps loading the last good parts)."""
        try:
            wanted = inputs(self.src)
            os.makedirs(self.out, exist_ok=True)
        except OSError as exc:
            return 0, f"config parts: cannot read {self.src} or create {self.out}: {exc.strerror or exc}"
        count = 0
        for name, path in wanted.items():
            target = os.path.join(self.out, name)
            try:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                if self.written.get(name) == digest and os.path.exists(target):
                    continue
                render_file(path, target, env)
            except (InputError, OutputError) as exc:
                return count, f"config part {path}: {exc}"
            except OSError as exc:
                return count, f"config part {path}: cannot read it: {exc.strerror or exc}"
            self.written[name] = digest
            count += 1
        return count, self._remove_stale(set(wanted))

    def _remove_stale(self, wanted: set[str]) -> str | None:
        for name in sorted(os.listdir(self.out)):
            if name.endswith(".yaml") and not name.startswith(".") and name not in wanted:
                try:
                    os.remove(os.path.join(self.out, name))
                except OSError as exc:
                    return f"config parts: cannot remove stale {name} from {self.out}: {exc.strerror or exc}"
                self.written.pop(name, None)
        return None
