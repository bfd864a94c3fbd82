"""The User-Agent every request carries: `promop/<version> (<component>)`.

Why: an apiserver's audit log and its managedFields name the writer by its
User-Agent; with the generated client's default (`OpenAPI-Generator/...`) an
administrator cannot tell promop's writes from any other script's. The
component says which part of promop wrote (operator, adapter, ...); by
default it is the program's name, as client-go's default uses os.Args[0].
"""

from __future__ import annotations

import os
import sys

from promop import __version__

GENERATED_PREFIX = "OpenAPI-Generator/"


def user_agent(component: str) -> str:
    """`promop/<version> (<component>)`."""
    return f"promop/{__version__} ({component})"


def default_component() -> str:
    """The running program's name: `promop` for the CLI (`promop ...` or `python -m promop`),
    the module for `python -m pkg.mod`, the script's name otherwise."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if program.endswith(".py"):
        program = program[:-3]
    if program == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        name = getattr(spec, "name", "") or ""
        program = name.removesuffix(".__main__")
    return program if program and program != "-c" else "python"


def is_generated_default(agent: str | None) -> bool:
    """Whether `agent` is the generated client's own default (so nobody chose it)."""
    return not agent or agent.startswith(GENERATED_PREFIX)
