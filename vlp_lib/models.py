"""Models: open_clip CLIP models built from small JSON configs registered with open_clip.

Every JSON file in ``vlp_lib/model_configs/`` is a CPU preset sized for a 2-core CPU and 32 px images
(``rn-tiny-v0`` is the first laptop recipe, kept only as the reference of ``benchmarks/bench_recipe.py``;
``rn-small`` is rn-tiny with twice the ResNet width and a 2-layer, 128-wide text tower: the DIME-FM teacher
stand-in, with a capacity gap on both sides);
``RN50`` and ``ViT-B-32`` are open_clip's own configs for paper scale. The text tower's vocabulary and
context length follow the tokenizer in use (the generated world's word-level tokenizer by default),
so one config serves any tokenizer.

``CompositeCLIP`` pairs one model's image tower with another's text tower: DIME-FM's zero-shot model, the
distilled student's image encoder with the frozen teacher's text encoder.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, cast

import open_clip
import torch
import torch.nn.functional as F
from open_clip.modified_resnet import ModifiedResNet

from vlp_lib.config import check_positive_int

CONFIG_DIR = Path(__file__).parent / "model_configs"
CPU_PRESETS = tuple(sorted(p.stem for p in CONFIG_DIR.glob("*.json")))
PAPER_PRESETS = ("RN50", "ViT-B-32")
# CPU presets train in fp32, the precision every chapter's verdicts were measured in. benchmarks/bench_train.py on
# the 2-core CPU (batch 256, 32 px, samples/s, torch 2.14, alone on the machine): vit-tiny 344 fp32 vs 384 bf16
# autocast, rn-tiny 2,242 vs 2,443 -- bf16 (AMX) now gains ~10% here (an older build lost 15-20x to autocast's
# casts), and ICMLM's 64 px rn-tiny uses it (its chapter's PRECISION). Paper presets use bf16 autocast, the GPU
# mixed precision of the papers.
DEFAULT_PRECISION = {**{name: "fp32" for name in CPU_PRESETS}, "RN50": "bf16", "ViT-B-32": "bf16"}
MAX_LOGIT_SCALE = math.log(100.0)  # CLIP: temperature initialised at 0.07, logit scale clamped at 100

open_clip.add_model_config(CONFIG_DIR)


def available_models() -> tuple[str, ...]:
    return CPU_PRESETS + PAPER_PRESETS + tuple(sorted(_REGISTERED))


_REGISTERED: set[str] = set()


def register_model_config(name: str, config: dict) -> str:
    """Make an open_clip config dict available to ``create_model`` under ``name`` (benchmarks and
    recipe searches try towers that are not presets); returns ``name``."""
    open_clip.factory._MODEL_CONFIGS[name] = config
    _REGISTERED.add(name)
    DEFAULT_PRECISION.setdefault(name, "fp32")
    return name


def check_model_name(name: str) -> str:
    if name not in available_models():
        raise ValueError(f"model must be one of {list(available_models())}, got {name!r}")
    return name


def create_model(
    name: str,
    vocab_size: int,
    context_length: int,
    image_size: int | None = None,
    seed: int = 0,
    embed_dim: int | None = None,
) -> open_clip.CLIP:
    """A randomly initialised open_clip CLIP with the text tower sized for the tokenizer.

    ``seed`` fixes the initialisation. ``image_size`` overrides the config's (e.g. RN50 at 64 px).
    ``embed_dim`` overrides the config's joint embedding width (both towers' projections): a DIME-FM student's
    image tower is built with its teacher's width ("the output dimension equals the teacher's", the official
    ``EMBED_DIM 768``). ``None`` (the default) keeps the config's, and the model is then exactly the one built
    without the argument (same architecture, same initial weights for the same seed).
    open_clip initialises the logit scale at log(1 / 0.07), the CLIP temperature of 0.07.
    """
    check_model_name(name)
    overrides: dict[str, Any] = {}
    if embed_dim is not None:
        overrides["embed_dim"] = check_positive_int("embed_dim", embed_dim)
    cfg = open_clip.get_model_config(name)
    text_cfg = {**cfg["text_cfg"], "vocab_size": int(vocab_size), "context_length": int(context_length)}
    torch.manual_seed(seed)
    logging.disable(logging.WARNING)  # open_clip warns that no pretrained weights were loaded: by design
    try:
        model = open_clip.create_model(
            name,
            pretrained=None,
            text_cfg=text_cfg,
            force_image_size=image_size,
            output_dict=True,
            **overrides,
        )
    finally:
        logging.disable(logging.NOTSET)
    if isinstance(model.visual, ModifiedResNet):
        # oneDNN's convolutions are faster on NHWC weights; inputs may stay NCHW. rn-tiny, 2-core CPU, batch 256:
        # training step 253 -> 236 ms, image-tower inference on 2,048 images 320 -> 183 ms.
        model = model.to(memory_format=torch.channels_last)
    return model


def model_image_size(model: torch.nn.Module) -> int:
    visual: Any = model.visual  # an open_clip tower: torch's Module typing cannot say it has image_size
    size = visual.image_size
    return int(size[0] if isinstance(size, (tuple, list)) else size)


def clamp_logit_scale_(scale: torch.Tensor, max_value: float = MAX_LOGIT_SCALE) -> None:
    """Clamp a learnable log-temperature in place at log(100), as CLIP and ProtoCLIP (IV-A-2) do."""
    with torch.no_grad():
        scale.clamp_(0, max_value)


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------------------------------------------
# DIME-FM's zero-shot model: the student's image tower + the teacher's text tower


def image_embed_dim(model: torch.nn.Module) -> int:
    """Width of ``model``'s image embeddings, read from its image tower (``model.visual.output_dim``, or
    ``model.output_dim`` for a bare tower) without running it. ``ValueError`` naming ``model`` if it has none."""
    visual = getattr(model, "visual", model)
    dim = getattr(visual, "output_dim", None)
    if not isinstance(dim, int) or dim <= 0:
        raise ValueError(
            f"model: cannot read the image embedding width (no visual.output_dim) of {type(model).__name__}"
        )
    return dim


def text_embed_dim(model: torch.nn.Module) -> int:
    """Width of ``model``'s text embeddings, read from its text projection (an open_clip ``text_projection``
    matrix ``[width, D]`` or ``nn.Linear``; the transformer width when there is no projection) without running
    it. ``ValueError`` naming ``model`` if it has no text tower of that form."""
    if isinstance(model, CompositeCLIP):
        return model.embed_dim
    if not hasattr(model, "text_projection"):
        dim = getattr(model, "output_dim", None)
        if isinstance(dim, int) and dim > 0:
            return dim
        raise ValueError(f"model: cannot read the text embedding width (no text_projection) of {type(model).__name__}")
    proj: Any = model.text_projection  # None, a Linear or a [width, D] parameter
    if proj is None:
        return int(cast(Any, model).transformer.width)
    if isinstance(proj, torch.nn.Linear):
        return int(proj.out_features)
    return int(proj.shape[-1])


class TextTower(torch.nn.Module):
    """The text half of an open_clip ``CLIP``: its token and position embeddings, transformer, final layer norm
    and text projection, **shared** with ``clip`` (no copy), and ``CLIP.encode_text`` itself, so the features are
    exactly ``clip.encode_text``'s. The image tower and the logit scale are left out (``count_parameters`` of a
    ``TextTower`` is the text tower's size)."""

    def __init__(self, clip: open_clip.CLIP):
        super().__init__()
        if not isinstance(clip, open_clip.CLIP):
            raise ValueError(f"clip must be an open_clip CLIP, got {type(clip).__name__}")
        self.token_embedding = clip.token_embedding
        self.positional_embedding = clip.positional_embedding
        self.transformer = clip.transformer
        self.ln_final = clip.ln_final
        self.text_projection = clip.text_projection
        self.register_buffer("attn_mask", clip.attn_mask, persistent=False)
        self.text_pool_type = clip.text_pool_type
        self.text_eos_id = clip.text_eos_id
        self.context_length = clip.context_length
        self.vocab_size = clip.vocab_size

    # the very function open_clip's CLIP encodes text with: it reads only the attributes set above
    encode_text = open_clip.CLIP.encode_text

    def forward(self, text: torch.Tensor) -> torch.Tensor:
        return self.encode_text(text)


