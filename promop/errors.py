"""The one exception for mistakes a user can fix (a bad flag, a missing or broken file).

Raise `UserError("--kubeconfig /x: no such file; pass the path of a kubeconfig")` from any
command: `promop.cli.main` prints it as one line, `promop <command>: <message>`, and exits 2.
The message says what is wrong, where, and what to do. No traceback: a traceback is for bugs.
"""

from __future__ import annotations


class UserError(Exception):
    """A usage or configuration mistake; printed as one line, exit status 2."""

    exit_code = 2

    def one_line(self) -> str:
        return " ".join(str(self).split())
