"""Fixed evaluation tasks of the generated world, standing in for the papers' benchmarks.

Each task is a spec (a dict: what it measures, which real data set it stands in for, label, class names,
prompt templates, generation knobs, image size, seeds) and ``load_task`` renders it through
``vlp_lib.data.world.generate`` (so it is cached). Task seeds are fixed constants >= ``TASK_SEED_BASE``
(10**9), distinct per task and split: a training world generated with a smaller seed, the train split
and the test split never share an image.

``load_retrieval`` builds the MS-COCO stand-in: images with five clean paraphrased captions each; with
``name="retrieval2"`` the Flickr30K stand-in of the iCLIP chapter (``RETRIEVAL_SETS``).
``load_multilabel_task`` builds the multi-label tasks of ``MULTILABEL_TASKS`` (a multi-hot target row per image
instead of one label): which of the 24 shapes an image of 1-3 objects holds, probed with logistic regressions
(``"presence"``, PyramidCLIP's detection stand-in) or with ICMLM's linear SVMs in distribution (``"objects"``, the
MS-COCO stand-in) and under a shift (``"objects_shift"``, 64 px and clutter: the PASCAL VOC07 stand-in).
The DIME-FM tasks (``DIMEFM_TASKS``, part of ``TASKS``): ``"shapesA"`` (12-way over ``SHAPE_SET_A``, the
concepts of the Supp G image corpus), ``"shapes24"`` (24-way, per-concept accuracy) and the four robustness
variants of shapes10 in ``ROBUST_TASKS`` (same classes and templates, one distribution shift each).
``SEVEN_TASKS`` are the seven original tasks, averaged into ``avg7/<metric>`` by ``vlp_lib.suite``.
The class-only labelled view (ImageNet-21K stand-in for iCLIP) is ``vlp_lib.papers.iclip.classes``: the shape label plus
``vocab.DEFINITIONS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlp_lib.config import check_positive_int, scale_defaults
from vlp_lib.data import folder_tasks, vocab, world
from vlp_lib.data.labelled import Task

TASK_SEED_BASE = 10**9
SPLITS = ("train", "test")

# Ten shapes in five look-alike pairs: the CIFAR-10 / STL-10 stand-ins are hard where it is interesting.
SHAPES10 = [
    "square",
    "rectangle",
    "circle",
    "ellipse",
    "star",
    "hexagram",
    "triangle",
    "arrowhead",
    "cross",
    "letter t",
]
# Twenty shapes whose filled area shows colour well (the thin line figures are left out).
SHAPES20 = [s for s in vocab.SHAPES if vocab.SHAPE_SUPERCLASS[s] != "line figure"]

_SINGLE = dict(min_objects=1, max_objects=1)

TASKS: dict[str, dict[str, Any]] = {
    "shapes10": dict(
        description="10 shapes in 5 look-alike pairs, one object per image",
        stands_in_for="CIFAR-10",
        label="shape",
        classnames=list(SHAPES10),
        templates=vocab.PROMPT_TEMPLATES["shape"],
        knobs=dict(_SINGLE, shapes=SHAPES10),
        image_size=32,
    ),
    "shapes_colours": dict(
        description="20 shapes x 5 colour families = 100 classes, one object per image",
        stands_in_for="CIFAR-100",
        label="shape_colour",
        classnames=[f"{c} {s}" for s in SHAPES20 for c in vocab.COLOUR_FAMILIES],
        templates=vocab.PROMPT_TEMPLATES["shape_colour"],
        knobs=dict(_SINGLE, shapes=SHAPES20, colours=vocab.COLOUR_FAMILIES),
        image_size=32,
    ),
    "clutter10": dict(
        description="the 10 shapes of shapes10 at 64 px, 1-3 objects on cluttered backgrounds; "
        "label = the primary (largest) object's shape",
        stands_in_for="STL-10",
        label="shape",
        classnames=list(SHAPES10),
        templates=vocab.PROMPT_TEMPLATES["shape"],
        knobs=dict(min_objects=1, max_objects=3, shapes=SHAPES10, clutter=0.4),
        image_size=64,
    ),
    "background": dict(
        description="background texture (8 classes), 1-3 objects",
        stands_in_for="DTD (texture)",
        label="background",
        classnames=list(vocab.BACKGROUNDS),
        templates=vocab.PROMPT_TEMPLATES["background"],
        knobs=dict(),
        image_size=32,
    ),
    "count": dict(
        description="number of objects (1-3)",
        stands_in_for="CLEVR counts",
        label="count",
        classnames=[f"{w} shape" if w == "one" else f"{w} shapes" for w in vocab.COUNT_WORDS],
        templates=vocab.PROMPT_TEMPLATES["count"],
        knobs=dict(),
        image_size=32,
    ),
    "colour": dict(
        description="colour of the single object (12 classes)",
        stands_in_for="colour probing (no single paper benchmark)",
        label="colour",
        classnames=list(vocab.COLOURS),
        templates=vocab.PROMPT_TEMPLATES["colour"],
        knobs=dict(_SINGLE),
        image_size=32,
        per_class=True,  # the suite adds colour/zeroshot_top1/<colour> (DIME-FM's concept coverage, D4/D5)
    ),
    "superclass": dict(
        description="superclass of the single object (6 classes), all 24 shapes",
        stands_in_for="CIFAR-100 coarse labels",
        label="superclass",
        classnames=list(vocab.SUPERCLASSES),
        templates=vocab.PROMPT_TEMPLATES["superclass"],
        knobs=dict(_SINGLE),
        image_size=32,
    ),
}
# Fixed seeds: task k of these seven uses TASK_SEED_BASE + 100 * k (train) and + 1 (test); retrieval and the
# DIME-FM tasks below use their own.
for _k, _spec in enumerate(TASKS.values()):
    _spec["seeds"] = dict(train=TASK_SEED_BASE + 100 * _k, test=TASK_SEED_BASE + 100 * _k + 1)
RETRIEVAL_SEED = TASK_SEED_BASE + 99_000

# The seven tasks above: the ELEVATER-average stand-in ``avg7/<metric>`` of ``vlp_lib.suite`` (DIME-FM).
SEVEN_TASKS: tuple[str, ...] = (
    "shapes10",
    "shapes_colours",
    "clutter10",
    "background",
    "count",
    "colour",
    "superclass",
)
assert SEVEN_TASKS == tuple(TASKS), "SEVEN_TASKS must be the tasks whose seeds come from their position"

# DIME-FM's concept-coverage settings (Supp G): the image corpus covers shape set A, the unrelated text corpus
# names shape set B. Names, as the world's ``shapes`` / ``held_out_shapes`` knobs take them. A is the first 12
# shapes of ``vocab.SHAPES``: the polygons, round shapes and star shapes (three whole superclasses); B is the
# pointers, glyphs and line figures.
SHAPE_SET_A: tuple[str, ...] = tuple(vocab.SHAPES[:12])
SHAPE_SET_B: tuple[str, ...] = tuple(vocab.SHAPES[12:])
# The colours of the desaturated ("sketch") robustness variant of shapes10.
GRAY_COLOURS: tuple[str, ...] = ("white", "grey", "black")


def _shapes10_variant(description: str, stands_in_for: str, image_size: int = 32, **knobs: Any) -> dict[str, Any]:
    """A robustness variant of shapes10: its label, classes and templates, its knobs updated by ``knobs``."""
    base = TASKS["shapes10"]
    return dict(
        description=description,
        stands_in_for=stands_in_for,
        label=base["label"],
        classnames=list(base["classnames"]),
        templates=list(base["templates"]),
        knobs={**base["knobs"], "shapes": list(base["knobs"]["shapes"]), **knobs},
        image_size=image_size,
    )


# DIME-FM tasks (our stand-ins): the 12-way S_A task of the Supp G settings, the 24-way per-concept task (D4/D5) and
# four distribution shifts of shapes10 (D11, the ImageNet-V2/R/ObjectNet/Sketch/A stand-in; the pairing of each
# shift with a real set is loose). Their seeds are explicit, not positional: DIMEFM_SEED_BASE + 100 * k (train)
# and + 1 (test), apart from the seven tasks (< +1,000), relation (+97,000), multi-label (+98,000) and
# retrieval (+99,000).
DIMEFM_SEED_BASE = TASK_SEED_BASE + 96_000
DIMEFM_TASKS: dict[str, dict[str, Any]] = {
    "shapesA": dict(
        description="the 12 shapes of shape set A (polygons, round shapes, star shapes), one object per image",
        stands_in_for="DIME-FM Supp G's covered-concept evaluation (ImageNet classes of the image corpus)",
        label="shape",
        classnames=list(SHAPE_SET_A),
        templates=vocab.PROMPT_TEMPLATES["shape"],
        knobs=dict(_SINGLE, shapes=list(SHAPE_SET_A)),
        image_size=32,
    ),
    "shapes24": dict(
        description="all 24 shapes, one object per image (per-concept accuracy)",
        stands_in_for="DIME-FM Supp E's per-dataset comparison (concept coverage, D4/D5)",
        label="shape",
        classnames=list(vocab.SHAPES),
        templates=vocab.PROMPT_TEMPLATES["shape"],
        knobs=dict(_SINGLE, shapes=list(vocab.SHAPES)),
        image_size=32,
        per_class=True,  # the suite adds shapes24/zeroshot_top1/<shape>
    ),
    "shapes10_clutter": _shapes10_variant(
        "shapes10 with clutter 0.6 (distractor strokes and pixel noise) at 32 px",
        "ImageNet-A (hard natural images), robustness shift",
        clutter=0.6,
    ),
    "shapes10_64px": _shapes10_variant(
        "shapes10 rendered at 64 px (evaluation resizes to the model's input size: a resampling shift; "
        "background textures are finer relative to the object)",
        "ImageNet-V2 (a re-collected test set), robustness shift",
        image_size=64,
    ),
    "shapes10_three": _shapes10_variant(
        "shapes10 with 3 objects per image (distractors from the same 10 shapes); label = the primary "
        "(largest) object's shape",
        "ObjectNet (objects in busy scenes), robustness shift",
        min_objects=3,
        max_objects=3,
    ),
    "shapes10_gray": _shapes10_variant(
        "shapes10 with white, grey and black objects only (a desaturated, sketch-like shift)",
        "ImageNet-Sketch / ImageNet-R (renditions without colour), robustness shift",
        colours=list(GRAY_COLOURS),
    ),
}
for _k, _spec in enumerate(DIMEFM_TASKS.values()):
    _spec["seeds"] = dict(train=DIMEFM_SEED_BASE + 100 * _k, test=DIMEFM_SEED_BASE + 100 * _k + 1)
TASKS.update(DIMEFM_TASKS)
# The robustness variants of shapes10: their mean zero-shot top-1 is ``robust4/zeroshot_top1`` (``vlp_lib.suite``).
ROBUST_TASKS: tuple[str, ...] = ("shapes10_clutter", "shapes10_64px", "shapes10_three", "shapes10_gray")
# Retrieval: clean captions (no mismatch, junk or omission); 1-3 objects so captions differ in detail.
RETRIEVAL_KNOBS = dict(mismatch_rate=0.0, junk_rate=0.0, omit_rate=0.0)
# Retrieval sets by name (``load_retrieval``): "retrieval", the MS-COCO stand-in every run is evaluated on, and
# "retrieval2", the Flickr30K stand-in of the iCLIP chapter (our stand-in: 1-2 objects, clutter 0.3, five
# paraphrases), evaluated when named in ``eval_tasks``. Its seed is its own (+95,000), apart from the tasks
# (< +1,000), DIME-FM (+96,000), relation (+97,000), multi-label (+98,000) and the first retrieval set (+99,000).
RETRIEVAL2_SEED = TASK_SEED_BASE + 95_000
RETRIEVAL_SETS: dict[str, dict[str, Any]] = {
    "retrieval": dict(seed=RETRIEVAL_SEED, knobs=RETRIEVAL_KNOBS, stands_in_for="MS-COCO (5K test)"),
    "retrieval2": dict(
        seed=RETRIEVAL2_SEED,
        knobs=dict(RETRIEVAL_KNOBS, max_objects=2, clutter=0.3),
        stands_in_for="Flickr30K (1K test)",
    ),
}

# Multi-label tasks: the target of an image is a multi-hot row over ``classnames`` (every object counts, not only
# the primary one). Their own fixed seeds, apart from ``TASKS`` (< +1,000) and retrieval (+99,000).
MULTILABEL_SEED_BASE = TASK_SEED_BASE + 98_000


def _shape_presence(
    description: str, stands_in_for: str, probe: str, image_size: int = 32, **knobs: Any
) -> dict[str, Any]:
    """A multi-label task over the 24 shapes of images of 1-3 objects (``knobs`` added), scored by ``probe``."""
    return dict(
        description=description,
        stands_in_for=stands_in_for,
        classnames=list(vocab.SHAPES),
        templates=vocab.PROMPT_TEMPLATES["shape"],
        knobs=dict(min_objects=1, max_objects=3, **knobs),
        image_size=image_size,
        probe=probe,
    )


MULTILABEL_TASKS: dict[str, dict[str, Any]] = {
    "presence": _shape_presence(
        "which of the 24 shapes are in the image: 1-3 objects, every object labelled",
        "PASCAL VOC / MS-COCO multi-label classification (detection probe)",
        "logistic",
    ),
    # ICMLM's target tasks (Supp F.2: one-vs-all linear SVMs, cost chosen on validation): the in-distribution
    # stand-in of COCO (the world's 1-3 objects) and the shifted one of VOC07 (other pixels, clutter)
    "objects": _shape_presence(
        "which of the 24 shapes are in the image: 1-3 objects, the training world's distribution",
        "MS-COCO multi-label classification (linear SVMs)",
        "svm",
    ),
    "objects_shift": _shape_presence(
        "which of the 24 shapes are in the image: 1-3 objects at 64 px with clutter 0.4 (a shift)",
        "PASCAL VOC07 multi-label classification (linear SVMs)",
        "svm",
        image_size=64,
        clutter=0.4,
    ),
}
for _k, _spec in enumerate(MULTILABEL_TASKS.values()):
    _spec["seeds"] = dict(train=MULTILABEL_SEED_BASE + 100 * _k, test=MULTILABEL_SEED_BASE + 100 * _k + 1)


@dataclass
class RetrievalSet:
    """Images with ``captions_per_image`` captions each: caption ``k`` describes image ``text_image_index[k]``."""

    images: np.ndarray  # uint8 [n, H, W, 3]
    captions: list[str]  # n * captions_per_image, image i's at [i * c, (i + 1) * c)
    text_image_index: np.ndarray  # int64 [n * captions_per_image]
    summaries: list[str]  # one clean clause per image (every object, canonical words)
    captions_per_image: int = 5

    def __len__(self) -> int:
        return len(self.images)


@dataclass
class MultiLabelTask:
    """A multi-label evaluation split: images and a multi-hot ``targets`` row per image over ``classnames``."""

    name: str
    split: str
    images: np.ndarray  # uint8 [n, H, W, 3]
    targets: np.ndarray  # int64 [n, len(classnames)], 1 where the class is present
    classnames: list[str]
    templates: list[str]
    stands_in_for: str
    description: str = ""

    def __len__(self) -> int:
        return len(self.targets)


def task_names() -> list[str]:
    return list(TASKS)


def multilabel_task_names() -> list[str]:
    return list(MULTILABEL_TASKS)


def _labels(spec: dict[str, Any], w: world.World) -> np.ndarray:
    """Task labels from the world's labels (global ids -> positions in the task's class list)."""
    kind = spec["label"]
    if kind == "shape":
        lut = np.full(len(vocab.SHAPES), -1, np.int64)
        lut[[vocab.SHAPES.index(s) for s in spec["classnames"]]] = np.arange(len(spec["classnames"]))
        return lut[w.labels["shape"]]
    if kind == "shape_colour":
        shapes, colours = spec["knobs"]["shapes"], spec["knobs"]["colours"]
        s = np.full(len(vocab.SHAPES), -1, np.int64)
        s[[vocab.SHAPES.index(x) for x in shapes]] = np.arange(len(shapes))
        c = np.full(len(vocab.COLOURS), -1, np.int64)
        c[[vocab.COLOURS.index(x) for x in colours]] = np.arange(len(colours))
        return s[w.labels["shape"]] * len(colours) + c[w.labels["colour"]]
    if kind == "count":
        return w.labels["count"] - 1
    return w.labels[kind].astype(np.int64)  # background, colour, superclass: global ids are class ids


def _split_size(split: str, n: int | None, scale: str) -> int:
    """The number of images of split ``split`` of a task: ``n``, or the scale's ``task_train`` / ``task_test``
    (``ValueError`` naming ``split``, ``n`` or ``scale``, before anything is generated)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {list(SPLITS)}, got {split!r}")
    defaults = scale_defaults(scale)
    return check_positive_int("n", defaults[f"task_{split}"] if n is None else n)


