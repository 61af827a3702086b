"""Pretraining methods: each one plugs a loss (and optional per-episode work) into ``vlp_lib.train``.

A method is an ``nn.Module`` so that its own parameters (projection heads, temperatures) are
optimised, checkpointed and resumed together with the model. ``create_method`` is the factory.
"""

from __future__ import annotations

from typing import Any

from .base import Batch, Episode, Method, MethodContext
from .clip import CLIP
from .dimefm import DIMEFM
from .iclip import ICLIP, UniCL
from .icmlm import ICMLM, TagPrediction
from .protoclip import ProtoCLIP
from .pyramidclip import PyramidCLIP

_METHODS: dict[str, type[Method]] = {"clip": CLIP, "protoclip": ProtoCLIP, "pyramidclip": PyramidCLIP, "dimefm": DIMEFM,
                                     "iclip": ICLIP, "unicl": UniCL,
                                     "tp": TagPrediction, "icmlm": ICMLM}


def register_method(cls: type[Method]) -> type[Method]:
    _METHODS[cls.name] = cls
    return cls


def available_methods() -> list[str]:
    return sorted(_METHODS)


def check_method_name(name: str) -> str:
    if name not in _METHODS:
        raise ValueError(f"method must be one of {available_methods()}, got {name!r}")
    return name


def method_class(name: str) -> type[Method]:
    return _METHODS[check_method_name(name)]


def create_method(name: str, **kwargs: Any) -> Method:
    return _METHODS[check_method_name(name)](**kwargs)


__all__ = ["Batch", "Episode", "Method", "MethodContext", "CLIP", "DIMEFM", "ICLIP", "ICMLM", "ProtoCLIP", "PyramidCLIP",
           "TagPrediction", "UniCL", "create_method", "available_methods", "register_method"]
