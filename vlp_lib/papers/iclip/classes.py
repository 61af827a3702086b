"""The class-only view of the world: iCLIP's ImageNet-21K stand-in and its class texts.

iCLIP (Wei et al., CVPR 2023) trains on image-text pairs (YFCC-14M) and labelled images (ImageNet-21K) at once;
the labelled images are contrasted with texts made from their class names. In the world:

- ``class_data``: a single-object world (``min_objects = max_objects = 1``, all 24 shapes or a given list, all
  colours and backgrounds, its own seed), label = the shape's index in ``vocab.SHAPES``. Its captions are not the
  world's alt-text but a prompt of the class name with a template drawn per image (``class_prompt``): UniCL's
  "random prompt of the class name"; iCLIP ignores them and contrasts with ``class_texts``.
- ``class_texts``: one text per class, ``prompt(name)`` or, with ``definitions``, the class name enriched with its
  dictionary definition (``vocab.DEFINITIONS``), by default ``"{prompt}, {definition}"`` ("a photo of a square, a
  flat shape with four equal straight sides and four right angles"). The exact text format is not given in what
  we could read of iCLIP (the supplement and the iCAR preprint's abstract): ``text_format`` exposes the alternatives (e.g. ``"{name}, {definition}"``).

A text longer than the tokenizer's context is cut: ``context_needed`` says how many tokens the longest text
takes, so a method can refuse a ``context_length`` that would truncate its class texts (the longest definition,
"letter f", needs 25 tokens with the default prompt; the iCLIP chapter uses 32).

Real class data (``{"folder": PATH}``: class-labelled images ``PATH/<class>/*``, torchvision's ``ImageFolder``
layout), the reader's stand-in for ImageNet-21K:

- ``folder_class_data``: every image of every class folder (sorted; a class folder without images is left out),
  decoded as real pairs are (``data.real``: shorter side resized, centre crop) at the run's size, label = the
  class's index in ``folder_classes``; a caption is UniCL's random prompt of the class name among CLIP's 80
  ImageNet templates (``REAL_TEMPLATES``, open_clip's ``OPENAI_IMAGENET_TEMPLATES``);
- ``folder_class_texts``: iCLIP's class texts with WordNet 3.0 glosses for definitions
  (``papers.iclip.wordnet``: which synset a class name stands for, and where the database comes from); a class
  without a gloss keeps its bare prompt.
"""

from __future__ import annotations

import os
import string
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from open_clip.zero_shot_metadata import OPENAI_IMAGENET_TEMPLATES

from vlp_lib.config import check_bool, check_positive_int
from vlp_lib.data import real, vocab
from vlp_lib.data.corpora import DEFAULT_TEMPLATE, class_prompts
from vlp_lib.data.paired import PairedData, tokenize_all
from vlp_lib.data.tasks import TASK_SEED_BASE
from vlp_lib.data.world import Draws, generate
from vlp_lib.papers.iclip import wordnet
from vlp_lib.paths import DATA_PREFIX, resolve_data

# The fields a class-text format may use, and the default (our reading: the prompt, then the definition).
TEXT_FIELDS: tuple[str, ...] = ("prompt", "name", "definition")
DEFAULT_TEXT_FORMAT = "{prompt}, {definition}"
# The templates of a class image's own caption (UniCL's random prompt): the zero-shot shape templates.
CLASS_TEMPLATES: tuple[str, ...] = tuple(vocab.PROMPT_TEMPLATES["shape"])
# The class-only world's default seed: below the evaluation tasks' seeds, far from the training worlds' 0, 1, 2.
DEFAULT_CLASS_SEED = 21_000
# The random stream of a class image's prompt template: apart from the world's streams (0-3) and the NLP
# corpus' (16).
PROMPT_STREAM = 17
# The templates of a real class image's caption (UniCL's random prompt): CLIP's 80 ImageNet templates, as format
# strings (open_clip's OPENAI_IMAGENET_TEMPLATES are functions of the class name).
REAL_TEMPLATES: tuple[str, ...] = tuple(t("{}") for t in OPENAI_IMAGENET_TEMPLATES)
FOLDER_KEYS = ("folder", "seed")
MIN_CLASSES = 2


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