def load_task(name: str, split: str, n: int | None = None, scale: str = "laptop") -> Task:
    """Split ``split`` ("train" | "test") of task ``name`` with ``n`` images (default from ``scale``:
    ``task_train`` / ``task_test``). ``ValueError`` naming the parameter for a bad name, split, n or scale.
    ``name`` may also be a real image-folder task, ``"folder:<path>"`` (``vlp_lib.data.folder_tasks``)."""
    if folder_tasks.is_folder_task(name):
        return folder_tasks.load_folder_task(name, split, _split_size(split, n, scale))
    if name not in TASKS:
        raise ValueError(f"name must be one of {list(TASKS)}, got {name!r}")
    n = _split_size(split, n, scale)
    spec = TASKS[name]
    w = world.generate(n, spec["seeds"][split], spec["image_size"], **spec["knobs"])
    labels = _labels(spec, w)
    assert labels.min() >= 0 and labels.max() < len(spec["classnames"]), name
    return Task(
        name=name,
        split=split,
        images=w.images,
        labels=labels,
        classnames=list(spec["classnames"]),
        templates=list(spec["templates"]),
        stands_in_for=spec["stands_in_for"],
        description=spec["description"],
    )


def shape_multi_hot(objects: Sequence[np.ndarray], num_classes: int = len(vocab.SHAPES)) -> np.ndarray:
    """Multi-hot shape presence per image: int64 ``[n, num_classes]``, row ``i`` is 1 at the shape id of every
    object of ``objects[i]`` (``World.objects``: ``[m_i, 3]`` rows of shape id, colour id, size id)."""
    num_classes = check_positive_int("num_classes", num_classes)
    out = np.zeros((len(objects), num_classes), np.int64)
    for i, o in enumerate(objects):
        o = np.asarray(o)
        if o.ndim != 2 or o.shape[1] < 1 or not np.issubdtype(o.dtype, np.integer):
            raise ValueError(f"objects[{i}] must be an integer array [m, 3], got {o.dtype} {o.shape}")
        if len(o) and (o[:, 0].min() < 0 or o[:, 0].max() >= num_classes):
            raise ValueError(f"objects[{i}] has a shape id outside [0, {num_classes})")
        out[i, o[:, 0]] = 1
    return out


