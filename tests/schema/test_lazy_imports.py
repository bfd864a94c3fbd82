"""What validating a valid object does not load: the CEL package's command line (promop.schema.cel._cel)
and jsonschema (promop.schema.jsonschema_check, for invalid objects only). Together 0.3 s and ~25 MiB
at start-up in every process that validates (the operator's first sync, its render worker)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from promop.schema import cel
from promop.schema.validate import validate
assert cel.compile_error("self.x >") is not None and cel.compile_error("self.x > 1") is None
schema = {"type": "object", "required": ["x"],
          "properties": {"x": {"type": "integer"}, "name": {"type": "string", "pattern": "^[a-z]+$"}},
          "x-kubernetes-validations": [{"rule": "self.x > 1", "message": "x is too small"}]}
assert validate({"x": 5, "name": "ok"}, schema) == []
heavy = sorted({m.split('.')[0] for m in sys.modules} & {"prompt_toolkit", "typer", "rich", "pygments", "jsonschema"})
print("valid:" + ",".join(heavy))
found = validate({"x": 0, "name": "No"}, schema)
print("invalid:" + " | ".join(f"{v.path}: {v.message}" for v in found))
"""


def test_validating_a_valid_object_loads_neither_the_cel_command_line_nor_jsonschema():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    valid, invalid = out.stdout.strip().splitlines()
    assert valid == "valid:"
    # an invalid one still gets every violation, with its path and message
    assert """name: Invalid value: "No": should match '^[a-z]+$'""" in invalid and "x is too small" in invalid
