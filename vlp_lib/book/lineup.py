"""The line-up of the book's comparisons across papers: CLIP and each paper's idea as a variant on one image tower,
one batch, one schedule and one evaluation, on the generated world or on real pairs. The head to head (on the world)
and the real drawings chapter both run it, each at its own sizes (its ``CHAPTER_SCALES``); a chapter's folder never
imports another's, so what both use is here.

It defines no method: every run belongs to the paper that defines its method (its record carries that paper's code
fingerprint), and each variant's arguments are the plain ``method_kwargs`` its paper's ``Args`` reads (this module
imports no paper). Book-side code: it plans runs and computes no stored number.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlp_lib import experiment
from vlp_lib.book.report import paired_test, record_differences
from vlp_lib.config import as_list
from vlp_lib.data import folder_tasks, pair_sets, real
from vlp_lib.data.tokenizer import DEFAULT_CONTEXT_LENGTH
from vlp_lib.paths import resolve_data
from vlp_lib.run_config import RunConfig

# TP_Postag and ICMLM read the image tower as an image-only model (``models.ImageOnly``) whose last map rn-tiny gives
# 1x1 at 32 px: a single cell leaves ICMLM's attention over the map's cells (main Eq. 5-6) nothing to choose between.
# A chapter's sizes may name ``image_only_size`` (the ICMLM chapter's 64 px, a 2x2 map) for them; then they differ
# from the line-up in their pixels too, a difference the chapter's claims must declare. Without it (the head to head)
# every variant trains at the scale's image size: a comparison that differs only in the idea.
IMAGE_ONLY_SIZE = 64
CONTEXT_LENGTH = 32  # iCLIP's longest class text takes 25 tokens (its chapter uses 32): every text tower gets it
# the image-only variants have no text tower: their captions (tags, the world-LM's input) keep the default context,
# so their frozen world-LM is the ICMLM chapter's (built once, cached), not a second one
IMAGE_ONLY_CONTEXT = DEFAULT_CONTEXT_LENGTH
WARMUP_FRACTION = 0.1
CLASS_SEED = 2_001  # the class-only world of iCLIP / UniCL (the iCLIP chapter's)


@dataclass(frozen=True)
class Variant:
    """One method in one setting. ``method`` and ``kwargs`` (the arguments its paper's ``Args`` reads, as sorted
    pairs; scale-dependent ones are added by ``method_kwargs``); ``extra``: what it needs beyond image-text pairs;
    ``paper``: whose idea it is; ``text_tower``: whether the trained model has one (zero-shot, retrieval)."""

    name: str
    label: str
    method: str
    kwargs: tuple[tuple[str, Any], ...]
    extra: str
    paper: str
    text_tower: bool = True

    def method_kwargs(self, sizes: Mapping[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            k: (dict(v) if isinstance(v, tuple) and k == "weights" else v) for k, v in self.kwargs
        }
        if self.method == "protoclip":
            kwargs.update(head_hidden=sizes["head_hidden"], head_dim=sizes["head_dim"], warmup_episodes=1)
        elif self.method == "pyramidclip" and sizes["detector_images"] is not None and "rs" in kwargs["weights"]:
            kwargs["detector_images"] = sizes["detector_images"]
        elif self.method in ("iclip", "unicl"):
            kwargs["class_data"] = {"n": int(sizes["class_images"]), "seed": CLASS_SEED}
        elif self.method == "icmlm" and sizes["lm"]:
            kwargs["lm"] = dict(sizes["lm"])
        return kwargs


def _variant(
    name: str, label: str, method: str, kwargs: dict[str, Any], extra: str, paper: str, **more: Any
) -> Variant:
    frozen = tuple(sorted((k, tuple(sorted(v.items())) if isinstance(v, dict) else v) for k, v in kwargs.items()))
    return Variant(name, label, method, frozen, extra, paper, **more)


# Each in its paper's recommended setting as the book's chapters found it (ProtoCLIP's final recipe IV-E without its
# augmentation; PyramidCLIP's Eq. 6 with alpha = 0.2; iCLIP's 50:50 with definitions; TP_Postag NN+ADJ+VB K = 50;
# ICMLM_tfm (1 layer, 1 head) with lambda = 0.1 (Eq. 8, Supp B) from a TP_Postag start, Supp F.1)
_PROTO = {"images_per_prototype": 10, "target_temperature": 0.01, "use_pbt": True}
_POSTAG = {"label_set": "postag", "pos": ["NN", "ADJ", "VB"], "k": 50}
_PYRAMID_FULL = {"gs": 0.25, "lt": 0.25, "rs": 0.25, "rt": 0.25}
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        _variant("clip", "CLIP", "clip", {}, "none (pairs only)", "CLIP"),
        _variant(
            "protoclip",
            "ProtoCLIP",
            "protoclip",
            {**_PROTO, "external_teacher": "minilm"},
            "a pretrained text model (MiniLM for RoBERTa-large: the external teacher)",
            "ProtoCLIP",
        ),
        _variant(
            "protoclip_no_teacher",
            "ProtoCLIP w/o teacher",
            "protoclip",
            {**_PROTO, "external_teacher": "none"},
            "none",
            "ProtoCLIP",
        ),
        _variant(
            "pyramidclip",
            "PyramidCLIP",
            "pyramidclip",
            {"weights": _PYRAMID_FULL, "alpha": 0.2},
            "a detector trained with shape and colour labels (the ROI terms); a caption summariser (rule-based here, "
            "T5 in the paper)",
            "PyramidCLIP",
        ),
        _variant(
            "pyramidclip_no_roi",
            "PyramidCLIP w/o ROI terms",
            "pyramidclip",
            {"weights": {"gs": 0.5, "lt": 0.5}, "alpha": 0.2},
            "a caption summariser (rule-based here, T5 in the paper)",
            "PyramidCLIP",
        ),
        _variant(
            "iclip",
            "iCLIP (r = 0.5)",
            "iclip",
            {"ratio": 0.5, "definitions": True},
            "class-labelled images (half of every batch) and a dictionary definition per class",
            "iCLIP",
        ),
        _variant(
            "unicl",
            "UniCL (r = 0.5)",
            "unicl",
            {"ratio": 0.5},
            "class-labelled images (half of every batch)",
            "iCLIP",
        ),
        _variant(
            "tp_postag",
            "TP_Postag (K = 50)",
            "tp",
            _POSTAG,
            "a POS lexicon (the captions' nouns, adjectives and verbs)",
            "ICMLM",
            text_tower=False,
        ),
        _variant(
            "icmlm",
            "ICMLM_tfm (λ = 0.1)",
            "icmlm",
            {**_POSTAG, "head": "tfm", "layers": 1, "heads": 1, "lambda": 0.1},
            "a POS lexicon and a pretrained, frozen language model (the world-LM for BERT_base); half of its samples "
            "are the TP_Postag run it starts from",
            "ICMLM",
            text_tower=False,
        ),
    )
}
CLIP = "clip"
# DIME-FM is left out of every line-up (each page says why): distillation needs a teacher trained on the same pairs.
DIMEFM_LEFT_OUT = (
    "DIME-FM distils a frozen teacher into a student with unpaired images and texts: it is not pretraining "
    "from pairs. Trained on the same pairs, its teacher would be one of the rows above (CLIP at several times the "
    "student's samples, as the DIME-FM chapter's teacher), so its cost is the teacher's training (several T) plus "
    "the student's, and its gain is bounded by the teacher's: a comparison of teachers, not of ideas."
)


def check_names(parameter: str, value: Any, allowed: Sequence[str]) -> list[str]:
    """``value`` (a list of names, or one name) as a non-empty list of names from ``allowed``; ``ValueError`` naming
    ``parameter`` otherwise."""
    names = as_list(parameter, value)
    if not names or any(not isinstance(n, str) for n in names):
        raise ValueError(f"{parameter} must be a non-empty list of names from {list(allowed)}, got {value!r}")
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise ValueError(f"{parameter}: unknown {unknown}; known: {list(allowed)}")
    return names


@dataclass(frozen=True)
class Run:
    """One training run: ``variant`` for ``episodes`` episodes (for ICMLM: its own episodes, after ``init_episodes``
    of TP_Postag, whose run it starts from)."""

    variant: str
    episodes: int
    init_episodes: int = 0

    @property
    def label(self) -> str:
        return f"{VARIANTS[self.variant].label}, {self.episodes + self.init_episodes} episodes"


@dataclass(frozen=True)
class Data:
    """What every variant trains and is evaluated on (the notebook's ``train_data``, ``eval_tasks`` and
    ``class_data``): the generated world (``WORLD``, the chapter's own setting) or the reader's pairs, an OpenCLIP CSV
    or WebDataset shards (``data.real``), with image-folder tasks and, for iCLIP and UniCL, class-labelled images
    (``class_data="folder:PATH"``: ``PATH/<class>/*``)."""

    train_data: str = "world"
    eval_tasks: tuple[str, ...] | None = None
    class_data: str = "world"

    @property
    def is_world(self) -> bool:
        return real.is_world(self.train_data)


WORLD = Data()


def check_variants(variants: Any, default: Sequence[str]) -> list[str]:
    """A notebook's ``variants`` parameter: ``None`` = ``default``; else a non-empty list of names of ``VARIANTS``
    (or one name), none repeated; CLIP, the reference, is always added first. ``ValueError`` naming ``variants``
    before any compute."""
    if variants is None:
        return list(default)
    names = check_names("variants", variants, list(VARIANTS))
    if len(set(names)) != len(names):
        raise ValueError(f"variants must not repeat, got {variants!r}")
    return [n for n in VARIANTS if n == CLIP or n in names]


def paired_gain(records: Sequence[dict], reference: Sequence[dict], metric: str, unit: str = "") -> str:
    """``records``' per-seed difference from ``reference`` on ``metric`` (paired by seed) in points, with its 95% t
    interval: "+1.2{unit} [-0.3, +2.7]"; "(1 seed)" in place of the interval with one seed; "—" where the records
    lack ``metric`` (a model without a text tower has no zero-shot)."""
    if not records or metric not in records[0]["metrics"]:
        return "—"
    test = paired_test(record_differences(records, reference, metric))
    if test.n < 2 or not np.isfinite(test.low):
        return f"{100 * test.mean:+.1f}{unit} (1 seed)"
    return f"{100 * test.mean:+.1f}{unit} [{100 * test.low:+.1f}, {100 * test.high:+.1f}]"


def check_data(train_data: Any, eval_tasks: Any = None, class_data: Any = "world") -> Data:
    """The notebook's data parameters as a ``Data``; ``ValueError`` naming the parameter before any compute (a
    source that does not read, a folder task without both splits, class data that is not a folder of classes)."""
    if not isinstance(train_data, str) or not train_data:
        raise ValueError(f"train_data must be 'world' or a path, got {train_data!r}")
    if not real.is_world(train_data):
        real.check_source(train_data)
    tasks = None if eval_tasks is None else tuple(as_list("eval_tasks", eval_tasks))
    for name in tasks or ():
        if folder_tasks.is_folder_task(name):
            folder_tasks.check_folder_task(name)
        elif pair_sets.is_pair_set(name):
            pair_sets.check_pair_set(name)
    if not isinstance(class_data, str) or not (class_data == "world" or folder_tasks.is_folder_task(class_data)):
        raise ValueError(f"class_data must be 'world' or 'folder:PATH' (class-labelled images), got {class_data!r}")
    if class_data != "world":
        root = Path(resolve_data(class_data[len(folder_tasks.PREFIX) :])).expanduser()
        classes = [d for d in root.iterdir() if d.is_dir()] if root.is_dir() else []
        if len(classes) < 2:
            raise ValueError(
                f"class_data: {class_data!r} needs a folder of at least two class folders ({root}/<class>/*)"
            )
    train_data = train_data if real.is_world(train_data) else real.config_path(str(Path(train_data).expanduser()))
    return Data(train_data, tasks, class_data)


def has_summary_column(train_data: str) -> bool:
    """Whether ``train_data`` is a CSV with a ``summary`` column (PyramidCLIP's T_S, read by its paper's code: this
    folder imports no paper); shards have none."""
    path = Path(resolve_data(train_data))
    if path.suffix.lower() not in (".csv", ".tsv"):
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        header = f.readline().rstrip("\n")
    return "summary" in [h.strip() for h in header.split("\t" if "\t" in header else ",")]


def skipped(variants: Sequence[str], data: Data = WORLD) -> dict[str, str]:
    """``{variant: why it cannot run}`` for the ``variants`` whose extra input ``data`` lacks (nothing on the world):
    the ROI terms need the world's object boxes (the chapter takes no regions file), iCLIP and UniCL need class data
    beside real pairs."""
    if data.is_world:
        return {}
    out = {}
    for v in variants:
        variant = VARIANTS[v]
        kwargs = dict(variant.kwargs)
        if variant.method == "pyramidclip" and "rs" in dict(kwargs["weights"]):
            out[v] = "its ROI terms need each image's object boxes from a detector: real pairs have none here"
        elif variant.method in ("iclip", "unicl") and data.class_data == "world":
            out[v] = (
                "it needs class-labelled images beside the real pairs: pass class_data='folder:PATH', or name an "
                "image-folder task in eval_tasks (its train split is then the class data)"
            )
    return out


def sizes_on(chapter_sizes: Mapping[str, Any], data: Data = WORLD) -> dict[str, Any]:
    """A chapter's sizes at one scale (``chapter_sizes``: its ``CHAPTER_SCALES[scale]``) on ``data``: on real pairs
    the pairs' count (``data.real.count_pairs``), and an episode of the same share of them as on the world, in whole
    batches."""
    sizes = dict(chapter_sizes)
    if not data.is_world:
        count = _count_pairs(data.train_data, _stamp(data.train_data))
        batch = int(sizes["batch_size"])
        share = sizes["episode_size"] / sizes["train_size"]
        sizes["train_size"] = count
        sizes["episode_size"] = min(count - count % batch, max(batch, batch * round(share * count / batch)))
        if sizes["episode_size"] < batch:
            raise ValueError(f"train_data: {count} pairs are fewer than one batch ({batch})")
    return sizes


def unit_episodes(sizes: Mapping[str, Any]) -> int:
    """The equal-samples amount in episodes: ``unit_epochs`` of the pairs (``sizes``: ``sizes_on``'s)."""
    return max(1, int(round(sizes["unit_epochs"] * sizes["train_size"] / sizes["episode_size"])))


def split_icmlm(episodes: int) -> tuple[int, int]:
    """ICMLM's episodes as (TP_Postag start, ICMLM): half and half, the start taking the smaller half; at least one
    each."""
    episodes = max(2, episodes)
    return episodes // 2, episodes - episodes // 2


def run_of(variant: str, episodes: int) -> Run:
    """The run that trains ``variant`` for ``episodes`` episodes in all (ICMLM: its TP_Postag start included)."""
    if VARIANTS[variant].method == "icmlm":
        start, own = split_icmlm(episodes)
        return Run(variant, own, start)
    return Run(variant, max(1, episodes))


def _stamp(source: str | None) -> tuple[int, int] | None:
    """What says that a data source (a CSV, a shard, a folder) changed within a session: its modification time and
    size; ``None`` for the world or a path that is not there as written (a brace pattern of shards)."""
    if source is None or source == "world":
        return None
    path = resolve_data(source.removeprefix("folder:"))
    try:
        stat = Path(path).stat()
    except (OSError, ValueError):
        return None
    return stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=64)
def _count_pairs(source: str, stamp: tuple[int, int] | None) -> int:
    """``real.count_pairs`` once per source as it stands (``stamp``): it reads the whole CSV."""
    return real.count_pairs(source)


# the configs made in this process, by their arguments and their data's stamps: a page and the scorecard ask for
# the same configs again and again (each claim, each row, each seed), and checking a config on real pairs reads the
# whole CSV and looks up every image (about 0.3 s on the Open Clip Art drawings: 105 of the scorecard test's 140 s)
_CONFIGS: dict[tuple, RunConfig] = {}


def config(
    run: Run, scale: str, seed: int, data: Data, sizes: Mapping[str, Any], eval_tasks: Sequence[str]
) -> RunConfig:
    """The validated run config of ``run`` on ``data`` at a chapter's ``sizes`` (``sizes_on``'s) at ``scale``,
    evaluated on ``data.eval_tasks`` or else ``eval_tasks`` (``experiment.make_config``; ``ValueError`` before any
    compute). An ICMLM run's ``init`` is the config of TP_Postag trained ``init_episodes`` at the same sizes and
    seed. Made once per process for the same arguments while the data's files stand unchanged (``_stamp``)."""
    stamps = tuple(_stamp(source) for source in (data.train_data, data.class_data))
    key = (run, scale, seed, data, repr(sorted(sizes.items())), tuple(eval_tasks), stamps)
    if key not in _CONFIGS:
        _CONFIGS[key] = _make_config(run, scale, seed, data, sizes, eval_tasks)
    return _CONFIGS[key]


def _make_config(
    run: Run, scale: str, seed: int, data: Data, sizes: Mapping[str, Any], eval_tasks: Sequence[str]
) -> RunConfig:
    """``config`` made now."""
    variant = VARIANTS[run.variant]
    kwargs = variant.method_kwargs(sizes)
    if variant.method == "icmlm":
        kwargs["init"] = config(Run("tp_postag", run.init_episodes), scale, seed, data, sizes, eval_tasks)
    if variant.method in ("iclip", "unicl") and data.class_data != "world":
        kwargs["class_data"] = data.class_data
    if variant.method == "icmlm" and not data.is_world:  # its frozen LM is MiniLM on real captions: no world-LM sizes
        kwargs.pop("lm", None)
    if variant.method == "pyramidclip" and not data.is_world:  # T_S of real captions: the CSV's, else noun phrases
        kwargs["summary"] = "column" if has_summary_column(data.train_data) else "noun_phrases"
    episode, batch = sizes["episode_size"], sizes["batch_size"]
    steps = run.episodes * (episode // batch)
    on_data = {} if data.is_world else {"train_data": data.train_data}
    return experiment.make_config(
        scale,
        method=variant.method,
        seed=seed,
        model=sizes["model"],
        image_size=image_size(variant, sizes),
        train_size=sizes["train_size"],
        episode_size=episode,
        epochs=round(run.episodes * episode / sizes["train_size"], 2),
        batch_size=batch,
        lr=sizes["lr"],
        warmup_steps=max(1, int(WARMUP_FRACTION * steps)),
        augmentation="none",
        context_length=CONTEXT_LENGTH if variant.text_tower else IMAGE_ONLY_CONTEXT,
        task_train=sizes["task_train"],
        task_test=sizes["task_test"],
        retrieval_images=sizes["retrieval_images"],
        eval_tasks=list(data.eval_tasks) if data.eval_tasks is not None else list(eval_tasks),
        method_kwargs=kwargs,
        **on_data,
    )


def image_size(variant: Variant, sizes: Mapping[str, Any]) -> int:
    """The pixels ``variant`` trains at under a chapter's ``sizes``: the scale's ``image_size``, or for a model without
    a text tower the larger of it and the sizes' ``image_only_size`` where the chapter names one."""
    if variant.text_tower or not sizes.get("image_only_size"):
        return int(sizes["image_size"])
    return max(int(sizes["image_size"]), int(sizes["image_only_size"]))


def trained_samples(config: Mapping[str, Any]) -> int:
    """The samples a run of ``config`` (its record form) trains: whole episodes of whole batches (``train.train``)."""
    n = int(config["train_size"])
    episode = n if config.get("episode_size") is None else int(config["episode_size"])
    episodes = max(1, round(float(config["epochs"]) * n / episode))
    return episodes * (episode // int(config["batch_size"])) * int(config["batch_size"])


def run_seconds(record: Mapping[str, Any]) -> float:
    """A run's training seconds: the training loop plus the episodes' starts (ProtoCLIP's feature extraction,
    K-Means and PBT), as ``claims.relative_epochs`` counts them; one-time setup (a detector, a world-LM, a teacher's
    caption embeddings, the class images: built once and cached) and evaluation are not counted."""
    timings = record["timings"]
    return float(timings.get("training", 0.0)) + float(timings.get("episode_start", 0.0))


def variant_record(record: Mapping[str, Any], init: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The record a row shows for one seed: the run's own, with ``samples`` (trained) and ``seconds`` (training)
    added; for ICMLM, its TP_Postag start's samples and seconds included (half + half)."""
    out = dict(record)
    out["samples"] = trained_samples(record["config"]) + (trained_samples(init["config"]) if init else 0)
    out["seconds"] = run_seconds(record) + (run_seconds(init) if init else 0.0)
    return out


def records(configs: Sequence[RunConfig], compute: bool, progress: bool = True) -> list[dict] | None:
    """The variant records (``variant_record``) of the runs ``configs`` (one per seed): trained where missing when
    ``compute``, else ``None`` if any run (or an ICMLM run's TP_Postag start) is not stored."""
    if compute:
        found: list[dict | None] = [experiment.run(c, progress=progress) for c in configs]
    else:
        found = [experiment.stored(c) for c in configs]
    if any(r is None for r in found):
        return None
    out = []
    for c, record in zip(configs, found):
        assert record is not None
        init = c.method_args.init if hasattr(c.method_args, "init") else None
        init_record = None
        if init is not None:
            init_record = experiment.run(init, progress=progress) if compute else experiment.stored(init)
            if init_record is None:
                return None
        out.append(variant_record(record, init_record))
    return out
