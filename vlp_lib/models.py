"""Models: open_clip CLIP models built from small JSON configs registered with open_clip.

Every JSON file in ``vlp_lib/model_configs/`` is a CPU preset sized for a 2-core CPU and 32 px images
(``rn-tiny-v0`` is the first laptop recipe, kept only as the reference of ``benchmarks/bench_recipe.py``);
``RN50`` and ``ViT-B-32`` are open_clip's own configs for paper scale. The text tower's vocabulary and
context length follow the tokenizer in use (the generated world's word-level tokenizer by default),
so one config serves any tokenizer.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import open_clip
import torch
from open_clip.modified_resnet import ModifiedResNet

CONFIG_DIR = Path(__file__).parent / "model_configs"
CPU_PRESETS = tuple(sorted(p.stem for p in CONFIG_DIR.glob("*.json")))
PAPER_PRESETS = ("RN50", "ViT-B-32")
# Measured with benchmarks/bench_train.py on the 2-core CPU (batch 256, samples/s): vit-tiny 210 fp32
# vs 14 bf16 autocast, rn-tiny 723 fp32 vs 35 bf16 -- autocast's casts cost more than the bf16
# matmuls save at this size. Paper presets use bf16 autocast, the GPU mixed precision of the papers.
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
) -> open_clip.CLIP:
    """A randomly initialised open_clip CLIP with the text tower sized for the tokenizer.

    ``seed`` fixes the initialisation. ``image_size`` overrides the config's (e.g. RN50 at 64 px).
    open_clip initialises the logit scale at log(1 / 0.07), the CLIP temperature of 0.07.
    """
    check_model_name(name)
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
        )
    finally:
        logging.disable(logging.NOTSET)
    if isinstance(model.visual, ModifiedResNet):
        # oneDNN's convolutions are faster on NHWC weights; inputs may stay NCHW. rn-tiny, 2-core CPU, batch 256:
        # training step 253 -> 236 ms, image-tower inference on 2,048 images 320 -> 183 ms.
        model = model.to(memory_format=torch.channels_last)
    return model


def model_image_size(model: torch.nn.Module) -> int:
    size = model.visual.image_size
    return int(size[0] if isinstance(size, (tuple, list)) else size)


def clamp_logit_scale_(scale: torch.nn.Parameter, max_value: float = MAX_LOGIT_SCALE) -> None:
    """Clamp a learnable log-temperature in place at log(100), as CLIP and ProtoCLIP (IV-A-2) do."""
    with torch.no_grad():
        scale.clamp_(0, max_value)


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
