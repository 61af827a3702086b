"""PyramidCLIP (Gao et al., arXiv v1): hierarchical feature alignment between images and texts.

Per pair (I, T) the method contrasts three image inputs with two texts (§3.1-3.4):

  G = the global view (RandomResizedCrop scale [0.9, 1]: the trainer's ``"none"`` augmentation), L = the local
  view (scale [0.5, 1]: ``Batch.view("local")``), R = the ROI sequence of a frozen detector (object features and
  boxes, §3.3), T = the caption, T_S = its summary.

  v^g = f(G), v^l = f(L), v^r = f2(phi(R)), l^t = h(T), l^s = h(T_S)          (L2-normalised)
  L_GS = peer-level (v^g, l^s), L_LT = peer-level (v^l, l^t)                   (§3.4, Eq. 5)
  L_RS, L_RT = cross-level relation terms (v^r, l^s), (v^r, l^t)               (Eq. 5)
  L = (1 - lambda - mu - gamma) L_GS + lambda L_LT + mu L_RS + gamma L_RT       (Eq. 6, all weights 0.25)

every term a softened InfoNCE with label smoothing alpha (Eq. 1-5, ``losses.soft.soft_info_nce``), one learnable
temperature shared by all terms. ``"clip"`` = (v^g, l^t) is Table 6's L_CLIP row (not part of Eq. 6). Inference
uses the full image and caption only (end of §3.1): the model's own ``encode_image`` / ``encode_text``.

phi and f2 follow the official code (models/models.py, AttentionPool2d.forward(isROI=True)): a bias-free linear
map of each ROI vector to the attention pool's width, the mean of the ROI tokens prepended as the query token, a new
LayerNorm, no positional embedding, then the image tower's own attention pool (shared weights), token 0. For a
ViT the ROI tokens follow the image's class embedding through the shared ``ln_pre`` and the last
``len(resblocks) - vit_ls`` blocks, then ``ln_post`` and ``proj``. Padding ROIs (a world scene has 1-3 objects,
VinVL gives 10) are masked out of the attention and of the mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, cast, get_args

import torch
import torch.nn.functional as F
from torch import nn

from vlp_lib.data.paired import PairedData, tokenize_all
from vlp_lib.losses.soft import soft_info_nce
from vlp_lib.methods.args import MethodArgs
from vlp_lib.methods.base import Batch, Method, MethodContext
from vlp_lib.papers.pyramidclip import real_data
from vlp_lib.papers.pyramidclip.summaries import summarize_all

# (image input, text input) of each term (§3.4); "clip" is Table 6's L_CLIP row
TERMS: dict[str, tuple[str, str]] = {
    "gs": ("global", "summary"),
    "lt": ("local", "caption"),
    "rs": ("rois", "summary"),
    "rt": ("rois", "caption"),
    "clip": ("global", "caption"),
}
FULL_WEIGHTS = {"gs": 0.25, "lt": 0.25, "rs": 0.25, "rt": 0.25}  # Eq. 6 with lambda = mu = gamma = 0.25
# T_S: the extractive stand-in for T5 (``papers.pyramidclip.summaries``), or the world's clean summaries (an upper-bound
# control); on data of your own, a CSV's summary column or each caption's noun phrases (``papers.pyramidclip.real_data``)
Summary = Literal["extractive", "oracle", "column", "noun_phrases"]
SUMMARIES: tuple[str, ...] = get_args(Summary)
# the frozen object detector behind R: the world's crop CNN (VinVL's stand-in), or its untrained control
Detector = Literal["trained", "untrained"]
DETECTORS: tuple[str, ...] = get_args(Detector)


def check_weights(weights: Any) -> dict[str, float]:
    """``ValueError`` naming ``weights`` unless it maps known terms (``TERMS``) to non-negative numbers summing
    to 1 (Eq. 6 is a convex combination)."""
    if not isinstance(weights, Mapping) or not weights:
        raise ValueError(f"weights must be a non-empty dict of terms {sorted(TERMS)} -> weight, got {weights!r}")
    unknown = set(weights) - set(TERMS)
    if unknown:
        raise ValueError(f"weights: unknown terms {sorted(unknown)}; known: {sorted(TERMS)}")
    if any(isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0 for w in weights.values()):
        raise ValueError(f"weights must be numbers >= 0, got {weights!r}")
    if abs(sum(weights.values()) - 1) > 1e-6:
        raise ValueError(f"weights must sum to 1 (Eq. 6), got {sum(weights.values()):.6g} for {weights!r}")
    return {k: float(v) for k, v in weights.items() if v > 0}


def check_alpha(alpha: Any) -> float:
    """``ValueError`` naming ``alpha`` unless 0 <= alpha < 1 (Eq. 3-4)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha < 1:
        raise ValueError(f"alpha must be in [0, 1), got {alpha!r}")
    return float(alpha)