def load_multilabel_task(name: str, split: str, n: int | None = None, scale: str = "laptop") -> MultiLabelTask:
    """Split ``split`` ("train" | "test") of multi-label task ``name`` (``MULTILABEL_TASKS``) with ``n`` images
    (default from ``scale``: ``task_train`` / ``task_test``): the spec's images and the multi-hot of the shapes
    they hold (``shape_multi_hot`` of ``World.objects``); ``"presence"`` and ``"objects"`` are 32 px images of 1-3
    objects, ``"objects_shift"`` 64 px with clutter. Probes of the suite (``suite.PROBES``), not its tasks.
    ``ValueError`` naming the parameter for a bad name, split, n or scale."""
    if name not in MULTILABEL_TASKS:
        raise ValueError(f"name must be one of {list(MULTILABEL_TASKS)}, got {name!r}")
    n = _split_size(split, n, scale)
    spec = MULTILABEL_TASKS[name]
    w = world.generate(n, spec["seeds"][split], spec["image_size"], **spec["knobs"])
    return MultiLabelTask(
        name=name,
        split=split,
        images=w.images,
        targets=shape_multi_hot(w.objects, len(spec["classnames"])),
        classnames=list(spec["classnames"]),
        templates=list(spec["templates"]),
        stands_in_for=spec["stands_in_for"],
        description=spec["description"],
    )