@lru_cache(maxsize=1)
def bpe_tokenizer() -> Any:
    """open_clip's BPE tokenizer (its ``encode`` counts a real text's tokens), built once per process (about 0.7 s)."""
    from open_clip.tokenizer import SimpleTokenizer

    return SimpleTokenizer()


def context_needed(texts: Sequence[str], tokenizer: Any = None) -> int:
    """Tokens the longest of ``texts`` takes with ``tokenizer`` (its ``encode``: open_clip's BPE tokenizer on real
    data) or, by default, the world's word tokenizer: its words (or tokens) plus ``<sot>``/``<eot>``."""
    if tokenizer is None:
        return max(len(vocab.words(t)) for t in texts) + 2
    return max(len(tokenizer.encode(t)) for t in texts) + 2


def is_folder(spec: Any) -> bool:
    """Whether class-data spec ``spec`` names real class-labelled images (``{"folder": PATH}`` or ``"folder:PATH"``)."""
    return (isinstance(spec, Mapping) and "folder" in spec) or (
        isinstance(spec, str) and spec.startswith(FOLDER_PREFIX)
    )


def check_class_data(spec: Any) -> dict[str, Any]:
    """The class-only data's spec with defaults: ``{"n": images, "seed": DEFAULT_CLASS_SEED, "shapes": None}``, or
    for real class data ``{"folder": PATH, "seed": DEFAULT_CLASS_SEED}`` (``check_folder_class_data``; the string
    ``"folder:PATH"`` reads as ``parse_class_data``).
    ``ValueError`` naming ``class_data`` (not a dict, unknown keys), ``n`` (a positive int), ``seed`` (an int in
    ``[0, tasks.TASK_SEED_BASE)``) or ``shapes``, before anything is rendered."""
    if isinstance(spec, str):
        return parse_class_data(spec)
    if is_folder(spec):
        return check_folder_class_data(spec)
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


FOLDER_PREFIX = "folder:"


def parse_class_data(text: str) -> dict[str, Any]:
    """``"folder:PATH"`` as real class data's spec ``{"folder": absolute class root}``: ``PATH/<class>/*``, or
    ``PATH/train/<class>/*`` (the image-folder task layout: its train split) when ``PATH/train`` holds folders.
    ``ValueError`` naming ``class_data`` for another string or a folder without classes."""
    if not isinstance(text, str) or not text.startswith(FOLDER_PREFIX) or not text[len(FOLDER_PREFIX) :].strip():
        raise ValueError(f"class_data must be 'folder:PATH' (class-labelled images PATH/<class>/*), got {text!r}")
    given = text[len(FOLDER_PREFIX) :].strip()
    root = Path(resolve_data(given)).expanduser()
    train = root / "train"
    if train.is_dir() and any(p.is_dir() for p in train.iterdir()):
        root, given = train, f"{given.rstrip('/')}/train"
    # a data set the book builds keeps its "data:" name: the run's key is the same on every machine
    return check_folder_class_data({"folder": given if given.startswith(DATA_PREFIX) else os.path.abspath(root)})


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < TASK_SEED_BASE:
        raise ValueError(f"class_data seed must be an integer in [0, {TASK_SEED_BASE}), got {seed!r}")
    return int(seed)


def check_folder_class_data(spec: Any) -> dict[str, Any]:
    """Real class data's spec with defaults, ``{"folder": PATH, "seed": DEFAULT_CLASS_SEED}`` (``seed``: the draws of
    UniCL's prompts). ``ValueError`` naming ``class_data`` for unknown keys, a folder that is missing or holds fewer
    than ``MIN_CLASSES`` class folders with images, before anything is decoded."""
    unknown = set(spec) - set(FOLDER_KEYS)
    if unknown:
        raise ValueError(f"class_data: unknown key(s) {sorted(unknown)}; known for a folder: {list(FOLDER_KEYS)}")
    folder = spec["folder"]
    if not isinstance(folder, (str, os.PathLike)):
        raise ValueError(f"class_data folder must be a path, got {folder!r}")
    folder_classes(str(folder))  # ValueError naming class_data
    return {"folder": str(folder), "seed": _check_seed(spec.get("seed", DEFAULT_CLASS_SEED))}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def folder_listing(folder: str) -> tuple[list[str], list[tuple[str, int]], list[str]]:
    """The class folders of ``folder`` that hold images (sorted), ``(image path, class index)`` of every image
    (torchvision's ``make_dataset`` order) and the class folders without images. ``ValueError`` naming
    ``class_data``."""
    return _listing_at(folder, _mtime(Path(resolve_data(folder))))