def uses_rois(weights: dict[str, float]) -> bool:
    """Whether a term of ``weights`` contrasts the ROI sequence (L_RS, L_RT)."""
    return any(TERMS[t][0] == "rois" for t in weights)


def uses_summaries(weights: dict[str, float]) -> bool:
    """Whether a term of ``weights`` contrasts the summary T_S (L_GS, L_RS)."""
    return any(TERMS[t][1] == "summary" for t in weights)


@dataclass(frozen=True)
class PyramidCLIPArgs(MethodArgs):
    """PyramidCLIP's arguments: the loss ``weights`` of Eq. 6 (terms of ``TERMS`` -> weights >= 0 summing to 1;
    default ``FULL_WEIGHTS``), the label smoothing ``alpha`` (Eq. 3-4, in [0, 1)), ``literal`` (Eq. 3 as written,
    ``losses.soft.smoothed_targets``), the summaries T_S (``summary``: ``SUMMARIES``), the frozen detector behind R
    (``detector``: ``DETECTORS``; ``detector_images``: the size of its training world, ``None``: the detector's
    default, else >= 50), ``vit_ls`` (the first block of a ViT's ROI path, ``None``: 3/4 of the blocks) and, on
    data of your own, ``regions``: the JSON file of each image's boxes behind R (``real_data``; the world has its
    own boxes)."""

    method: ClassVar[str] = "pyramidclip"

    weights: Mapping[str, float] = field(default_factory=lambda: dict(FULL_WEIGHTS))
    alpha: float = 0.2
    literal: bool = True
    summary: Summary = "extractive"
    detector: Detector = "trained"
    detector_images: int | None = None
    vit_ls: int | None = None
    regions: str | None = None

    def __post_init__(self) -> None:
        check_weights(self.weights)
        check_alpha(self.alpha)
        if self.summary not in SUMMARIES:
            raise ValueError(f"summary must be one of {SUMMARIES}, got {self.summary!r}")
        if self.detector not in DETECTORS:
            raise ValueError(f"detector must be one of {DETECTORS}, got {self.detector!r}")
        images = self.detector_images
        if images is not None and (isinstance(images, bool) or not isinstance(images, int) or images < 50):
            raise ValueError(
                f"detector_images must be an integer >= 50 (the detector's training world), got {images!r}"
            )


