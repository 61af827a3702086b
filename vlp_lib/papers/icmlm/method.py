"""ICMLM (Sariyildiz, Perez, Larlus, ECCV 2020): visual representations learned from caption annotations.

Two families of image-only models (no aligned text tower: the trained model is ``models.ImageOnly``, evaluated by
the suite with probes only), on a backbone's spatial map X ∈ R^{H×W×C} (``ImageOnly.feature_map``; vit-tiny at
32 px gives 8×8×128):

- ``"tp"`` (main Sec. 3.1, Supp A): a linear classifier on GAP(X) predicts an image's tags with ℓ_tp
  (``papers.icmlm.loss.tp_loss``). The label set (``label_set``):
  ``"label"`` = the ground-truth shapes of every object of the image (TP_Label, COCO's 80 classes);
  ``"postag"`` = the ``k`` most frequent tags of the POS classes ``pos`` in the training captions (TP_Postag,
  ``papers.icmlm.lexicon``; Supp Tab. 1: NN / NN+ADJ / NN+ADJ+VB, 1K-10K tags);
  ``"cluster"`` = the image's caption's cluster among ``k`` K-Means clusters (``cluster.kmeans``) of MiniLM sentence
  embeddings of the captions (TP_Cluster, ``teachers.minilm_embeddings``; Supp Tab. 3: 1K / 10K clusters).
- ``"icmlm"`` (main Sec. 3.2, Supp B, E): one token of the caption that belongs to the label set is replaced by
  ``[MASK]``; the frozen world-LM (``world_lm``, BERT_base's stand-in) encodes the masked caption into W, X is
  projected by a 1×1 convolution into the LM's width (X̄), and a head predicts the hidden token from both:
  ``head="tfm"``: ``layers`` post-LN transformer layers over Z = [X̄; W] with ``heads`` attention heads (Supp E,
  Eq. 5-7), the output at the masked position; ``head="att-fc"``: ``heads`` attention heads pool X̄ with the
  masked token's state as the query ("att"), and an MLP of ``layers`` hidden layers ("fc") maps [pooled X̄ ; the
  token's state] to the prediction. ℓ = ℓ_mlm + λ ℓ_tp (main Eq. 8, ``papers.icmlm.loss``), λ = ``lambda``.

Reconstruction: the main paper (Sec. 3, Eq. 7-8) could not be read, so the heads follow the supplement's wording
and its alternative readings are options: the output layer (``output``: a new trained ``"linear"`` layer, or the
frozen world-LM's own MLM head ``"lm"``), the prediction vocabulary (``vocabulary``: the ``"full"`` word vocabulary
or the label set's ``"labels"``), the attention heads' width (``head_dim``: ``"full"`` = each head d_w wide as Supp
E's Eq. 5 writes it, or ``"split"`` = d_w / heads as in [17]), the triplets (``triplets``: ``"sample"`` = each
step draws one maskable token per image, so an epoch is a pass over the images, or ``"all"`` = the data is the set
of every (image, caption, masked token) triplet, Supp F.1) and ℓ_tp's form (``tp_loss``, ``tp_reduction``). Not
modelled: VGG16's RotNet stage and att-fc's 50K-iteration warm-up on a frozen backbone (Supp F.1); ResNet-50
ICMLM's initialisation from a TP_Postag checkpoint is ``init`` (a TP run's config).

On real image-text pairs (``train_data`` an OpenCLIP CSV or WebDataset shards) the captions are English, not the
world's closed vocabulary: TP_Postag's tags come from spaCy's ``en_core_web_sm`` 3.8.0 (``tagger``, pinned by the
SHA-256 of its weights) and ICMLM's frozen LM is the packaged all-MiniLM-L6-v2 over its own WordPiece tokens of the
captions (``language_model``, ``minilm_lm``), both chosen by default from ``train_data`` (``resolve_tagger``,
``resolve_language_model``); TP_Label needs the world's objects and the proxy task its held-out pairs. On the world
nothing changes: a run's config, its key and its numbers are those of the world-only code.

Across processes (``torchrun``, ``vlp_lib.distributed``; the paper trains ICMLM on 4 GPUs, Supp F.1) both families
train data-parallel. Every term is a per-image loss (no contrastive term over the batch: nothing to gather); what is
batch-global is the count a mean runs over, which differs from rank to rank: the captions holding a maskable token
for ℓ_mlm (main Eq. 7; ``triplets="sample"``), the tagged images for the softmax ℓ_tp (Sec. 3.1). It is reduced over
the ranks (``loss``'s ``global_batch``, ``distributed.share``): each rank's term is (its sum) / (the global count) ×
world size, so the mean over ranks, DDP's gradient average and each logged term, is the one-process value (the BCE
ℓ_tp averages over every row, as many on each rank). The masked positions are drawn for the global batch and cut to
each rank's rows; the frozen world-LM is the same on every rank (one cached copy, built once under a file lock:
``cache.frozen_arrays``); an ``init`` TP run is trained (data-parallel too) and stored before. Measured, 2 gloo
processes against one (``tests/test_distributed_icmlm.py``: ``vit-tiny`` at 32 px, smoke, 8 steps of global batch
32, the ranks' counts differing at every step): ICMLM_tfm (TP_Postag's 3 NN tags, softmax ℓ_tp, λ = 0.5, dropout 0)
final loss 5.6679494 vs 5.6679493, the loss history within 7e-7 (ℓ_mlm 5e-7, ℓ_tp 1e-7); TP_Postag (softmax ℓ_tp)
within 6e-8; ICMLM_att-fc (``triplets="all"``, TP_Label's set, dropout 0) within 5e-7, TP_Label (BCE) within
1.2e-7; the probes (linear, k-NN, ARI / AMI) equal. Not the one-process computation: the head's dropout (default
0.1: each rank draws its own masks; ICMLM_tfm's history then differed by up to 0.085) and, on CPUs, the ``rn-*``
towers' BatchNorm (the chapter's ``rn-tiny``), which normalises over each rank's share (``distributed.wrap``; on
GPUs it becomes ``SyncBatchNorm``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, cast

import numpy as np
import torch
from torch import nn

from vlp_lib import distributed
from vlp_lib.config import check_number
from vlp_lib.data import real
from vlp_lib.data.paired import PairedData, take
from vlp_lib.data.sampler import Sampler
from vlp_lib.data.tasks import shape_multi_hot
from vlp_lib.methods.args import MethodArgs
from vlp_lib.methods.base import Batch, Method, MethodContext, Trained
from vlp_lib.models import ImageOnly
from vlp_lib.papers.icmlm import lexicon
from vlp_lib.papers.icmlm import loss as objectives
from vlp_lib.run_config import RunConfig
from vlp_lib.runs import paper_of_module

if TYPE_CHECKING:
    from vlp_lib.papers.icmlm.minilm_lm import MiniLMLM
    from vlp_lib.papers.icmlm.world_lm import WorldLM

PAPER = paper_of_module(__name__)  # whose fingerprint keys what this module caches

LABEL_SETS = ("label", "postag", "cluster")
DEFAULT_K = {"postag": 50, "cluster": 24}  # our scaling: K 50 ↔ the paper's 5K tags, 24 / 240 ↔ 1K / 10K clusters
HEADS = ("tfm", "att-fc")
OUTPUTS = ("linear", "lm")
VOCABULARIES = ("full", "labels")
HEAD_DIMS = ("full", "split")
TRIPLETS = ("sample", "all")
_POSITION_STREAM = 0x1C31  # the random stream of the masked positions drawn per step (triplets "sample")


def _choice(name: str, value: Any, options: tuple[str, ...]) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def _int_at_least(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_label_set(
    label_set: Any, pos: Any = None, k: Any = None, allowed: tuple[str, ...] = LABEL_SETS
) -> tuple[str, tuple[str, ...], int]:
    """``(label_set, pos, k)`` with their defaults (``pos`` ``None``: every POS class; ``k`` ``None``:
    ``DEFAULT_K`` of the label set), or ``ValueError`` naming ``label_set`` (not one of ``allowed``), ``pos`` (unknown
    POS class; only with ``"postag"``) or ``k`` (< 1; not with ``"label"``)."""
    label_set = _choice("label_set", label_set, allowed)
    if pos is not None and label_set != "postag":
        raise ValueError(f"pos selects TP_Postag's POS classes: it needs label_set 'postag', got {label_set!r}")
    if k is not None and label_set == "label":
        raise ValueError("k: label_set 'label' has the world's 24 ground-truth shapes; k is for 'postag' / 'cluster'")
    classes = lexicon.check_pos(lexicon.POS_CLASSES if pos is None else pos) if label_set == "postag" else ()
    size = _int_at_least("k", DEFAULT_K.get(label_set, 1) if k is None else k, 1) if label_set != "label" else 24
    return label_set, classes, size


def resolve_tagger(tagger: str | None, train_data: str) -> str:
    """TP_Postag's tagger of a run: ``tagger``, or by ``train_data`` when ``None``: the world's lexicon on the
    generated world, spaCy's ``en_core_web_sm`` on real captions."""
    if tagger is not None:
        return tagger
    return "world" if real.is_world(train_data) else "spacy"


