"""Where promop's shipped data lives: the CRDs and the demo's examples.

One place to ask, so that a checkout and an installed wheel give the same answer.
"""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent


def crds_dir() -> Path:
    """The folder of CRD YAML files that `kubectl apply -f crds/` uses."""
    return _ROOT / "crds"


def examples_dir() -> Path:
    """The folder of example objects that `promop demo` applies."""
    return _ROOT / "examples"
