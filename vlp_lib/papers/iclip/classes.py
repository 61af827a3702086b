"""The class-only view of the world: iCLIP's ImageNet-21K stand-in (spec 3.3) and its class texts.

iCLIP (Wei et al., CVPR 2023) trains on image-text pairs (YFCC-14M) and labelled images (ImageNet-21K) at once;
the labelled images are contrasted with texts made from their class names. In the world:

- ``class_data``: a single-object world (``min_objects = max_objects = 1``, all 24 shapes or a given list, all
  colours and backgrounds, its own seed), label = the shape's index in ``vocab.SHAPES``. Its captions are not the
  world's alt-text but a prompt of the class name with a template drawn per image (``class_prompt``): UniCL's
  "random prompt of the class name"; iCLIP ignores them and contrasts with ``class_texts``.
- ``class_texts``: one text per class, ``prompt(name)`` or, with ``definitions``, the class name enriched with its
  dictionary definition (``vocab.DEFINITIONS``), by default ``"{prompt}, {definition}"`` ("a photo of a square, a
  flat shape with four equal straight sides and four right angles"). The main paper's exact text format is not in
  our sources (spec 3.2): ``text_format`` exposes the alternatives (e.g. ``"{name}, {definition}"``).

A text longer than the tokenizer's context is cut: ``context_needed`` says how many tokens the longest text
takes, so a method can refuse a ``context_length`` that would truncate its class texts (the longest definition,
"letter f", needs 25 tokens with the default prompt; the iCLIP chapter uses 32).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from vlp_lib.config import check_bool, check_positive_int
from vlp_lib.data import vocab
from vlp_lib.data.corpora import DEFAULT_TEMPLATE, class_prompts
from vlp_lib.data.paired import PairedData, tokenize_all
from vlp_lib.data.tasks import TASK_SEED_BASE
from vlp_lib.data.world import Draws, generate

# The fields a class-text format may use, and the default (spec 3.2: "{prompt}, {definition}").
TEXT_FIELDS: tuple[str, ...] = ("prompt", "name", "definition")
DEFAULT_TEXT_FORMAT = "{prompt}, {definition}"
# The templates of a class image's own caption (UniCL's random prompt): the zero-shot shape templates.
CLASS_TEMPLATES: tuple[str, ...] = tuple(vocab.PROMPT_TEMPLATES["shape"])
# The class-only world's default seed: below the evaluation tasks' seeds, far from the training worlds' 0, 1, 2.
DEFAULT_CLASS_SEED = 21_000
# The random stream of a class image's prompt template: apart from the world's streams (0-3) and the NLP
# corpus' (16).
PROMPT_STREAM = 17


def check_shapes(shapes: Any) -> list[str]:
    """The class set: ``None`` = all of ``vocab.SHAPES``, else a non-empty list of known shape names, returned in
    ``vocab.SHAPES`` order. ``ValueError`` naming ``shapes``."""
    if shapes is None:
        return list(vocab.SHAPES)
    if isinstance(shapes, str) or not isinstance(shapes, (list, tuple)) or not shapes:
        raise ValueError(f"shapes must be a non-empty list of shape names, got {shapes!r}")
    unknown = [s for s in shapes if s not in vocab.SHAPES]
    if unknown:
        raise ValueError(f"shapes: unknown names {unknown}; known: {vocab.SHAPES}")
    return [s for s in vocab.SHAPES if s in set(shapes)]


def check_text_format(text_format: Any) -> str:
    """``ValueError`` naming ``text_format`` unless it is a ``str.format`` string whose fields are named, known
    (``TEXT_FIELDS``) and include ``{definition}`` (without it ``definitions=True`` would add nothing)."""
    if not isinstance(text_format, str):
        raise ValueError(f"text_format must be a string with fields {TEXT_FIELDS}, got {text_format!r}")
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text_format) if f is not None]
    except ValueError as err:
        raise ValueError(f"text_format {text_format!r} is not a format string: {err}") from None
    unknown = [f for f in fields if f not in TEXT_FIELDS]
    if unknown:
        raise ValueError(f"text_format: unknown field(s) {unknown} in {text_format!r}; known: {TEXT_FIELDS}")
    if "definition" not in fields:
        raise ValueError(f"text_format must contain {{definition}} (the dictionary enhancement), got {text_format!r}")
    return text_format


def class_texts(
    shapes: Sequence[str] | None = None,
    definitions: bool = True,
    template: str = DEFAULT_TEMPLATE,
    text_format: str = DEFAULT_TEXT_FORMAT,
) -> list[str]:
    """One text per class of ``shapes`` (``check_shapes`` order): ``template.format(name)``, or with
    ``definitions`` ``text_format`` filled with that prompt (its final full stop dropped, the definition follows),
    the name and ``vocab.DEFINITIONS[name]``. ``ValueError`` naming ``shapes``, ``definitions``, ``template`` or
    ``text_format``."""
    names = check_shapes(shapes)
    check_bool("definitions", definitions)
    prompts = class_prompts(names, template)
    if not definitions:
        return prompts
    check_text_format(text_format)
    return [
        text_format.format(prompt=p.rstrip(". "), name=n, definition=vocab.DEFINITIONS[n])
        for p, n in zip(prompts, names)
    ]


def context_needed(texts: Sequence[str]) -> int:
    """Tokens the longest of ``texts`` takes with the world's word tokenizer: its words plus ``<sot>``/``<eot>``."""
    return max(len(vocab.words(t)) for t in texts) + 2


