"""The pure renderer: Prometheus + monitors + rules in, Kubernetes objects out.

No I/O, no clock, no globals. See model.py for the shapes.

    render(inputs, cache=None) -> RenderResult   selection, validation, every object
    references(inputs) -> set[ObjectRef]         Secrets/ConfigMaps a render reads
    generate_config(prometheus, sms, pms, ...)   the config alone, monitors taken as given
"""

from promop.render.cache import RenderCache
from promop.render.generate import ConfigResult, generate_config
from promop.render.model import (
    Decision,
    ObjectRef,
    Problem,
    RenderInputs,
    RenderOptions,
    RenderResult,
)
from promop.render.pipeline import references, render

__all__ = [
    "ConfigResult",
    "Decision",
    "ObjectRef",
    "Problem",
    "RenderCache",
    "RenderInputs",
    "RenderOptions",
    "RenderResult",
    "generate_config",
    "references",
    "render",
]
