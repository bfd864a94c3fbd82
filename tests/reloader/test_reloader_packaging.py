"""The reloader's own package (packaging/reloader/pyproject.toml, its image): what it imports is
what it declares, and nothing of promop's heavy dependencies."""
from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# import name -> distribution name, for the reloader's third-party imports
DISTRIBUTIONS = {"watchdog": "watchdog", "prometheus_client": "prometheus-client", "requests": "requests",
                 "yaml": "pyyaml"}
# imported only where a missing module is handled: kubecreds' exec credential plugins
# (kubernetes), and web config basic auth (crypt: the standard library's up to Python 3.12, gone
# in 3.13, where sys.stdlib_module_names no longer lists it)
OPTIONAL = {"kubernetes", "crypt"}


def _third_party_imports() -> set[str]:
    found = set()
    for path in list((ROOT / "reloader").glob("*.py")) + list((ROOT / "gotime").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("reloader", "gotime", "__future__"):
                    found.add(top)
    return found


def test_every_import_is_a_declared_dependency_and_nothing_more():
    project = tomllib.loads((ROOT / "packaging" / "reloader" / "pyproject.toml").read_text())["project"]
    declared = {d.split(">")[0].split("<")[0].split("=")[0].strip().lower() for d in project["dependencies"]}
    imported = _third_party_imports()
    assert imported - OPTIONAL <= set(DISTRIBUTIONS), f"undeclared imports: {imported - OPTIONAL - set(DISTRIBUTIONS)}"
    assert declared == {DISTRIBUTIONS[m] for m in imported - OPTIONAL}
    assert "kubernetes" not in declared
    assert project["scripts"]["promop-config-reloader"] == "reloader.entry:main"


def test_the_package_holds_the_reloader_and_gotime_only():
    tool = tomllib.loads((ROOT / "packaging" / "reloader" / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert sorted(tool["packages"]) == ["gotime", "reloader"]