def check_class_data(spec: Any) -> dict[str, Any]:
    """The class-only data's spec with defaults: ``{"n": images, "seed": DEFAULT_CLASS_SEED, "shapes": None}``.
    ``ValueError`` naming ``class_data`` (not a dict, unknown keys), ``n`` (a positive int), ``seed`` (an int in
    ``[0, tasks.TASK_SEED_BASE)``) or ``shapes``, before anything is rendered."""
    if not isinstance(spec, dict) or "n" not in spec:
        raise ValueError(f"class_data must be a dict {{'n': images, 'seed': int, 'shapes': [...]}}, got {spec!r}")
    unknown = set(spec) - {"n", "seed", "shapes"}
    if unknown:
        raise ValueError(f"class_data: unknown key(s) {sorted(unknown)}; known: ['n', 'seed', 'shapes']")
    n = check_positive_int("class_data n", spec["n"])
    seed = spec.get("seed", DEFAULT_CLASS_SEED)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < TASK_SEED_BASE:
        raise ValueError(
            f"class_data seed must be an integer in [0, {TASK_SEED_BASE}) (below the evaluation "
            f"tasks' seeds), got {seed!r}"
        )
    shapes = spec.get("shapes")
    return {"n": n, "seed": int(seed), "shapes": None if shapes is None else check_shapes(shapes)}


def class_prompt(seed: int, index: int, name: str, templates: Sequence[str] = CLASS_TEMPLATES) -> str:
    """The caption of class image ``index``: its class ``name`` in a template drawn from ``(seed, index)``."""
    return templates[Draws(seed, index, PROMPT_STREAM).below(len(templates))].format(name)


def class_data(
    spec: dict[str, Any],
    image_size: int,
    tokenizer: Callable[[Sequence[str]], torch.Tensor],
    templates: Sequence[str] = CLASS_TEMPLATES,
) -> PairedData:
    """The class-only training data of ``spec`` (``check_class_data``) at ``image_size``: single-object images,
    ``extra["class_label"]`` = the shape's index in ``vocab.SHAPES`` (int64), captions = ``class_prompt`` of each
    image's class, tokenised with ``tokenizer``. Rendered through the world's cache."""
    spec = check_class_data(spec)
    w = generate(spec["n"], spec["seed"], image_size, min_objects=1, max_objects=1, shapes=spec["shapes"])
    labels = np.asarray(w.labels["shape"], np.int64)
    captions = [class_prompt(spec["seed"], i, vocab.SHAPES[y], templates) for i, y in enumerate(labels.tolist())]
    return PairedData(
        images=w.images, captions=captions, tokens=tokenize_all(tokenizer, captions), extra={"class_label": labels}
    )
