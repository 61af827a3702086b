"""iCLIP (Wei et al., CVPR 2023) and its baseline UniCL (Yang et al., CVPR 2022): every batch holds class-only
labelled images (the ImageNet-21K stand-in, ``vlp_lib.papers.iclip.classes``) beside image-text pairs.

The iCLIP loss is a reconstruction: the main paper's equations were not available to us, only the iCAR preprint's
abstract (a cosine classifier whose weights are the shared text encoder's features of
dictionary-enhanced class names) and the supplement's ratio (Supp A, Tab. 1). The readings it leaves open are
arguments (``ICLIPArgs``): the classes in the softmax (``class_set``: all | the batch's), the temperature
(``temperature``: CLIP's shared one | its own), the batch's alt-texts as extra negatives of class images
(``text_negatives``), the class text (``definitions``, ``template``, ``text_format``) and the loss weights
(``weights``).

Batch (Supp A: "we sample 50% images from both datasets"): B = B_cls + B_it with B_cls = round(r B), drawn by a
``MixedSampler`` whose epoch counts the pairs' pool, so that ``epochs`` gives the same total samples at every r
(Supp Tab. 1: ratios "with the same number of samples"). r = 0 is plain CLIP: no class data is built, the default
sampler orders the pairs and the loss is CLIP's on the same batch (``local_clip_loss``: in one process the
operations of ``losses.clip.clip_loss``).

iCLIP, per step, with f the image tower and h the text tower (shared by both terms):

    v = f(images), t = h(alt-texts of the pair rows), c = h(class texts)   (class texts re-encoded every step)
    L = w_clip L_CLIP(v_it, t) + w_cls L_cls(v_cls, c, y)                  (papers.iclip.loss; 1 : 1)

with L_CLIP ProtoCLIP's Eq. 1 and L_cls the reconstructed cosine classifier (we could not read the main paper's
equation numbers).

UniCL: one batch of (image, text, label) triples: a class image's text is a random prompt of its class name
(``papers.iclip.classes.class_prompt``, no definition), each image-text pair has a label of its own, and
L = ``papers.iclip.loss.unicl_loss`` with targets 1[y_i = y_j].

Across processes (``vlp_lib.distributed``; ``torchrun ... -m vlp_lib.launch``) each rank holds a contiguous share of
the global batch, and since its class images come first the shares of the two sub-batches differ from rank to rank
(r = 0.5, two ranks: one holds every class image, the other every pair). iCLIP: the ranks exchange their counts
(``distributed.row_counts``); the pairs' image and text features are gathered with gradients from shares of any size
(``distributed.gather_uneven``) and each rank scores its own pairs against all of them in both directions; each rank
with class images encodes the same class texts (the global batch's classes with ``class_set="batch"``, gathered)
and scores its own class images, against every rank's alt-texts too with ``text_negatives``. Each term is the
rank's share of the global mean, its own rows' mean weighted by n W / N (``papers.iclip.loss``), so that DDP's
average of the ranks' gradients is the one-process gradient and the ranks' mean of a logged term its one-process
value. UniCL's rows are the batch itself, an equal share per rank: features and labels gathered
(``unicl_loss``). Measured (``tests/test_distributed_iclip.py``: 2 gloo processes against one, ``vit-tiny``, 8 steps
of B = 24): iCLIP r = 0.375 (class images 9 | 0, pairs 3 | 12) final loss 6.25791037 vs 6.25791046, largest
difference over the loss history 5e-7 (L_CLIP 4e-7, L_cls 2e-7, gradient norm 1e-7 relative); with
``class_set="batch"``, ``text_negatives`` and its own temperature at r = 0.625 (12 | 3 class images, 0 | 9 pairs)
3e-6 (L_CLIP 1e-6, L_cls 2e-6); UniCL 5e-7; the temperatures equal, accuracies and recalls equal, the modality gaps
within 2e-7. In one process the losses are bit for bit those computed before.

Real class data (``class_data={"folder": PATH}``, ``papers.iclip.classes``): the labels are the class folders'
indices, iCLIP's class texts carry WordNet glosses (``papers.iclip.wordnet``) and UniCL's prompts CLIP's ImageNet
templates; the run needs real text (``tokenizer="bpe"``), and ``context_length`` is checked against the texts as
that tokenizer counts them. On the world's class data every number is the one computed before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vlp_lib import distributed
from vlp_lib.config import check_bool
from vlp_lib.data import vocab
from vlp_lib.data.corpora import DEFAULT_TEMPLATE
from vlp_lib.data.paired import PairedData, concat, tokenize_all
from vlp_lib.data.sampler import MixedSampler, Sampler
from vlp_lib.methods.args import MethodArgs
from vlp_lib.methods.base import Batch, Method, MethodContext
from vlp_lib.models import clamp_logit_scale_
from vlp_lib.papers.iclip.classes import (
    CLASS_TEMPLATES,
    DEFAULT_TEXT_FORMAT,
    REAL_TEMPLATES,
    bpe_tokenizer,
    check_class_data,
    check_shapes,
    check_text_format,
    class_data,
    class_names,
    class_texts,
    context_needed,
    folder_class_texts,
    is_folder,
    parse_class_data,
)
from vlp_lib.papers.iclip.loss import class_text_contrast, local_clip_loss, unicl_loss

if TYPE_CHECKING:
    from vlp_lib.run_config import RunConfig

# The sources of a mixed batch (``Batch.source``): class-only images first, then image-text pairs.
CLASS_SOURCE, PAIR_SOURCE = "classes", "pairs"
NO_CLASS = -1  # ``class_label`` of an image-text pair
CLASS_SETS = ("all", "batch")  # L_cls's softmax: every class of the class data, or the classes in the batch
TEMPERATURES = ("shared", "separate")  # L_cls's scale: CLIP's learnable one, or a learnable one of its own
DEFAULT_WEIGHTS = {"clip": 1.0, "cls": 1.0}  # our reading: L = L_cls + L_CLIP, equal weights
INIT_LOGIT_SCALE = math.log(1 / 0.07)  # open_clip's initial temperature, for a separate L_cls scale


def check_ratio(ratio: Any) -> float:
    """``ValueError`` naming ``ratio`` unless it is a share in [0, 1] (r = B_cls / B)."""
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float, np.number)) or not 0.0 <= ratio <= 1.0:
        raise ValueError(f"ratio must be a share in [0, 1] (class rows per batch), got {ratio!r}")
    return float(ratio)


def check_weights(weights: Any) -> dict[str, float]:
    """The loss weights, ``DEFAULT_WEIGHTS`` completed by ``weights``: ``ValueError`` naming ``weights`` unless it
    maps ``"clip"`` / ``"cls"`` to numbers >= 0, not both 0."""
    if not isinstance(weights, dict):
        raise ValueError(f"weights must be a dict {{'clip': w, 'cls': w}}, got {weights!r}")
    unknown = set(weights) - set(DEFAULT_WEIGHTS)
    if unknown:
        raise ValueError(f"weights: unknown term(s) {sorted(unknown)}; known: {sorted(DEFAULT_WEIGHTS)}")
    if any(isinstance(w, bool) or not isinstance(w, (int, float)) or not w >= 0 for w in weights.values()):
        raise ValueError(f"weights must be numbers >= 0, got {weights!r}")
    out = {**DEFAULT_WEIGHTS, **{k: float(v) for k, v in weights.items()}}
    if not any(out.values()):
        raise ValueError(f"weights: at least one term needs a positive weight, got {out}")
    return out


def check_choices(class_set: Any, temperature: Any, text_negatives: Any) -> None:
    """``ValueError`` naming ``class_set``, ``temperature`` or ``text_negatives`` unless each is one of its choices."""
    if class_set not in CLASS_SETS:
        raise ValueError(f"class_set must be one of {CLASS_SETS}, got {class_set!r}")
    if temperature not in TEMPERATURES:
        raise ValueError(f"temperature must be one of {TEMPERATURES}, got {temperature!r}")
    check_bool("text_negatives", text_negatives)


@dataclass(frozen=True)
class ClassMixingArgs(MethodArgs):
    """UniCL's arguments (and what iCLIP shares): ``ratio`` r, the share of class rows per batch, and ``class_data``,
    the class-only data's spec ``{"n": images, "seed": int, "shapes": [...]}`` or, real class data,
    ``{"folder": PATH}`` (``classes.check_class_data``; required when r > 0, kept as given: it is part of the run's
    key; ``"folder:PATH"`` is stored as ``classes.parse_class_data`` reads it)."""

    method: ClassVar[str] = "unicl"

    ratio: float = 0.5
    class_data: Mapping[str, Any] | str | None = None

    def __post_init__(self) -> None:
        ratio = check_ratio(self.ratio)
        if isinstance(self.class_data, str):  # "folder:PATH": its record form, {"folder": the absolute class root}
            object.__setattr__(self, "class_data", parse_class_data(self.class_data))
        if self.class_data is not None:
            check_class_data(self.class_data)
        elif ratio > 0:
            raise ValueError(
                "class_data is required when ratio > 0: {'n': images, 'seed': int, 'shapes': [...]} "
                "(the class-only data, vlp_lib.papers.iclip.classes)"
            )

    def shapes(self) -> list[str] | None:
        """The class data's shapes (``None``: all of ``vocab.SHAPES``, also without class data or with a folder's)."""
        return None if self.class_data is None else check_class_data(self.class_data).get("shapes")

    def folder(self) -> bool:
        """Whether the class data is real (a folder of class-labelled images)."""
        return is_folder(self.class_data)


@dataclass(frozen=True)
class ICLIPArgs(ClassMixingArgs):
    """iCLIP's arguments: ``ratio`` and ``class_data`` as UniCL's; the class texts (``definitions``, ``template``,
    ``text_format``: ``classes.class_texts``); ``class_set`` ("all" | "batch"), ``temperature`` ("shared" |
    "separate"), ``text_negatives`` and the loss ``weights`` ``{"clip": w, "cls": w}`` (completed by
    ``DEFAULT_WEIGHTS``)."""

    method: ClassVar[str] = "iclip"

    definitions: bool = True
    template: str = DEFAULT_TEMPLATE
    text_format: str = DEFAULT_TEXT_FORMAT
    class_set: Literal["all", "batch"] = "all"
    temperature: Literal["shared", "separate"] = "shared"
    text_negatives: bool = False
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choices(self.class_set, self.temperature, self.text_negatives)
        object.__setattr__(
            self, "weights", check_weights(dict(self.weights) if isinstance(self.weights, Mapping) else self.weights)
        )
        check_text_format(self.text_format)
        self.texts()  # definitions, template

    def texts(self) -> list[str]:
        """The class texts (``classes.class_texts``) of the class data's shapes, or of a folder's classes with their
        WordNet glosses (``classes.folder_class_texts``), in label order."""
        if self.folder():
            return folder_class_texts(self.class_data, self.definitions, self.template, self.text_format)
        return class_texts(self.shapes(), self.definitions, self.template, self.text_format)


def split_rows(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """The batch positions of its class-only images and of its image-text pairs (``Batch.source``; a batch without
    sources holds pairs only)."""
    is_class = np.zeros(len(batch.indices), bool) if batch.source is None else batch.source == CLASS_SOURCE
    return np.flatnonzero(is_class), np.flatnonzero(~is_class)


class ClassMixing(Method):
    """What iCLIP and UniCL share: the ratio r, the class-only data (``papers.iclip.classes.class_data``, built by
    ``arguments`` from ``class_data`` = ``{"n", "seed", "shapes"}``) and the mixed sampler (``training_data``).
    A subclass names the texts it tokenises beside the captions (``texts``) so that ``check_config`` can refuse a
    ``context_length`` that would cut them."""

    name = "class-mixing"
    Args: ClassVar[type[MethodArgs]] = ClassMixingArgs

    def __init__(self, ratio: float = ClassMixingArgs.ratio, class_source: PairedData | None = None) -> None:
        super().__init__()
        self.ratio = check_ratio(ratio)
        if self.ratio > 0 and class_source is None:
            raise ValueError(
                "class_source: ratio > 0 needs the class-only data (vlp_lib.papers.iclip.classes.class_data)"
            )
        if class_source is not None:
            class_source.check_extra("class_label")
        self.class_source = class_source
        self.required_extras = ("class_label",) if self.ratio > 0 else ()
        # labels 0 .. n_labels - 1 (the world's shape ids, or a folder's classes)
        labels = class_source.extra["class_label"] if class_source is not None else np.zeros(0, np.int64)
        self.n_labels = int(np.max(labels)) + 1 if len(labels) else 0

    @classmethod
    def texts(cls, args: ClassMixingArgs) -> list[str]:
        """The texts this method tokenises besides the training captions (checked against ``context_length``)."""
        return []

    @classmethod
    def check_config(cls, config: RunConfig) -> None:
        """With class rows (r > 0): the class data's seed is not the training world's, r gives each batch at least
        one row of each source (all class rows at r = 1), and ``context_length`` holds the longest text."""
        args = cast(ClassMixingArgs, config.method_args)
        ratio = args.ratio
        if ratio == 0:
            return
        spec = check_class_data(args.class_data)
        tokenizer = None
        if is_folder(spec):
            if config.tokenizer != "bpe":
                raise ValueError(
                    "class_data: a folder's class names are real words, which the world's word tokenizer reads as "
                    "<unk>: real class data needs tokenizer='bpe' (the default for real train_data)"
                )
            tokenizer = bpe_tokenizer()  # make_tokenizer's, which counts the same tokens
        elif config.train_data == "world" and spec["seed"] == config.world_seed:
            raise ValueError(
                f"class_data seed ({spec['seed']}) must differ from world_seed: the class-only world "
                f"needs its own random draws"
            )
        batch, rows = config.train.batch_size, round(ratio * config.train.batch_size)
        if rows == 0 or (ratio < 1 and rows == batch):
            raise ValueError(
                f"ratio {ratio} gives {rows} class rows in a batch of {batch}: r > 0 needs at least one "
                f"class row, r < 1 at least one image-text pair"
            )
        needed = context_needed(cls.texts(args), tokenizer)
        if needed > config.context_length:
            raise ValueError(
                f"context_length ({config.context_length}) would truncate the {cls.name} class texts: "
                f"the longest takes {needed} tokens with <sot>/<eot> (the iCLIP chapter uses 32)"
            )

    @classmethod
    def arguments(cls, args: MethodArgs, context: MethodContext) -> dict[str, Any]:
        """The class-only data (``class_source``), rendered at the run's image size and tokenised with its
        tokenizer; none at r = 0."""
        kwargs = args.kwargs()
        spec = kwargs.pop("class_data", None)
        if cast(ClassMixingArgs, args).ratio > 0:
            kwargs["class_source"] = class_data(spec, context.config.image_size, context.tokenizer)
        return kwargs

    def training_data(self, data: PairedData) -> tuple[PairedData, Sampler | None]:
        """r = 0: the pairs in the default order (plain CLIP). Otherwise the class-only data joined to the pairs
        (``paired.concat``; the pairs get ``class_label`` = -1) and a ``MixedSampler`` giving each batch
        ``round(r * B)`` class rows first, its epoch counting the pairs' pool (equal total samples at every r)."""
        if self.ratio == 0:
            return data, None
        assert self.class_source is not None  # ratio > 0 needs it (__init__)
        pairs = replace(data, extra={**data.extra, "class_label": np.full(len(data), NO_CLASS, np.int64)})
        merged, pools = concat({CLASS_SOURCE: self.class_source, PAIR_SOURCE: pairs})
        return merged, MixedSampler(pools, self.ratio, epoch_source=PAIR_SOURCE)