def resolve_language_model(language_model: str | None, train_data: str) -> str:
    """ICMLM's frozen LM of a run: ``language_model``, or by ``train_data`` when ``None``: the world-LM on the
    generated world, MiniLM on real captions."""
    if language_model is not None:
        return language_model
    return "world-lm" if real.is_world(train_data) else "minilm"


@dataclass(frozen=True)
class TPArgs(MethodArgs):
    """TP_*'s arguments (and what ICMLM shares): the label set ``label_set`` ("label" | "postag" | "cluster"), its
    POS classes ``pos`` (``"postag"`` only; ``None``: all of ``lexicon.POS_CLASSES``) and size ``k`` (not with
    ``"label"``; ``None``: ``DEFAULT_K`` of the label set), its POS tagger ``tagger`` (``"postag"`` only: "world" =
    the world's lexicon, ``lexicon``; "spacy" = spaCy's en_core_web_sm, ``tagger``; ``None``: by ``train_data``,
    ``resolve_tagger``), and ℓ_tp's form (``tp_loss``, ``tp_reduction``: ``loss.check_tp_options``)."""

    method: ClassVar[str] = "tp"
    label_sets: ClassVar[tuple[str, ...]] = LABEL_SETS  # the label sets the method can use

    label_set: Literal["label", "postag", "cluster"] = "postag"
    pos: tuple[str, ...] | None = None
    k: int | None = None
    tp_loss: Literal["bce", "softmax"] = "bce"
    tp_reduction: Literal["mean", "sum"] = "mean"
    tagger: Literal["world", "spacy"] | None = None

    def __post_init__(self) -> None:
        label_set = self.labels()[0]
        objectives.check_tp_options(self.tp_loss, self.tp_reduction)
        if self.tagger is not None and label_set != "postag":
            raise ValueError(f"tagger tags TP_Postag's captions: it needs label_set 'postag', got {label_set!r}")

    def labels(self) -> tuple[str, tuple[str, ...], int]:
        """``(label_set, pos, k)`` with their defaults (``check_label_set``)."""
        return check_label_set(self.label_set, self.pos, self.k, self.label_sets)