class CompositeCLIP(torch.nn.Module):
    """One model's image tower with another model's text tower, at the fixed logit scale 100.

    DIME-FM (Sun et al.) trains only the student's image encoder and its projection, and in the official
    ``get_loss`` sets ``student_text_feat = teacher_text_feat``: zero-shot evaluation of a student therefore
    needs the **student's image tower + the teacher's text tower**. ``CompositeCLIP(student, teacher)`` is that
    model, usable wherever a CLIP is (``eval.encode_images`` / ``encode_texts`` / ``zero_shot_accuracy``,
    ``suite.evaluate_suite``, the methods' ``model(images, texts)`` call):

    - ``encode_image`` is ``image_model.visual`` (the image tower with its projection), i.e. open_clip's
      ``CLIP.encode_image`` of ``image_model``; ``visual`` is the student's, so the image size
      (``model_image_size``) and the pixel dtype come from the student;
    - ``encode_text`` is ``text_model.encode_text``: for an open_clip ``CLIP`` only its text half is held
      (``TextTower``, so the teacher's image tower is not part of the composite); any other module with an
      ``encode_text`` is held whole;
    - ``logit_scale`` is a buffer at log(100), never trained: DIME-FM's ``set_logit_scale`` fixes
      logits = 100 * cos (not CLIP's learned temperature);
    - the text tower is **frozen**: its parameters get ``requires_grad = False`` (in place: they are the
      teacher's own, shared, not copied) and it stays in eval mode whatever ``train()`` is called with.

    The towers are shared with the models passed in (no copy): training the composite trains
    ``image_model``'s image tower. Both models must embed into the same width (``ValueError`` naming
    ``image_model`` and ``text_model`` otherwise, before anything is computed); build the student with
    ``create_model(..., embed_dim=text_embed_dim(teacher))``. The tokenizer to use is the text model's.
    """

    def __init__(self, image_model: torch.nn.Module, text_model: torch.nn.Module):
        super().__init__()
        visual = getattr(image_model, "visual", None)
        if not isinstance(visual, torch.nn.Module):
            raise ValueError(f"image_model must have an image tower (.visual), got {type(image_model).__name__}")
        if not isinstance(text_model, torch.nn.Module) or not callable(getattr(text_model, "encode_text", None)):
            raise ValueError(f"text_model must have a text tower (.encode_text), got {type(text_model).__name__}")
        d_image, d_text = image_embed_dim(image_model), text_embed_dim(text_model)
        if d_image != d_text:
            raise ValueError(
                f"image_model embeds images into {d_image} dimensions but text_model embeds texts into {d_text}: "
                f"build the image model with create_model(..., embed_dim={d_text})"
            )
        self.visual = visual  # registered first: eval's device and dtype helpers read the first parameter
        self.text: Any = TextTower(text_model) if isinstance(text_model, open_clip.CLIP) else text_model
        self.text.requires_grad_(False)
        self.text.eval()
        self.register_buffer("logit_scale", torch.tensor(math.log(100.0)))  # DIME-FM: logits = 100 cos
        self.embed_dim = d_image
        self.context_length = getattr(text_model, "context_length", None)
        self.vocab_size = getattr(text_model, "vocab_size", None)

    def train(self, mode: bool = True) -> CompositeCLIP:
        super().train(mode)
        self.text.eval()  # the teacher's text tower is frozen
        return self

    def encode_image(self, image: torch.Tensor, normalize: bool = False) -> torch.Tensor:
        features = self.visual(image)
        return F.normalize(features, dim=-1) if normalize else features

    def encode_text(self, text: torch.Tensor, normalize: bool = False) -> torch.Tensor:
        features = self.text.encode_text(text)
        return F.normalize(features, dim=-1) if normalize else features

    def forward(self, image: torch.Tensor | None = None, text: torch.Tensor | None = None) -> dict[str, Any]:
        """open_clip's ``output_dict`` forward: normalised ``image_features`` / ``text_features`` (``None`` for a
        missing input) and ``logit_scale`` = exp(log 100) = 100."""
        return {
            "image_features": self.encode_image(image, normalize=True) if image is not None else None,
            "text_features": self.encode_text(text, normalize=True) if text is not None else None,
            "logit_scale": cast(torch.Tensor, self.logit_scale).exp(),
        }