class ICLIP(ClassMixing):
    """iCLIP: L = w_clip L_CLIP (pair rows) + w_cls L_cls (class rows against the class texts, ``papers.iclip.loss``).
    Across processes each rank holds any number of class rows and pairs; 2 gloo processes match one within 3e-6 on
    the loss and every logged term, with every option (the module docstring).

    Args:
        ratio: r, the share of class rows per batch (Supp Tab. 1 sweeps 0.1-0.9; 0.5 the default).
        class_source: the class-only data (``arguments`` builds it from ``class_data``).
        class_tokens: the class texts' token ids ``[C, context_length]``, one row per class of ``class_shapes``
            (``arguments`` builds them from ``definitions``, ``template`` and ``text_format``).
        class_shapes: the class names in the order of ``class_tokens`` (default: all of ``vocab.SHAPES``).
        label_names: the label space of ``class_label`` (default: ``vocab.SHAPES``; a folder's classes for real
            class data, every one with a class text).
        class_set: "all" (every class in the softmax; 24 texts cost nothing) or "batch" (the batch's classes).
        temperature: "shared" (CLIP's ``logit_scale``) or "separate" (a learnable scale of L_cls's own).
        text_negatives: the pair rows' alt-texts join the class texts as negatives of the class images.
        weights: ``{"clip": w, "cls": w}`` (default 1 : 1).
    """

    name = "iclip"
    # the ranks' counts of class rows and pairs, the pairs' features (shares of any size, with gradients: L_CLIP and
    # the text negatives) and, with class_set "batch", the batch's classes are gathered; class texts encoded per rank
    distributed = True
    # buffers registered in __init__
    class_position: torch.Tensor
    class_tokens: torch.Tensor
    Args: ClassVar[type[MethodArgs]] = ICLIPArgs

    def __init__(
        self,
        ratio: float = ICLIPArgs.ratio,
        class_source: PairedData | None = None,
        class_tokens: torch.Tensor | None = None,
        class_shapes: Sequence[str] | None = None,
        class_set: str = ICLIPArgs.class_set,
        temperature: str = ICLIPArgs.temperature,
        text_negatives: bool = ICLIPArgs.text_negatives,
        weights: Mapping[str, float] | None = None,
        label_names: Sequence[str] | None = None,
    ) -> None:
        super().__init__(ratio, class_source)
        check_choices(class_set, temperature, text_negatives)
        self.class_set, self.temperature, self.text_negatives = class_set, temperature, text_negatives
        self.weights = check_weights({} if weights is None else dict(weights))
        labels = list(vocab.SHAPES) if label_names is None else list(label_names)
        shapes = check_shapes(class_shapes) if label_names is None else labels
        if self.ratio > 0 and (class_tokens is None or len(class_tokens) != len(shapes)):
            raise ValueError(
                f"class_tokens: ratio > 0 needs the token ids of one class text per class "
                f"({len(shapes)}), got {None if class_tokens is None else tuple(class_tokens.shape)}"
            )
        position = torch.full((len(labels),), -1, dtype=torch.long)  # label (shape id) -> row of class_tokens
        label_of = {name: i for i, name in enumerate(labels)}
        position[[label_of[s] for s in shapes]] = torch.arange(len(shapes))
        self.register_buffer("class_position", position, persistent=False)
        tokens = torch.zeros(0, 1, dtype=torch.long) if class_tokens is None else class_tokens.long()
        self.register_buffer("class_tokens", tokens, persistent=False)
        self.cls_logit_scale = nn.Parameter(torch.tensor(INIT_LOGIT_SCALE)) if temperature == "separate" else None

    @classmethod
    def texts(cls, args: ClassMixingArgs) -> list[str]:
        """The class texts (``papers.iclip.classes.class_texts``) of the class data's shapes."""
        return cast(ICLIPArgs, args).texts()

    @classmethod
    def arguments(cls, args: MethodArgs, context: MethodContext) -> dict[str, Any]:
        """The class-only data and, with class rows, the class texts' token ids (``class_tokens``) and names."""
        iclip_args = cast(ICLIPArgs, args)
        kwargs = super().arguments(args, context)
        for key in ("definitions", "template", "text_format"):
            kwargs.pop(key, None)
        if kwargs.get("class_source") is not None:
            kwargs["class_tokens"] = tokenize_all(context.tokenizer, iclip_args.texts())
            if iclip_args.folder():
                kwargs["label_names"] = class_names(iclip_args.class_data)
            else:
                kwargs["class_shapes"] = check_shapes(iclip_args.shapes())
        return kwargs

    def loss(self, model: Any, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:  # open_clip CLIP (duck-typed)
        device = batch.images.device
        class_rows, pair_rows = (torch.as_tensor(r, device=device) for r in split_rows(batch))
        # across processes a rank's share of the batch holds any number of class rows and of pairs (class rows come
        # first): every rank learns every rank's two counts, and the global batch's decide which terms are computed
        # (every rank joins the same gathers and logs the same terms)
        counts = distributed.row_counts([len(class_rows), len(pair_rows)], device)
        class_counts, pair_counts = [c for c, _ in counts], [p for _, p in counts]
        images = F.normalize(model.encode_image(batch.images), dim=-1)
        tokens = [batch.texts[pair_rows]]
        positions = torch.zeros(0, dtype=torch.long, device=device)
        if len(class_rows):
            shape_ids = torch.as_tensor(batch.side("class_label")[class_rows.cpu().numpy()], device=device)
            positions = self.class_position[shape_ids]
        labels = positions
        if sum(class_counts):
            if self.class_set == "batch":  # only the global batch's classes (gathered), each text encoded once
                present = torch.unique(distributed.gather_uneven(positions, class_counts))
                labels = torch.searchsorted(present, positions)
                class_tokens = self.class_tokens[present]
            else:
                class_tokens = self.class_tokens
            if len(class_rows):  # every rank with class rows encodes the same class texts: the same features
                tokens.append(class_tokens)
        # one pass of the shared text tower over the alt-texts and the class texts (re-encoded every step)
        texts = F.normalize(model.encode_text(torch.cat(tokens)), dim=-1)
        pair_texts, label_texts = texts[: len(pair_rows)], texts[len(pair_rows) :]
        scale = model.logit_scale.exp()
        total = torch.zeros((), device=device)
        logs: dict[str, float] = {"logit_scale": float(scale.detach())}
        all_pair_texts = pair_texts
        if sum(pair_counts):
            # every rank's pairs, gathered with gradients (shares of any size); this rank's rows start at ``start``
            all_pair_images = distributed.gather_uneven(images[pair_rows], pair_counts)
            all_pair_texts = distributed.gather_uneven(pair_texts, pair_counts)
            start = sum(pair_counts[: distributed.world().rank])
            l_clip = local_clip_loss(images[pair_rows], pair_texts, all_pair_images, all_pair_texts, start, scale)
            total = total + self.weights["clip"] * l_clip
            logs["loss_clip"] = float(l_clip.detach())
        if sum(class_counts):
            cls_scale = scale if self.cls_logit_scale is None else self.cls_logit_scale.exp()
            l_cls = torch.zeros((), device=device)  # a rank without class rows holds none of L_cls
            if len(class_rows):
                candidates = torch.cat([label_texts, all_pair_texts]) if self.text_negatives else label_texts
                l_cls = class_text_contrast(images[class_rows], candidates, labels, cls_scale, sum(class_counts))
            total = total + self.weights["cls"] * l_cls
            logs["loss_cls"] = float(l_cls.detach())
            if self.cls_logit_scale is not None:
                logs["cls_logit_scale"] = float(cls_scale.detach())
        return total, logs

    def after_step(self, model: Any) -> None:  # model: open_clip CLIP (duck-typed)
        clamp_logit_scale_(model.logit_scale)
        if self.cls_logit_scale is not None:
            clamp_logit_scale_(self.cls_logit_scale)


class UniCL(ClassMixing):
    """UniCL: ``papers.iclip.loss.unicl_loss`` over the merged batch. A class row's text is its image's random prompt of
    the class name (``papers.iclip.classes.class_prompt``: a template drawn per image, no definition) and its label the
    shape id (a folder's class index for real class data); a pair's label is its own (``len(vocab.SHAPES)``, or the
    number of classes when larger, + its data index), so pairs have no other positive. Args: ``ratio`` and ``class_source`` as ``ClassMixing`` (a run config sets ``ClassMixingArgs``). Across
    processes: 2 gloo processes match one within 5e-7 on the loss history (the module docstring)."""

    name = "unicl"
    distributed = True  # the batch's features (with gradients) and labels are gathered (papers.iclip.loss.unicl_loss)
    Args: ClassVar[type[MethodArgs]] = ClassMixingArgs

    @classmethod
    def texts(cls, args: ClassMixingArgs) -> list[str]:
        """Every prompt a class image's caption can be."""
        if args.folder():
            return [t.format(s) for t in REAL_TEMPLATES for s in class_names(args.class_data)]
        return [t.format(s) for t in CLASS_TEMPLATES for s in check_shapes(args.shapes())]

    def labels(self, batch: Batch) -> torch.Tensor:
        """Each row's label: the shape id (class index) of a class image, ``len(vocab.SHAPES)`` (or the number of
        classes, when larger) + data index for a pair."""
        offset = max(len(vocab.SHAPES), self.n_labels)
        own = torch.as_tensor(offset + np.asarray(batch.indices, np.int64))
        class_rows, _ = split_rows(batch)
        if len(class_rows):
            label = torch.as_tensor(batch.side("class_label"))
            own = torch.where(label >= 0, label, own)
        return own.to(batch.images.device)

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        out = model(batch.images, batch.texts)
        loss = unicl_loss(out["image_features"], out["text_features"], self.labels(batch), out["logit_scale"])
        return loss, {"loss_unicl": float(loss.detach()), "logit_scale": float(out["logit_scale"].detach())}