# The relation task: two objects per image, label = relation of the primary object to the secondary one
# (``World.relations``, from box centres), its own seeds. A probe of what frozen features know of object layout
# (PyramidCLIP's cross-level relation terms, Table 7's detection stand-in); no zero-shot (captions name relations
# only sometimes).
RELATION_SEEDS = dict(train=TASK_SEED_BASE + 97_000, test=TASK_SEED_BASE + 97_001)
RELATION_KNOBS: dict[str, Any] = dict(min_objects=2, max_objects=2)


def load_relation_task(split: str, n: int | None = None, scale: str = "laptop") -> Task:
    """Split ``split`` of the relation task: 32 px images of two objects, labels indexing
    ``world.RELATION_NAMES`` (left, right, above, below). ``ValueError`` naming a bad split, n or scale."""
    n = _split_size(split, n, scale)
    w = world.generate(n, RELATION_SEEDS[split], 32, **RELATION_KNOBS)
    return Task(
        name="relation",
        split=split,
        images=w.images,
        labels=w.relations,
        classnames=list(world.RELATION_NAMES),
        templates=[],
        stands_in_for="object relations (no benchmark)",
        description="relation of the primary to the secondary object, two objects per image",
    )


def load_retrieval(
    n_images: int | None = None, captions_per_image: int = 5, scale: str = "laptop", name: str = "retrieval"
) -> RetrievalSet:
    """Retrieval set ``name`` (``RETRIEVAL_SETS``; default the MS-COCO stand-in): ``n_images`` (default
    ``retrieval_images`` of ``scale``) 32 px images with ``captions_per_image`` clean captions each, from distinct
    templates (different paraphrases of the true content: every object named, colour synonyms, sizes, positions
    and relations vary). ``ValueError`` naming ``name``, ``n_images``, ``captions_per_image`` or ``scale``."""
    if name not in RETRIEVAL_SETS:
        raise ValueError(f"name must be one of {list(RETRIEVAL_SETS)}, got {name!r}")
    defaults = scale_defaults(scale)
    n = check_positive_int("n_images", defaults["retrieval_images"] if n_images is None else n_images)
    k = check_positive_int("captions_per_image", captions_per_image)
    if k > len(vocab.CAPTION_TEMPLATES):
        raise ValueError(f"captions_per_image must be <= {len(vocab.CAPTION_TEMPLATES)}, got {k}")
    seed, knobs = RETRIEVAL_SETS[name]["seed"], RETRIEVAL_SETS[name]["knobs"]
    w = world.generate(n, seed, 32, **knobs)
    captions = [c for i in range(n) for c in world.paraphrases(seed, i, w.knobs, k)]
    return RetrievalSet(
        images=w.images,
        captions=captions,
        text_image_index=np.repeat(np.arange(n, dtype=np.int64), k),
        summaries=list(w.summaries),
        captions_per_image=k,
    )


def task_words() -> set[str]:
    """Every word of every task's class names and prompt templates (a test checks the tokenizer knows them)."""
    specs = list(TASKS.values()) + list(MULTILABEL_TASKS.values())
    texts = [c for spec in specs for c in spec["classnames"]]
    texts += [t.replace("{}", " ") for spec in specs for t in spec["templates"]]
    return {w for t in texts for w in vocab.words(t)}
