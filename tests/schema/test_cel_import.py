"""The CEL package is loaded without its command line (promop.schema.cel._cel): the REPL's libraries
cost every process that validates a rule 0.2 s and 21 MiB at start-up, on the operator's first sync."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from promop.schema import cel
from promop.schema.rules import rule_violations
assert cel.compile_error("self.x >") is not None and cel.compile_error("self.x > 1") is None
schema = {"type": "object", "properties": {"x": {"type": "integer"}},
          "x-kubernetes-validations": [{"rule": "self.x > 1", "message": "x is too small"}]}
assert rule_violations({"x": 5}, schema) == [] and rule_violations({"x": 0}, schema)
heavy = sorted({m.split('.')[0] for m in sys.modules} & {"prompt_toolkit", "typer", "rich", "pygments", "click"})
print("heavy:" + ",".join(heavy))
"""


def test_validating_a_rule_loads_none_of_the_cel_command_lines_libraries():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "heavy:", out.stdout
