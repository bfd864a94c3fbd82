"""The `promop` command: one subcommand per module in promop.commands.

Each module exposes `register(subparsers)`, which adds its parser and sets
`func(args) -> int`. Modules import their heavy dependencies inside `func`, so
`promop --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

from promop import __version__
from promop.errors import UserError
from promop.host.malloc import limit_malloc_arenas

# Order is the order shown in --help.
# A module not built yet is skipped, so each component adds only its own module.
COMMANDS = ("demo", "run", "sandbox", "render", "explain", "manifests",
            "adapter", "hpa", "autoscaler", "recommender", "admission_webhook", "keda")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with `only` just that subcommand registered: each command module
    imports what its flags need (the operator's flags pull in the renderer, schema validation and CEL),
    so `promop run` importing every other command's module too cost every invocation a second."""
    parser = argparse.ArgumentParser(
        prog="promop",
        description="A Prometheus Operator for Kubernetes (monitoring.coreos.com/v1).",
    )
    parser.add_argument("--version", action="version", version=f"promop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only else COMMANDS:
        try:
            module = importlib.import_module(f"promop.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"promop.commands.{name}":
                raise
            continue  # not built yet
        module.register(sub)
    return parser


def _named_command(argv: list[str]) -> str | None:
    """The subcommand argv names, when its first word is one (`promop run ...`); None for top-level
    flags (`--help`, `--version`) or a mistyped command, which need the full parser (its choices)."""
    if not argv or argv[0] not in COMMANDS:
        return None
    # a command whose module is not built yet: the full parser's "invalid choice" lists the others
    return argv[0] if importlib.util.find_spec(f"promop.commands.{argv[0]}") is not None else None


def main(argv: list[str] | None = None) -> int:
    limit_malloc_arenas()  # before any thread starts (promop.host.malloc says why)
    argv = sys.argv[1:] if argv is None else argv
    only = _named_command(argv)
    parser = build_parser(only)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        message = exc.one_line()
        prefix = f"promop {args.command}:"
        print(message if message.startswith(prefix) else f"{prefix} {message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `promop render | head`: the reader went away; not an error of ours.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