class RoiEncoder(nn.Module):
    """phi and f2 of §3.3 for the ROI sequence R: ``forward(visual, rois, mask)`` -> ROI image embedding
    (not normalised). ``rois`` [B, M, roi_dim] (object feature + normalised box), ``mask`` [B, M] True where a
    ROI exists; every sample needs at least one."""

    # ``visual`` is an open_clip image tower: its submodules (attnpool, transformer, ...) are duck-typed (Any)
    def __init__(self, visual: Any, roi_dim: int, vit_ls: int | None = None):
        super().__init__()
        self.is_vit = hasattr(visual, "transformer") and hasattr(visual, "class_embedding")
        if self.is_vit:
            width = visual.class_embedding.shape[0]
            blocks = len(visual.transformer.resblocks)
            self.first_block = blocks * 3 // 4 if vit_ls is None else vit_ls  # the paper's L_s = 9 of 12
            if not 0 <= self.first_block <= blocks:
                raise ValueError(f"vit_ls must be in [0, {blocks}], got {vit_ls!r}")
        elif hasattr(visual, "attnpool"):
            width = visual.attnpool.q_proj.in_features
            self.ln = nn.LayerNorm(width)  # the official RN path adds its own ln_pre
        else:
            raise ValueError("PyramidCLIP's ROI branch needs an open_clip ModifiedResNet or VisionTransformer")
        self.proj_pre = nn.Parameter(torch.randn(roi_dim, width) * roi_dim**-0.5)  # phi: no bias (official)

    def forward(self, visual: Any, rois: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = rois.to(self.proj_pre.dtype) @ self.proj_pre  # [B, M, width]
        pad = torch.cat([torch.zeros_like(mask[:, :1]), ~mask], dim=1)  # [B, 1 + M], True = ignore
        if self.is_vit:
            return self._vit(visual, x, pad)
        weights = mask.unsqueeze(-1).to(x.dtype)
        mean = (x * weights).sum(1, keepdim=True) / weights.sum(1, keepdim=True).clamp_min(1)
        x = self.ln(torch.cat([mean, x], dim=1)).transpose(0, 1)  # [1 + M, B, width]
        pool = visual.attnpool
        out, _ = F.multi_head_attention_forward(
            query=x[:1],
            key=x,
            value=x,
            embed_dim_to_check=x.shape[-1],
            num_heads=pool.num_heads,
            q_proj_weight=pool.q_proj.weight,
            k_proj_weight=pool.k_proj.weight,
            v_proj_weight=pool.v_proj.weight,
            in_proj_weight=None,
            in_proj_bias=torch.cat([pool.q_proj.bias, pool.k_proj.bias, pool.v_proj.bias]),
            bias_k=None,
            bias_v=None,
            add_zero_attn=False,
            dropout_p=0.0,
            out_proj_weight=pool.c_proj.weight,
            out_proj_bias=pool.c_proj.bias,
            use_separate_proj_weight=True,
            training=self.training,
            key_padding_mask=pad,
            need_weights=False,
        )
        return out[0]

    def _vit(self, visual: Any, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        cls = visual.class_embedding.to(x.dtype).expand(x.shape[0], 1, -1)
        x = visual.ln_pre(torch.cat([cls, x], dim=1))  # [B, 1 + M, width]; no positional embedding (§3.3)
        blocks = visual.transformer.resblocks[self.first_block :]
        heads = blocks[0].attn.num_heads if len(blocks) else 1
        # float mask [B * heads, 1 + M, 1 + M]: padded keys get -inf for every query
        mask = torch.zeros(pad.shape, dtype=x.dtype, device=x.device).masked_fill(pad, float("-inf"))
        mask = mask[:, None, None, :].expand(-1, heads, x.shape[1], -1).reshape(-1, x.shape[1], x.shape[1])
        batch_first = getattr(visual.transformer, "batch_first", True)
        if not batch_first:
            x = x.transpose(0, 1)
        for block in blocks:
            x = block(x, attn_mask=mask)
        if not batch_first:
            x = x.transpose(0, 1)
        return visual.ln_post(x[:, 0]) @ visual.proj


def summary_texts(summary: str, data: PairedData, config: Any) -> list[str]:
    """T_S of every training pair: ``summarize_all`` of the captions ("extractive"), the world's clean summaries
    ("oracle"), or on data of your own the CSV's summary column or the captions' noun phrases (``real_data``)."""
    if summary == "extractive":
        return summarize_all(data.captions)
    if summary == "oracle":
        return list(data.extra["summaries"])
    return real_data.summaries(summary, data, config.train_data, config.image_size).texts


class PyramidCLIP(Method):
    """Eq. 6 over the terms of ``weights`` (``TERMS``; default ``FULL_WEIGHTS``), each a softened InfoNCE with
    ``alpha`` (Eq. 3-5; ``literal`` reads Eq. 3 as written, see ``losses.soft.smoothed_targets``).

    Side data per training pair (``PairedData.extra``, gathered per batch): ``summary_tokens`` (T_S) for the
    summary terms, ``rois`` [N, M, roi_dim] and ``roi_mask`` [N, M] for the relation terms."""

    name = "pyramidclip"
    Args: ClassVar[type[MethodArgs]] = PyramidCLIPArgs
    distributed = True  # every term's softened InfoNCE gathers the global batch (losses.soft.soft_info_nce)

    def __init__(
        self,
        visual: nn.Module | None = None,
        weights: Mapping[str, float] | None = None,
        alpha: float = PyramidCLIPArgs.alpha,
        literal: bool = PyramidCLIPArgs.literal,
        roi_dim: int = 68,
        vit_ls: int | None = PyramidCLIPArgs.vit_ls,
    ):
        super().__init__()
        self.weights = check_weights(FULL_WEIGHTS if weights is None else weights)
        self.alpha = check_alpha(alpha)
        self.literal = bool(literal)
        if uses_rois(self.weights) and visual is None:
            raise ValueError("visual: the relation terms (rs, rt) need the image tower to build the ROI branch")
        self.roi = RoiEncoder(visual, roi_dim, vit_ls) if uses_rois(self.weights) else None
        self.required_extras = (("summary_tokens",) if uses_summaries(self.weights) else ()) + (
            ("rois", "roi_mask") if self.roi is not None else ()
        )
        self.views = ("local",) if any(TERMS[t][0] == "local" for t in self.weights) else ()

    @classmethod
    def check_config(cls, config: Any) -> None:
        """What the run reads beside the pairs, before any compute (``real_data.check_inputs``): on data of your own
        a summariser that works on it and, for the relation terms, a regions file naming only its images."""
        args = cast(PyramidCLIPArgs, config.method_args)
        weights = check_weights(args.weights)
        real_data.check_inputs(
            config.train_data, args.summary, args.regions, uses_summaries(weights), uses_rois(weights)
        )

    @classmethod
    def arguments(cls, args: MethodArgs, context: MethodContext) -> dict[str, Any]:
        """Side data from the training pairs: T_S tokens (``summary``: ``summary_texts``) for the summary terms; the
        detector's ROI sequence of every image (``detector``: trained or untrained crop CNN on the world's boxes, or
        on data of your own on the boxes of ``regions``: ``vlp_lib.papers.pyramidclip.detector``, ``real_data``) and
        the image tower for the relation terms."""
        pyramid_args = cast(PyramidCLIPArgs, args)
        kwargs = args.kwargs()
        for key in ("summary", "detector", "detector_images", "regions"):  # side data only, not the constructor's
            kwargs.pop(key)
        summary, detector = pyramid_args.summary, pyramid_args.detector
        detector_images = pyramid_args.detector_images
        kwargs["weights"] = dict(pyramid_args.weights)
        weights = check_weights(pyramid_args.weights)
        data = context.data
        if uses_summaries(weights):
            texts = summary_texts(summary, data, context.config)
            data.extra["summary_tokens"] = tokenize_all(context.tokenizer, texts)
        if uses_rois(weights):
            from vlp_lib.papers.pyramidclip.detector import (  # late: only runs with the ROI terms
                ROI_DIM,
                load_detector,
                roi_features,
            )

            max_rois: dict[str, Any] = {}  # roi_features' keywords: its default on the world (at most 3 objects)
            if "boxes" in data.extra:  # the generated world's objects
                boxes = data.extra["boxes"]
            elif pyramid_args.regions is not None:  # data of your own: a detector's boxes from a regions file
                config = context.config
                given = real_data.region_boxes(pyramid_args.regions, config.train_data, data, config.image_size)
                boxes, max_rois["max_rois"] = given.boxes, real_data.ROI_SLOTS
            else:
                raise ValueError("regions: the relation terms need each image's boxes (the world's, or a regions file)")
            sizes: dict[str, Any] = (  # load_detector's keywords
                {}
                if detector_images is None
                else {"train_images": detector_images, "test_images": max(100, detector_images // 6)}
            )
            found = load_detector(trained=detector == "trained", **sizes)
            rois, mask = roi_features(data.images, found, boxes=boxes, **max_rois)
            data.extra["rois"], data.extra["roi_mask"] = torch.from_numpy(rois), torch.from_numpy(mask)
            kwargs.update(visual=context.model.visual, roi_dim=ROI_DIM)
        return kwargs

    def loss(self, model: Any, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:  # open_clip CLIP (duck-typed)
        needed_images = {TERMS[t][0] for t in self.weights}
        needed_texts = {TERMS[t][1] for t in self.weights}
        images: dict[str, torch.Tensor] = {}
        if "global" in needed_images:
            images["global"] = F.normalize(model.encode_image(batch.images), dim=-1)
        if "local" in needed_images:
            images["local"] = F.normalize(model.encode_image(batch.view("local")), dim=-1)
        if "rois" in needed_images:
            rois, mask = batch.side("rois"), batch.side("roi_mask")
            assert self.roi is not None  # built in __init__ whenever a term contrasts the ROIs (uses_rois)
            images["rois"] = F.normalize(self.roi(model.visual, rois, mask.bool()), dim=-1)
        texts: dict[str, torch.Tensor] = {}
        if "caption" in needed_texts:
            texts["caption"] = F.normalize(model.encode_text(batch.texts), dim=-1)
        if "summary" in needed_texts:
            texts["summary"] = F.normalize(model.encode_text(batch.side("summary_tokens")), dim=-1)
        scale = model.logit_scale.exp()
        total = torch.zeros((), device=batch.images.device)
        logs: dict[str, float] = {}
        for term, weight in self.weights.items():
            image, text = TERMS[term]
            value = soft_info_nce(images[image], texts[text], scale, self.alpha, literal=self.literal)
            total = total + weight * value
            logs[f"loss_{term}"] = float(value.detach())
        logs["logit_scale"] = float(scale.detach())
        return total, logs
