"""Where promop's shipped data lives: the CRDs, the demo's examples and the simulators' scenarios.

One place to ask, so that a checkout and an installed wheel give the same answer: a wheel
carries the folders as promop/_shipped/ (copied there at build time by setup.py); a checkout
(or an editable install) has them at its top level.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent


def _folder(name: str) -> Path:
    shipped = _PACKAGE / "_shipped" / name
    return shipped if shipped.is_dir() else _CHECKOUT / name


def crds_dir() -> Path:
    """The folder of CRD YAML files (the one `kubectl apply -f crds/` uses in a checkout)."""
    return _folder("crds")


def examples_dir() -> Path:
    """The folder of example objects that `promop demo` applies."""
    return _folder("examples")


def scenarios_dir() -> Path:
    """The folder of example inputs for `promop hpa simulate` and `promop recommender simulate`
    (kept out of examples/, which `promop demo`, `kubectl apply -f` and `promop render -f` read
    as Kubernetes objects)."""
    return _folder("scenarios")
