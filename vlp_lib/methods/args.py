"""A method's arguments as a run config holds them: a frozen dataclass per method, its defaults in one place.

Each method declares ``Args``, a subclass of ``MethodArgs`` whose fields are the arguments a run may set (ProtoCLIP's
``k``, ``target_temperature`` ...), each with its type and default. ``from_dict`` turns a notebook's or a record's
``method_kwargs`` into it, refusing an unknown key or a value of the wrong type with a ``ValueError`` naming it;
``to_dict`` gives the record form: the arguments that differ from their defaults, JSON-able (so adding an argument
with a default changes no stored run's key). What a method computes from the data and the model (a teacher's
features, the image tower) is not an argument: ``Method.arguments`` adds it.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

A = TypeVar("A", bound="MethodArgs")


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "None"
    if typing.get_origin(tp) is tuple:
        return "a list"
    if typing.get_origin(tp) is typing.Literal:
        return " or ".join(repr(v) for v in typing.get_args(tp))
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _convert(name: str, value: Any, tp: Any) -> Any:
    """``value`` as the field type ``tp`` (JSON lists become tuples, ints become floats), or ``ValueError``."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(name, value, option)
            except ValueError as err:
                errors.append(err)
        raise ValueError(f"{name} must be {' or '.join(_type_name(o) for o in options)}, got {value!r}")
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            raise ValueError(f"{name} must be one of {list(typing.get_args(tp))}, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        return int(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{name} must be a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a string, got {value!r}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ValueError(f"{name} must be a list, got {value!r}")
        items = typing.get_args(tp)
        if len(items) == 2 and items[1] is Ellipsis:
            return tuple(_convert(f"{name}[{i}]", v, items[0]) for i, v in enumerate(value))
        if len(items) != len(value):
            raise ValueError(f"{name} must hold {len(items)} values, got {value!r}")
        return tuple(_convert(f"{name}[{i}]", v, t) for i, (v, t) in enumerate(zip(value, items, strict=True)))
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ValueError(f"{name} must be a dict, got {value!r}")
        return dict(value)
    if isinstance(tp, type) and hasattr(tp, "from_dict"):  # a nested config (a RunConfig: DIME-FM's teacher)
        return value if isinstance(value, tp) else tp.from_dict(value)
    if isinstance(tp, type):
        if not isinstance(value, tp):
            raise ValueError(f"{name} must be {_type_name(tp)}, got {value!r}")
        return value
    return value


def _json(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True)
class MethodArgs:
    """No arguments (CLIP). Subclasses are frozen dataclasses; ``method`` names the method in error messages."""

    method: ClassVar[str] = "clip"

    @classmethod
    def from_dict(cls: type[A], kwargs: Mapping[str, Any] | None) -> A:
        """``kwargs`` (``method_kwargs``) as ``cls``; ``ValueError`` naming an unknown key or a badly typed value
        before any compute. A ``cls`` instance is returned as it is."""
        if isinstance(kwargs, cls):
            return kwargs
        if kwargs is None:
            kwargs = {}
        if not isinstance(kwargs, Mapping):
            raise ValueError(f"method_kwargs must be a dict, got {kwargs!r}")
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(kwargs) - set(known))
        if unknown:
            detail = f"; known: {known}" if known else ": it takes no arguments"
            raise ValueError(f"method_kwargs: unknown {cls.method} argument(s) {unknown}{detail}")
        hints = typing.get_type_hints(cls)
        return cls(**{key: _convert(key, value, hints[key]) for key, value in kwargs.items()})

    def to_dict(self) -> dict[str, Any]:
        """The record form: every argument that differs from its default, JSON-able."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            default = (
                f.default
                if f.default is not dataclasses.MISSING
                else (f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
            )
            if default is dataclasses.MISSING or _json(value) != _json(default):
                out[f.name] = _json(value)
        return out

    def kwargs(self) -> dict[str, Any]:
        """Every argument by name (the method's constructor takes them as keywords)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def replace(self: A, **changes: Any) -> A:
        """A copy with ``changes`` (checked like ``from_dict``)."""
        return type(self).from_dict({**self.kwargs(), **changes})