@lru_cache(maxsize=8)
def _listing_at(folder: str, stamp: float) -> tuple[list[str], list[tuple[str, int]], list[str]]:
    from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

    root = Path(resolve_data(folder)).expanduser()
    if not root.is_dir():
        raise ValueError(f"class_data: no such folder {folder!r} (class-labelled images: PATH/<class>/<image>)")
    try:
        names, _ = find_classes(str(root))
    except FileNotFoundError:
        names = []
    if not names:
        raise ValueError(
            f"class_data: {folder!r} holds no class folder; class data needs at least {MIN_CLASSES} "
            "(layout PATH/<class>/<image>)"
        )
    listing = make_dataset(str(root), {n: i for i, n in enumerate(names)}, IMG_EXTENSIONS, allow_empty=True)
    counts = np.bincount([y for _, y in listing], minlength=len(names))
    kept = [n for n, c in zip(names, counts) if c]
    empty = [n for n, c in zip(names, counts) if not c]
    if len(kept) < MIN_CLASSES:
        raise ValueError(
            f"class_data: {folder!r} holds {len(kept)} class folder(s) with images "
            f"({'none' if not names else ', '.join(names[:5])}{' ...' if len(names) > 5 else ''}); class data needs "
            f"at least {MIN_CLASSES} (layout PATH/<class>/<image>, images {', '.join(IMG_EXTENSIONS[:4])} ...)"
        )
    index = {n: i for i, n in enumerate(kept)}
    samples = [(path, index[names[y]]) for path, y in listing]
    return kept, samples, empty


def folder_classes(folder: str) -> list[str]:
    """The class folders of ``folder`` that hold images, sorted: label i is ``folder_classes(folder)[i]``.
    ``ValueError`` naming ``class_data`` when fewer than ``MIN_CLASSES``."""
    return list(folder_listing(folder)[0])


def class_names(spec: Any) -> list[str]:
    """The class names written in texts, one per label: ``vocab.SHAPES`` of the world's class data, or the class
    folders' names ("_" read as a space; the synset's lemma for a WordNet id or synset name: ``wordnet``)."""
    spec = check_class_data(spec)
    if is_folder(spec):
        return [wordnet.display_name(c) for c in folder_classes(spec["folder"])]
    return check_shapes(spec["shapes"])


def named_class_texts(
    folders: Sequence[str],
    definitions: bool = True,
    template: str = DEFAULT_TEMPLATE,
    text_format: str = DEFAULT_TEXT_FORMAT,
) -> list[str]:
    """One text per class of ``folders`` (real class names, e.g. an image-folder task's): ``template`` of its name,
    or with ``definitions`` ``text_format`` filled with that prompt, the name and its WordNet gloss
    (``wordnet.sense``); a class without a gloss keeps its bare prompt. ``ValueError`` naming ``definitions``,
    ``template`` or ``text_format``, or with the install command when WordNet is needed and not installed."""
    check_bool("definitions", definitions)
    names = [wordnet.display_name(f) for f in folders]
    prompts = class_prompts(names, template)
    if not definitions:
        return prompts
    check_text_format(text_format)
    return [
        prompt
        if sense.gloss is None
        else text_format.format(prompt=prompt.rstrip(". "), name=name, definition=sense.gloss)
        for prompt, name, sense in zip(prompts, names, wordnet.senses(folders))
    ]


def folder_class_texts(
    spec: Any, definitions: bool = True, template: str = DEFAULT_TEMPLATE, text_format: str = DEFAULT_TEXT_FORMAT
) -> list[str]:
    """``named_class_texts`` of real class data ``spec``'s classes, in label order."""
    return named_class_texts(
        folder_classes(check_folder_class_data(spec)["folder"]), definitions, template, text_format
    )