# --------------------------------------------------------------------------------------------------------------
# Image-only models: TP_* and ICMLM (Sariyildiz et al.) train a visual backbone with no aligned text tower


class ImageOnly(torch.nn.Module):
    """The image tower of an open_clip model alone, read as a backbone's **spatial feature map**: what ICMLM's TP_*
    and ICMLM models train (a CNN φ giving X ∈ R^{H×W×C}, main Sec. 3) and what their evaluation reads (Supp F.2:
    pooled last-layer features).

    The map comes from open_clip's own ``forward_intermediates`` (ViT: the patch tokens of the last blocks, through
    ``ln_post``, as ``[B, C, H, W]``; ModifiedResNet: the stage outputs, layer4 last): one code path for both
    towers, with no forward hook to register and no change to the tower's ``output_tokens`` (which would change what
    ``visual(x)`` returns for every other user of the tower). ``vit-tiny`` at 32 px gives an 8×8 map of width 128;
    ``rn-tiny`` at 32 px only 1×1 (64 px: 2×2).

    - ``encode_image`` is the global average pool of the last map (GAP(X): ℓ_tp's input and the features every probe
      of the suite reads); the tower's own pooling head (ViT class token + ``proj``, ResNet ``attnpool``) is unused;
    - no ``encode_text``: ``eval.has_text_tower`` is False, so ``suite.evaluate_suite`` runs the probes only (no
      zero-shot, no retrieval);
    - ``visual`` is shared with the model passed in (no copy).
    """

    def __init__(self, clip: torch.nn.Module):
        super().__init__()
        visual = getattr(clip, "visual", clip)
        if not callable(getattr(visual, "forward_intermediates", None)):
            raise ValueError(
                f"clip must have an open_clip image tower with forward_intermediates (a ViT or a "
                f"ModifiedResNet), got {type(visual).__name__}"
            )
        self.visual: Any = visual  # an open_clip tower with forward_intermediates

    def feature_maps(self, image: torch.Tensor, last: int = 1) -> list[torch.Tensor]:
        """The maps ``[B, C, H, W]`` of the ``last`` deepest blocks (ViT) or stages (ResNet), shallowest first:
        ``last=3`` gives the C-11 / C-12 / C-13 analogue of Supp C. ViT maps go through ``ln_post``."""
        last = check_positive_int("last", last)
        if last > self.depth():
            raise ValueError(f"last ({last}) asks for more maps than the image tower has blocks ({self.depth()})")
        out = self.visual.forward_intermediates(
            image, indices=last, normalize_intermediates=True, intermediates_only=True
        )
        return list(out["image_intermediates"])

    def depth(self) -> int:
        """The maps ``feature_maps`` can return: a ViT's blocks, or a ModifiedResNet's stem and four stages."""
        blocks = getattr(getattr(self.visual, "transformer", None), "resblocks", None)
        return len(blocks) if blocks is not None else 5

    def feature_map(self, image: torch.Tensor) -> torch.Tensor:
        """X: the last map ``[B, C, H, W]``."""
        return self.feature_maps(image, 1)[0]

    def map_shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of X at the tower's image size, read from one blank image in eval mode, the tower given
        back in the mode it was in: in training mode BatchNorm cannot normalise one image's 1×1 map (``rn-tiny``
        at 32 px: "Expected more than 1 value per channel") and would fold the blank image into its running
        statistics."""
        size = model_image_size(self)
        param = next(self.visual.parameters())
        was_training = self.visual.training
        self.visual.eval()
        try:
            with torch.no_grad():
                x = self.feature_map(torch.zeros(1, 3, size, size, device=param.device, dtype=param.dtype))
        finally:
            self.visual.train(was_training)
        return int(x.shape[1]), int(x.shape[2]), int(x.shape[3])

    def encode_image(self, image: torch.Tensor, normalize: bool = False) -> torch.Tensor:
        features = self.feature_map(image).mean(dim=(2, 3))
        return F.normalize(features, dim=-1) if normalize else features

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.encode_image(image)