def _text_key(texts: list[str]) -> str:
    return hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:20]


def caption_clusters(captions: list[str], k: int, seed: int = 0) -> np.ndarray:
    """TP_Cluster's labels: the K-Means cluster (``cluster.kmeans``, k-means++ seeding) of each caption's MiniLM
    sentence embedding (``teachers.minilm_embeddings``, L2-normalised), cached by the captions, ``k`` and ``seed``
    (``teachers.frozen_arrays``). int64 ``[N]``."""
    from vlp_lib.cache import frozen_arrays
    from vlp_lib.cluster import kmeans
    from vlp_lib.sentence_encoder import minilm_embeddings

    def build() -> dict[str, Any]:
        _, labels = kmeans(minilm_embeddings(captions, progress=False), k, seed=seed)
        return {"labels": labels.astype(np.int64)}

    key = {"captions": _text_key(list(captions)), "n": len(captions), "k": k, "seed": seed}
    return np.asarray(frozen_arrays("icmlm-clusters", key, build, verbose=False, paper=PAPER)["labels"])


def label_targets(
    label_set: str, data: PairedData, pos: tuple[str, ...], k: int, seed: int = 0, tagger: str = "world"
) -> tuple[np.ndarray, list[str] | None]:
    """The multi-hot targets ``[N, K]`` (float32) of ℓ_tp for each training pair, and the tags (words) of
    ``"postag"`` (``None`` for the other sets). ``"label"`` reads ``data.extra["objects"]`` (the generated world);
    ``"postag"`` tags the captions with ``tagger`` ("world": ``lexicon``; "spacy": ``papers.icmlm.tagger``)."""
    if label_set == "label":
        if "objects" not in data.extra:
            raise ValueError(
                "label_set 'label' needs each image's ground-truth objects (data.extra['objects']): "
                "train on the generated world"
            )
        return shape_multi_hot(data.extra["objects"]).astype(np.float32), None
    if label_set == "postag" and tagger == "spacy":
        from vlp_lib.papers.icmlm import tagger as spacy_tagger

        words = spacy_tagger.tagged(data.captions)
        tags = spacy_tagger.tag_vocabulary(words, pos, k)
        if not tags:
            raise ValueError(f"pos: {spacy_tagger.NAME} finds no word of the classes {pos} in the training captions")
        return spacy_tagger.tag_targets(words, tags), tags
    if label_set == "postag":
        tags = lexicon.tag_vocabulary(data.captions, pos, k)
        if not tags:
            raise ValueError(f"pos: the training captions hold no word of the classes {pos}")
        return lexicon.tag_targets(data.captions, tags), tags
    if k > len(data):
        raise ValueError(f"k ({k}) must be <= the number of training captions ({len(data)}) for label_set 'cluster'")
    clusters = caption_clusters(data.captions, k, seed)
    return np.eye(k, dtype=np.float32)[clusters], None


