"""Pretraining methods: each one plugs a loss (and optional per-episode work) into ``vlp_lib.train``.

A method is an ``nn.Module`` so that its own parameters (projection heads, temperatures) are
optimised, checkpointed and resumed together with the model. ``create_method`` is the factory.

The core defines CLIP; every other method lives in its paper's folder (``vlp_lib/papers/<paper>/method.py``) and is
found through the papers' registry (``vlp_lib.papers.Chapter.methods``). The core names no paper: it loads the
papers as plug-ins, by the package name ``PAPERS_PACKAGE`` with ``importlib``, when a method name is not its own,
so that no module of the core imports a paper and no paper's import reaches back into a package that imports it.
"""

from __future__ import annotations

import importlib
from typing import Any

from vlp_lib.methods.args import MethodArgs
from vlp_lib.methods.base import Batch, Episode, Method, MethodContext
from vlp_lib.methods.clip import CLIP

PAPERS_PACKAGE = "vlp_lib.papers"
_CORE_METHODS: dict[str, type[Method]] = {"clip": CLIP}
_REGISTERED: dict[str, type[Method]] = {}  # register_method: a method defined in a notebook, for tinkering


def _papers() -> Any:
    return importlib.import_module(PAPERS_PACKAGE)


def paper_of(name: str) -> str | None:
    """The paper (folder name) that defines method ``name``, or ``None`` for a core or tinkering method."""
    if name in _CORE_METHODS or name in _REGISTERED:
        return None
    return _papers().paper_of_method(name)


def available_methods() -> list[str]:
    paper_methods = [m for chapter in _papers().chapters() for m in chapter.methods]
    return sorted({*_CORE_METHODS, *_REGISTERED, *paper_methods})


def register_method(cls: type[Method]) -> type[Method]:
    """Make ``cls`` available by its ``name`` (a method written in a notebook); its runs use the core's fingerprint."""
    _REGISTERED[cls.name] = cls
    return cls


def check_method_name(name: str) -> str:
    known = available_methods()
    if name not in known:
        raise ValueError(f"method must be one of {known}, got {name!r}")
    return name


def method_class(name: str) -> type[Method]:
    """The class of method ``name``: the core's, a registered one, or imported from its paper's ``method`` module."""
    if name in _CORE_METHODS:
        return _CORE_METHODS[name]
    if name in _REGISTERED:
        return _REGISTERED[name]
    paper = paper_of(check_method_name(name))
    module = importlib.import_module(f"{PAPERS_PACKAGE}.{paper}.method")
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, Method) and value.name == name:
            return value
    raise ValueError(
        f"method {name!r}: paper {paper!r} registers it, but {module.__name__} defines no Method "
        f"subclass with name = {name!r}"
    )


def create_method(name: str, **kwargs: Any) -> Method:
    return method_class(name)(**kwargs)


__all__ = [
    "Batch",
    "Episode",
    "Method",
    "MethodArgs",
    "MethodContext",
    "CLIP",
    "PAPERS_PACKAGE",
    "available_methods",
    "check_method_name",
    "create_method",
    "method_class",
    "paper_of",
    "register_method",
]