def class_prompt(seed: int, index: int, name: str, templates: Sequence[str] = CLASS_TEMPLATES) -> str:
    """The caption of class image ``index``: its class ``name`` in a template drawn from ``(seed, index)``."""
    return templates[Draws(seed, index, PROMPT_STREAM).below(len(templates))].format(name)


def class_data(
    spec: dict[str, Any],
    image_size: int,
    tokenizer: Callable[[Sequence[str]], torch.Tensor],
    templates: Sequence[str] | None = None,
) -> PairedData:
    """The class-only training data of ``spec`` (``check_class_data``) at ``image_size``: single-object images,
    ``extra["class_label"]`` = the shape's index in ``vocab.SHAPES`` (int64), captions = ``class_prompt`` of each
    image's class (``templates``, default ``CLASS_TEMPLATES``), tokenised with ``tokenizer``. Rendered through the
    world's cache. Real class data (``{"folder": PATH}``): ``folder_class_data``."""
    if is_folder(spec):
        return folder_class_data(spec, image_size, tokenizer, REAL_TEMPLATES if templates is None else templates)
    templates = CLASS_TEMPLATES if templates is None else templates
    spec = check_class_data(spec)
    w = generate(spec["n"], spec["seed"], image_size, min_objects=1, max_objects=1, shapes=spec["shapes"])
    labels = np.asarray(w.labels["shape"], np.int64)
    captions = [class_prompt(spec["seed"], i, vocab.SHAPES[y], templates) for i, y in enumerate(labels.tolist())]
    return PairedData(
        images=w.images, captions=captions, tokens=tokenize_all(tokenizer, captions), extra={"class_label": labels}
    )


def folder_class_data(
    spec: Mapping[str, Any],
    image_size: int,
    tokenizer: Callable[[Sequence[str]], torch.Tensor],
    templates: Sequence[str] = REAL_TEMPLATES,
    workers: int | None = None,
) -> PairedData:
    """Real class data ``spec`` (``check_folder_class_data``) at ``image_size``: every image of its class folders,
    decoded by ``workers`` DataLoader workers as real pairs are (``data.real.decoded``), ``extra["class_label"]`` =
    the class's index in ``folder_classes`` (int64), captions = ``class_prompt`` of the class name
    (``class_names``) in ``templates``, tokenised with ``tokenizer``. An image that does not decode is skipped and
    counted (a warning), refused past ``real.MAX_BAD_FRACTION`` with a ``ValueError`` naming ``class_data``."""
    spec = check_folder_class_data(spec)
    _, listing, empty = folder_listing(spec["folder"])
    names = class_names(spec)
    if empty:
        warnings.warn(f"class_data {spec['folder']!r}: class folders without images left out: {empty}", stacklevel=2)
    samples = [real.Sample(path, path, "-") for path, _ in listing]  # a class image's caption is its prompt
    images = np.zeros((len(samples), image_size, image_size, 3), dtype=np.uint8)
    kept: list[int] = []
    bad: dict[str, list[str]] = {}
    for i, image, _, reason in real.decoded(
        samples, image_size, real.default_workers() if workers is None else workers
    ):
        if reason:
            bad.setdefault(reason, []).append(samples[i].key)
        else:
            images[i] = image
            kept.append(i)
    real.check_bad(f"class_data {spec['folder']!r}", len(samples), len(samples) - len(kept), bad)
    if bad:
        warnings.warn(
            f"class_data {spec['folder']!r}: skipped " + ", ".join(f"{len(k)} {r}" for r, k in bad.items()),
            stacklevel=2,
        )
    kept.sort()
    labels = np.asarray([listing[i][1] for i in kept], np.int64)
    captions = [class_prompt(spec["seed"], i, names[y], templates) for i, y in enumerate(labels.tolist())]
    return PairedData(
        images=images[kept], captions=captions, tokens=tokenize_all(tokenizer, captions), extra={"class_label": labels}
    )