class _ImageOnlyMethod(Method):
    """What TP_* and ICMLM share: the image-only model (``models.ImageOnly``), the label set and ℓ_tp's head."""

    required_extras: tuple[str, ...] = ("tp_targets",)
    Args: ClassVar[type[MethodArgs]] = TPArgs

    @classmethod
    def check_config(cls, config: RunConfig) -> None:
        """TP_Label needs the world's objects, TP_Cluster at most one cluster per caption; TP_Postag's tagger must
        read the run's captions (the world's lexicon reads only the world's) and be installed (spaCy's model: its
        ``pip install`` command in the error)."""
        args = cast(TPArgs, config.method_args)
        label_set, _, k = args.labels()
        if label_set == "label" and config.train_data != "world":
            raise ValueError("label_set 'label' needs ground-truth objects: train_data must be 'world'")
        if label_set == "cluster" and k > config.train_size:
            raise ValueError(f"k ({k}) must be <= train_size ({config.train_size}) for label_set 'cluster'")
        if label_set == "postag":
            tagger = resolve_tagger(args.tagger, config.train_data)
            if tagger == "world" and not real.is_world(config.train_data):
                raise ValueError(
                    "tagger: 'world' is the world's lexicon of its closed vocabulary and tags no real caption: use "
                    "tagger='spacy' (or None) with real train_data"
                )
            if tagger == "spacy":
                from vlp_lib.papers.icmlm.tagger import model_dir

                model_dir()

    @classmethod
    def wrap_model(cls, model: nn.Module, args: MethodArgs, trained: Trained) -> nn.Module:
        """The image tower alone (``models.ImageOnly``): the run trains, evaluates and stores an image-only model."""
        return ImageOnly(model)

    @classmethod
    def arguments(cls, args: MethodArgs, context: MethodContext) -> dict[str, Any]:
        """ℓ_tp's targets as side data (``data.extra["tp_targets"]``, ``label_targets``) and the classifier's sizes."""
        kwargs = args.kwargs()
        label_set, pos, k = cast(TPArgs, args).labels()
        tagger = resolve_tagger(cast(TPArgs, args).tagger, context.config.train_data)
        for name in ("label_set", "pos", "k", "tagger"):
            kwargs.pop(name, None)
        targets, tags = label_targets(label_set, context.data, pos, k, seed=context.config.seed, tagger=tagger)
        context.data.extra["tp_targets"] = torch.from_numpy(targets)
        # the context's model is already wrap_model-ed: an ImageOnly
        kwargs.update(width=cast(ImageOnly, context.model).map_shape()[0], n_tags=targets.shape[1], tags=tags)
        return kwargs

    def __init__(
        self,
        width: int,
        n_tags: int,
        tp_loss: str = TPArgs.tp_loss,
        tp_reduction: str = TPArgs.tp_reduction,
        tags: list[str] | None = None,
    ):
        super().__init__()
        objectives.check_tp_options(tp_loss, tp_reduction)
        self.tp_kind, self.tp_reduction = tp_loss, tp_reduction
        self.tags = tags  # TP_Postag's label set, most frequent first (None for the other sets)
        self.classifier = nn.Linear(width, n_tags)

    def tp_term(self, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        """ℓ_tp of the pooled features GAP(X) ``[B, C]`` against the batch's multi-hot targets; across processes
        this rank's share of the global batch's ℓ_tp (``loss.tp_loss``'s ``global_batch``)."""
        logits = self.classifier(features)
        targets = batch.side("tp_targets")
        return objectives.tp_loss(logits, targets, self.tp_kind, self.tp_reduction, global_batch=True)

    def after_step(self, model: nn.Module) -> None:
        """Nothing: an image-only model has no temperature to clamp."""


class TagPrediction(_ImageOnlyMethod):
    """TP_Label / TP_Postag / TP_Cluster (main Sec. 3.1): ℓ_tp of a linear classifier on GAP(X). Data-parallel
    (module docstring): 2 processes match one to 6e-8 (TP_Postag, softmax ℓ_tp) and 1.2e-7 (TP_Label, BCE)."""

    name = "tp"
    # ℓ_tp across processes: BCE is a mean over every row (equal shares), the softmax form a mean over the tagged
    # images, whose count is reduced over ranks (loss.tp_loss, distributed.share)
    distributed = True

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        loss = self.tp_term(cast(ImageOnly, model).encode_image(batch.images), batch)  # wrap_model: an ImageOnly
        return loss, {"loss_tp": float(loss.detach())}


# --- ICMLM's heads ---------------------------------------------------------------------------------------------


class Attention(nn.Module):
    """Multi-head scaled dot-product attention of Supp E, Eq. 5-7: per head h, K = ZΣ_K + b_K, Q = ZΣ_Q + b_Q,
    V = ZΣ_V + b_V, O^h = softmax(Q Kᵀ / √D) V (the supplement writes K Qᵀ, read as the usual Q Kᵀ; D = the head
    width), then O = [O^1 | ... | O^H] Σ_O + b_O. ``head_dim`` is each head's width: d_w in Supp E (Σ_O ∈ R^{H·d_w ×
    d_w}), d_w / H in [17]. The weights are computed explicitly so that attention maps (Supp D) can be read."""

    def __init__(self, width: int, heads: int, head_dim: int):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.q = nn.Linear(width, heads * head_dim)
        self.k = nn.Linear(width, heads * head_dim)
        self.v = nn.Linear(width, heads * head_dim)
        self.out = nn.Linear(heads * head_dim, width)

    def forward(
        self, query: torch.Tensor, keys: torch.Tensor, key_padding: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``query`` ``[B, Q, d]``, ``keys`` ``[B, S, d]``, ``key_padding`` ``[B, S]`` True where a key is absent.
        Returns the output ``[B, Q, d]`` and the weights ``[B, H, Q, S]``."""
        b, n_q, n_k = query.shape[0], query.shape[1], keys.shape[1]
        q = self.q(query).view(b, n_q, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(keys).view(b, n_k, self.heads, self.head_dim).transpose(1, 2)
        v = self.v(keys).view(b, n_k, self.heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / self.head_dim**0.5
        if key_padding is not None:
            scores = scores.masked_fill(key_padding[:, None, None, :], float("-inf"))
        weights = scores.softmax(-1)
        out = (weights @ v).transpose(1, 2).reshape(b, n_q, self.heads * self.head_dim)
        return self.out(out), weights


class TfmLayer(nn.Module):
    """One transformer encoder layer of ICMLM_tfm (Supp E): multi-head attention (Eq. 5-7), then residual, dropout
    and LayerNorm, and the ReLU feed-forward with its own residual and LayerNorm (the post-LN layer of [17])."""

    def __init__(self, width: int, heads: int, head_dim: int, dropout: float):
        super().__init__()
        self.attention = Attention(width, heads, head_dim)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.feed_forward = nn.Sequential(
            nn.Linear(width, 4 * width), nn.ReLU(), nn.Dropout(dropout), nn.Linear(4 * width, width)
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, z: torch.Tensor, padding: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        attended, weights = self.attention(z, z, padding)
        z = self.norm1(z + self.dropout(attended))
        return self.norm2(z + self.dropout(self.feed_forward(z))), weights


class TfmHead(nn.Module):
    """ICMLM_tfm: ``layers`` ``TfmLayer``s over Z = [X̄; W] (S = H·W + T tokens); the state of the masked
    position is the prediction's input. ``forward`` returns it ``[B, d]`` and the last layer's attention of the
    masked token over the H·W visual tokens ``[B, heads, H·W]``."""

    def __init__(self, width: int, layers: int, heads: int, head_dim: int, dropout: float):
        super().__init__()
        self.layers = nn.ModuleList([TfmLayer(width, heads, head_dim, dropout) for _ in range(layers)])

    def forward(
        self, visual: torch.Tensor, text: torch.Tensor, padding: torch.Tensor, position: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        cells = visual.shape[1]
        z = torch.cat([visual, text], dim=1)
        pad = torch.cat([torch.zeros_like(padding[:, :1]).expand(-1, cells), padding], dim=1)
        for layer in self.layers:
            z, weights = layer(z, pad)
        rows = torch.arange(len(z), device=z.device)
        return z[rows, cells + position], weights[rows, :, cells + position, :cells]


class AttFcHead(nn.Module):
    """ICMLM_att-fc: "att" = ``heads`` attention heads with the masked token's LM state as the query over the H·W
    cells of X̄; "fc" = ``layers`` hidden layers (Linear, ReLU, dropout; width d) on [attended X̄ ; the token's
    state]. ``forward`` returns the last hidden layer ``[B, d]`` and the attention ``[B, heads, H·W]``."""

    def __init__(self, width: int, layers: int, heads: int, head_dim: int, dropout: float):
        super().__init__()
        self.attention = Attention(width, heads, head_dim)
        sizes = [2 * width] + [width] * layers
        self.fc = nn.Sequential(
            *[module for a, b in zip(sizes, sizes[1:]) for module in (nn.Linear(a, b), nn.ReLU(), nn.Dropout(dropout))]
        )

    def forward(
        self, visual: torch.Tensor, text: torch.Tensor, padding: torch.Tensor, position: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        token = text[torch.arange(len(text), device=text.device), position][:, None]  # [B, 1, d]
        attended, weights = self.attention(token, visual)
        return self.fc(torch.cat([attended[:, 0], token[:, 0]], dim=1)), weights[:, :, 0]


HEAD_CLASSES: dict[str, type[TfmHead] | type[AttFcHead]] = {"tfm": TfmHead, "att-fc": AttFcHead}


def check_head_options(
    width: int,
    head: Any,
    layers: Any,
    heads: Any,
    head_dim: Any,
    output: Any,
    vocabulary: Any,
    triplets: Any,
    dropout: Any,
    lam: Any,
) -> None:
    """``ValueError`` naming the option for an ICMLM head that cannot be built on a world-LM of ``width``: an
    unknown ``head`` / ``head_dim`` / ``output`` / ``vocabulary`` / ``triplets``, ``layers`` or ``heads`` < 1,
    ``heads`` not dividing ``width`` with ``head_dim="split"``, ``dropout`` outside [0, 1) or ``lambda`` (``lam``)
    < 0."""
    _choice("head", head, HEADS)
    _int_at_least("layers", layers, 1)
    heads = _int_at_least("heads", heads, 1)
    if _choice("head_dim", head_dim, HEAD_DIMS) == "split" and width % heads:
        raise ValueError(f"heads ({heads}) must divide the world-LM width ({width}) with head_dim 'split'")
    _choice("output", output, OUTPUTS)
    _choice("vocabulary", vocabulary, VOCABULARIES)
    _choice("triplets", triplets, TRIPLETS)
    if not 0 <= check_number("dropout", dropout) < 1:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    if check_number("lambda", lam) < 0:
        raise ValueError(f"lambda must be >= 0, got {lam!r}")


IA = TypeVar("IA", bound="ICMLMArgs")


@dataclass(frozen=True)
class ICMLMArgs(TPArgs):
    """ICMLM's arguments: the label set as TP_*'s (``"label"`` or ``"postag"``: the masked token is a word of it,
    clusters are not words), the head (``head``, ``layers``, ``heads``, ``head_dim``, ``output``, ``vocabulary``,
    ``triplets``, ``dropout``: ``check_head_options``), λ of Eq. 8 (``lam``; the record key is ``lambda``, a Python
    keyword), the frozen LM ``language_model`` ("world-lm": ``world_lm``; "minilm": MiniLM, ``minilm_lm``, for real
    captions; ``None``: by ``train_data``, ``resolve_language_model``), the world-LM's settings ``lm``
    (``world_lm.check_config``; its ``context_length`` is the run's; none with MiniLM) and ``init``, the config of the
    TP run whose image tower ICMLM starts from (``None``: a fresh one)."""

    method: ClassVar[str] = "icmlm"
    label_sets: ClassVar[tuple[str, ...]] = ("label", "postag")
    record_names: ClassVar[dict[str, str]] = {"lam": "lambda"}  # field -> method_kwargs key

    head: Literal["tfm", "att-fc"] = "tfm"
    layers: int = 1
    heads: int = 1
    head_dim: Literal["full", "split"] = "full"
    lam: float = 0.1
    output: Literal["linear", "lm"] = "linear"
    vocabulary: Literal["full", "labels"] = "full"
    triplets: Literal["sample", "all"] = "sample"
    dropout: float = 0.1
    lm: Mapping[str, Any] = field(default_factory=dict)
    init: RunConfig | None = None
    language_model: Literal["world-lm", "minilm"] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.lm, Mapping):
            raise ValueError(f"lm must be a dict of world-LM settings (world_lm.DEFAULTS), got {self.lm!r}")
        if self.language_model == "minilm" and self.lm:
            raise ValueError(f"lm holds world-LM settings; language_model 'minilm' takes none, got {dict(self.lm)!r}")
        self.check_head(self.language_model or "world-lm")
        if self.init is not None and (not isinstance(self.init, RunConfig) or self.init.method != "tp"):
            raise ValueError(
                f"init must be the config of a 'tp' run (experiment.make_config(..., method='tp')), got {self.init!r}"
            )

    def check_head(self, language_model: str) -> None:
        """``check_head_options`` on the width of ``language_model``; MiniLM has no MLM head for ``output="lm"``."""
        from vlp_lib.papers.icmlm.minilm_lm import NAME, WIDTH
        from vlp_lib.papers.icmlm.world_lm import check_config as check_lm

        if language_model == "minilm" and self.output == "lm":
            raise ValueError(
                f"output 'lm' predicts with the frozen LM's MLM head; {NAME} ships without one: use output='linear'"
            )
        check_head_options(
            WIDTH if language_model == "minilm" else check_lm(self.lm)["width"],
            self.head,
            self.layers,
            self.heads,
            self.head_dim,
            self.output,
            self.vocabulary,
            self.triplets,
            self.dropout,
            self.lam,
        )

    @classmethod
    def from_dict(cls: type[IA], kwargs: Mapping[str, Any] | None) -> IA:
        """As ``MethodArgs.from_dict``, ``lambda`` read into the field ``lam``."""
        if isinstance(kwargs, cls) or not isinstance(kwargs, Mapping):
            return super().from_dict(kwargs)
        known = [cls.record_names.get(f.name, f.name) for f in dataclasses.fields(cls)]
        unknown = sorted(set(kwargs) - set(known))
        if unknown:
            raise ValueError(f"method_kwargs: unknown {cls.method} argument(s) {unknown}; known: {known}")
        fields = {name: key for key, name in cls.record_names.items()}
        values: dict[str, Any] = {
            fields.get(key, key): check_number(key, v) if key == "lambda" else v for key, v in kwargs.items()
        }
        if values.get("init") is not None:
            try:
                values["init"] = RunConfig.from_dict(values["init"])
            except ValueError as err:
                raise ValueError(
                    f"init must be the config of a 'tp' run (experiment.make_config(..., method='tp')): {err}"
                ) from None
        return super().from_dict(values)

    def to_dict(self) -> dict[str, Any]:
        return {self.record_names.get(key, key): value for key, value in super().to_dict().items()}

    def replace(self: IA, **changes: Any) -> IA:
        """A copy with ``changes`` by their ``method_kwargs`` keys (``lambda``), checked like ``from_dict``."""
        current = {self.record_names.get(key, key): value for key, value in self.kwargs().items()}
        return type(self).from_dict({**current, **changes})


class ICMLM(_ImageOnlyMethod):
    """ICMLM_tfm / ICMLM_att-fc (main Sec. 3.2, Supp B and E) with ℓ = ℓ_mlm + λ ℓ_tp (main Eq. 8).

    Side data: ``tp_targets`` (ℓ_tp's multi-hot targets) and ``maskable`` (bool ``[N, T]``: the caption positions
    holding a label-set token); with ``triplets="all"``, ``mask_position`` per triplet row. Data-parallel (module
    docstring): 2 processes match one to 7e-7 on the loss history with ``dropout=0``."""

    name = "icmlm"
    # ℓ_mlm's count of masked tokens (and the softmax ℓ_tp's of tagged images) reduced over ranks (loss.mlm_loss,
    # distributed.share); the masked positions drawn for the global batch; the frozen world-LM loaded from one cache
    distributed = True
    required_extras = ("tp_targets", "maskable")
    Args: ClassVar[type[MethodArgs]] = ICMLMArgs
    # buffers registered in __init__
    mask_ids: torch.Tensor
    candidates: torch.Tensor
    target_index: torch.Tensor

    @classmethod
    def check_config(cls, config: RunConfig) -> None:
        """The world-LM reads the run's captions: its ``context_length`` must be the run's (it is by default); an
        ``init`` TP run must have the run's backbone and image size."""
        super().check_config(config)
        args = cast(ICMLMArgs, config.method_args)
        language_model = resolve_language_model(args.language_model, config.train_data)
        if language_model == "world-lm" and not real.is_world(config.train_data):
            raise ValueError(
                "language_model: the world-LM knows only the world's words and reads no real caption: use "
                "language_model='minilm' (or None) with real train_data"
            )
        if language_model == "minilm":
            from vlp_lib.papers.icmlm.minilm_lm import MAX_POSITIONS

            if args.lm:
                raise ValueError(
                    f"lm holds world-LM settings; the frozen LM of this run is MiniLM, got {dict(args.lm)}"
                )
            if not 3 <= config.context_length <= MAX_POSITIONS:
                raise ValueError(
                    f"context_length must be in [3, {MAX_POSITIONS}] for MiniLM, got {config.context_length}"
                )
            args.check_head(language_model)
        lm_context = args.lm.get("context_length", config.context_length)
        if lm_context != config.context_length:
            raise ValueError(
                f"lm: context_length ({lm_context}) must be the run's context_length ({config.context_length})"
            )
        if args.init is not None:
            for key in ("model", "image_size"):
                theirs, ours = getattr(args.init, key), getattr(config, key)
                if theirs != ours:
                    raise ValueError(f"init: the TP run's {key} ({theirs!r}) must be this run's ({ours!r})")

    @classmethod
    def wrap_model(cls, model: nn.Module, args: MethodArgs, trained: Trained) -> nn.Module:
        """The image-only model, its tower initialised from the TP run ``init`` when given (ResNet-50 ICMLM starts
        from a TP_Postag checkpoint, Supp F.1)."""
        wrapped = ImageOnly(model)
        init = cast(ICMLMArgs, args).init
        if init is not None:
            start, _ = trained(init)
            wrapped.visual.load_state_dict(cast(nn.Module, start.visual).state_dict())
        return wrapped

    @classmethod
    def arguments(cls, args: MethodArgs, context: MethodContext) -> dict[str, Any]:
        """ℓ_tp's targets (``_ImageOnlyMethod.arguments``), the frozen LM and the maskable positions of every caption
        (``data.extra["maskable"]``): the world-LM (``world_lm.world_lm``, its ``context_length`` the run's) over the
        run's tokens, or MiniLM (``minilm_lm``) over its own WordPiece tokens of the captions
        (``data.extra["lm_tokens"]``; a label-set word of several pieces is not maskable)."""
        from vlp_lib.papers.icmlm.world_lm import world_lm

        label_set = cast(ICMLMArgs, args).labels()[0]
        language_model = resolve_language_model(cast(ICMLMArgs, args).language_model, context.config.train_data)
        out = super().arguments(args, context)
        out.pop("init", None)
        out.pop("language_model", None)
        settings = out.pop("lm")
        words = out["tags"] if label_set == "postag" else list(lexicon.SHAPE_HEADS)
        lm: WorldLM | MiniLMLM
        if language_model == "minilm":
            from vlp_lib.papers.icmlm.minilm_lm import minilm_lm

            lm = minilm_lm(context.config.context_length)
            tokens = lm.tokenize(context.data.captions)
            ids, _ = lm.word_ids(words)
            context.data.extra["lm_tokens"] = tokens
        else:
            lm, _ = world_lm({"context_length": context.config.context_length, **settings})
            ids = lexicon.tag_ids(context.tokenizer, words)
            tokens = context.data.tokens
        context.data.extra["maskable"] = lexicon.maskable(tokens, ids)
        out.update(lm=lm, mask_ids=ids, seed=context.config.seed)
        return out

    def __init__(
        self,
        width: int,
        n_tags: int,
        lm: WorldLM | MiniLMLM,
        mask_ids: torch.Tensor,
        head: str = ICMLMArgs.head,
        layers: int = ICMLMArgs.layers,
        heads: int = ICMLMArgs.heads,
        head_dim: str = ICMLMArgs.head_dim,
        lam: float = ICMLMArgs.lam,
        output: str = ICMLMArgs.output,
        vocabulary: str = ICMLMArgs.vocabulary,
        triplets: str = ICMLMArgs.triplets,
        dropout: float = ICMLMArgs.dropout,
        tp_loss: str = ICMLMArgs.tp_loss,
        tp_reduction: str = ICMLMArgs.tp_reduction,
        tags: list[str] | None = None,
        seed: int = 0,
    ):
        super().__init__(width, n_tags, tp_loss, tp_reduction, tags)
        check_head_options(lm.width, head, layers, heads, head_dim, output, vocabulary, triplets, dropout, lam)
        self.lam, self.output, self.triplets, self.seed = float(lam), output, triplets, int(seed)
        self.lm = lm.eval().requires_grad_(False)
        # MiniLM reads its own WordPiece tokens of the captions (data.extra["lm_tokens"]), the world-LM the run's
        self.own_tokens = bool(getattr(lm, "own_tokenizer", False))
        d = lm.width
        self.project = nn.Linear(width, d)  # X -> X̄: a 1×1 convolution into the LM's token space
        self.head = HEAD_CLASSES[head](d, layers, heads, d if head_dim == "full" else d // heads, dropout)
        self.register_buffer("mask_ids", mask_ids.clone(), persistent=False)
        # the candidates of the prediction: every word, or the label set; targets are indices into them
        candidates = mask_ids.clone() if vocabulary == "labels" else torch.arange(lm.vocab_size)
        self.register_buffer("candidates", candidates, persistent=False)
        index = torch.full((lm.vocab_size,), -100, dtype=torch.long)
        index[candidates] = torch.arange(len(candidates))
        self.register_buffer("target_index", index, persistent=False)
        self.decoder = nn.Linear(d, len(candidates)) if output == "linear" else None

    def train(self, mode: bool = True) -> ICMLM:
        super().train(mode)
        self.lm.eval()  # frozen: no dropout
        return self

    def training_data(self, data: PairedData) -> tuple[PairedData, Sampler | None]:
        """``triplets="sample"``: the pairs themselves. ``"all"``: one row per (image, caption, masked token)
        triplet (Supp F.1), its image, caption and side data repeated, ``extra["mask_position"]`` the token's
        position; captions without a maskable token give no row."""
        if self.triplets == "sample":
            return data, None
        pair, position = data.extra["maskable"].nonzero(as_tuple=True)
        rows = pair.numpy()
        extra = {name: take(value, rows) for name, value in data.extra.items()}
        extra["mask_position"] = position
        return PairedData(
            images=data.images[rows], captions=[data.captions[i] for i in rows], tokens=data.tokens[pair], extra=extra
        ), None

    def draw_positions(self, batch: Batch) -> torch.Tensor:
        """The masked position of each row ``[B]``: the triplet's own (``"all"``) or one maskable position drawn
        uniformly per row from a stream seeded by (seed, step) (``"sample"``: a resumed run draws the same, and
        across processes each rank this rank's rows of the global batch's draw); -1 for a caption with no maskable
        token."""
        if self.triplets == "all":
            return batch.side("mask_position")
        maskable = batch.side("maskable").cpu().numpy()
        # drawn for the whole global batch and cut to this rank's rows (distributed.shard): the draws of one process
        rows, length = maskable.shape
        rng = np.random.default_rng([self.seed, batch.step, _POSITION_STREAM])
        draws = distributed.shard(rng.random((rows * distributed.world().world_size, length)))
        draws[~maskable] = -1.0
        position = draws.argmax(1)
        position[~maskable.any(1)] = -1
        return torch.from_numpy(position).to(batch.texts.device)

    def masked_logits(
        self, model: nn.Module, images: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """The head's prediction for captions ``tokens`` ``[B, T]`` that hold ``[MASK]`` at ``positions`` ``[B]``:
        ``logits`` ``[B, len(candidates)]``, ``features`` GAP(X) ``[B, C]`` and ``attention`` ``[B, heads, H·W]``
        (the masked token's attention over the visual cells, Supp D)."""
        x = cast(ImageOnly, model).feature_map(images)  # [B, C, H, W]; ICMLM's model is an ImageOnly (wrap_model)
        features = x.mean(dim=(2, 3))
        visual = self.project(x.flatten(2).transpose(1, 2))  # X̄ [B, H·W, d]
        with torch.no_grad():
            text = self.lm(tokens)  # W: the frozen LM's states of the masked caption
        state, attention = self.head(visual, text.to(visual.dtype), tokens == self.lm.pad_id, positions)
        logits = self.decoder(state) if self.decoder is not None else self.lm.mlm_logits(state)[:, self.candidates]
        return {"logits": logits, "features": features, "attention": attention}

    def predict(
        self, model: nn.Module, images: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        """The predicted token id at each masked position (the proxy task's top-1 prediction, Supp Tab. 2)."""
        with torch.no_grad():
            return self.candidates[self.masked_logits(model, images, tokens, positions)["logits"].argmax(1)]

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        texts = batch.side("lm_tokens") if self.own_tokens else batch.texts
        positions = self.draw_positions(batch)
        present = positions >= 0
        safe = positions.clamp_min(0)
        rows = torch.arange(len(positions), device=positions.device)
        hidden = texts[rows, safe]
        tokens = texts.clone()
        tokens[rows[present], safe[present]] = self.lm.mask_id
        out = self.masked_logits(model, batch.images, tokens, safe)
        targets = torch.where(present, self.target_index[hidden], torch.full_like(hidden, -100))
        mlm = objectives.mlm_loss(out["logits"], targets, global_batch=True)
        tp = self.tp_term(out["features"], batch) if self.lam else torch.zeros((), device=mlm.device)
        logs = {"loss_mlm": float(mlm.detach()), "loss_tp": float(tp.detach())}
        return objectives.icmlm_loss(mlm, tp, self.lam), logs


# --- the proxy task on held-out captions (Supp Tab. 2's "Proxy": top-1 masked token prediction) ----------------

PROXY_SEED = 1_000_097_500  # the held-out captions' world seed: apart from training worlds and every task's seeds


def heldout_pairs(config: RunConfig, tokenizer: Any, n: int) -> PairedData:
    """``n`` held-out pairs drawn like the run's training pairs (its image size and world knobs) from a world of
    its own seed (``PROXY_SEED``): the proxy task's and the validation ℓ_tp's data. (The run's config with the
    held-out world's seed and size is not a run: it is not checked again, e.g. against a batch size above ``n``.)
    ``ValueError`` naming ``train_data`` for a run on real pairs: they come with no held-out pairs."""
    from vlp_lib.data.training import world_data

    if not real.is_world(config.train_data):
        raise ValueError(
            f"train_data: the proxy task reads held-out pairs of the generated world; a run on real pairs "
            f"({config.train_data}) has none"
        )
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    heldout = dataclasses.replace(config, world_seed=PROXY_SEED, train_size=int(n), world_mix=())
    return world_data(heldout, tokenizer)


def proxy_metrics(
    model: nn.Module, method: _ImageOnlyMethod, heldout: PairedData, batch_size: int = 256
) -> dict[str, float]:
    """What a trained run does on held-out pairs: ``tp_loss``, the validation ℓ_tp of its tag classifier on
    GAP(X) against the held-out targets of its label set (the quantity Supp B reads to choose λ; with λ = 0 the
    classifier is never trained), and, for an ICMLM run, the proxy task of Supp Tab. 2 over every
    (image, caption, masked token) triplet of the held-out captions (``lexicon.masked_triplets``):
    ``mtp_top1`` (ICMLM: image and masked caption) and ``lm_top1`` (the frozen world-LM alone, the "BERT_base alone"
    row, over the same candidates: its whole vocabulary, or the label set with ``vocabulary="labels"``), and
    ``triplets`` (how many)."""
    from vlp_lib.data.transforms import to_model_input
    from vlp_lib.eval import encode_images
    from vlp_lib.models import model_image_size
    from vlp_lib.papers.icmlm.world_lm import masked_token_accuracy

    size = model_image_size(model)
    if method.tags is not None:
        targets = torch.from_numpy(lexicon.tag_targets(heldout.captions, method.tags))
    elif method.classifier.out_features == 24 and "objects" in heldout.extra:
        targets = torch.from_numpy(shape_multi_hot(heldout.extra["objects"]).astype(np.float32))
    else:
        targets = None  # TP_Cluster: the held-out captions have no clusters of the run's K-Means
    out: dict[str, float] = {}
    with torch.no_grad():
        if targets is not None:
            features = encode_images(model, heldout.images, batch_size)
            out["tp_loss"] = float(
                objectives.tp_loss(method.classifier(features), targets, method.tp_kind, method.tp_reduction)
            )
        if isinstance(method, ICMLM):
            triplets = lexicon.masked_triplets(heldout.tokens, method.mask_ids, method.lm.mask_id)
            if not len(triplets["pair"]):
                raise ValueError("the held-out captions hold no token of the run's label set")
            correct = 0
            for i in range(0, len(triplets["pair"]), batch_size):
                rows = slice(i, i + batch_size)
                images = to_model_input(heldout.images[triplets["pair"][rows].numpy()], size)
                predicted = method.predict(model, images, triplets["tokens"][rows], triplets["position"][rows])
                correct += int((predicted == triplets["target"][rows]).sum())
            out["mtp_top1"] = correct / len(triplets["pair"])
            candidates = method.candidates if len(method.candidates) < method.lm.vocab_size else None
            out["lm_top1"] = masked_token_accuracy(
                method.lm, triplets["tokens"], triplets["position"], triplets["target"], candidates
            )
            out["triplets"] = float(len(triplets["pair"]))
    return out


__all__ = [
    "ICMLM",
    "ICMLMArgs",
    "TagPrediction",
    "TPArgs",
    "PROXY_SEED",
    "heldout_pairs",
    "proxy_metrics",
    "AttFcHead",
    "TfmHead",
    "Attention",
    "label_targets",
    "caption_clusters",
    "check_label_set",
    "LABEL_SETS",
    "HEADS",
]
