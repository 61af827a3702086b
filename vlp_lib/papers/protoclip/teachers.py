"""ProtoCLIP's external teachers (Section III-C-2, Eq. 8-9): frozen encoders of the captions whose features are
computed once, reduced by PCA and cached on disk (the paper caches RoBERTa-large features off-line and reduces them
from 1024 to 64 dimensions by PCA, IV-A-3).

- ``minilm``: the packaged sentence encoder (``vlp_lib.sentence_encoder``), this book's stand-in for RoBERTa-large;
- ``clip``: the text encoder of a CLIP run trained earlier in this book (Fig. 6 (d) compares a CLIP text encoder
  with RoBERTa as teachers): the CLIP baseline with the same scale, data and seed;
- ``none``: no external teacher.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np

from vlp_lib import runs
from vlp_lib.cache import cached_array, content_key
from vlp_lib.eval import encode_texts
from vlp_lib.paths import cache_dir
from vlp_lib.sentence_encoder import PCA_DIM, minilm_features, pca_reduce

if TYPE_CHECKING:  # the run config imports the method registry, which imports this paper's method
    from vlp_lib.run_config import RunConfig

Teacher = Literal["none", "minilm", "clip"]
TEACHERS: tuple[str, ...] = get_args(Teacher)


def check_teacher(name: str) -> str:
    if name not in TEACHERS:
        raise ValueError(f"external_teacher must be one of {list(TEACHERS)}, got {name!r}")
    return name


def clip_text_features(
    model: Any, tokenizer: Any, texts: Sequence[str], dim: int = PCA_DIM, cache_key: str | None = None
) -> np.ndarray:
    """A trained CLIP's text features of ``texts``, reduced by PCA (cached when ``cache_key`` is given)."""

    def compute() -> np.ndarray:
        return pca_reduce(encode_texts(model, tokenizer, list(texts), normalize=True).numpy(), dim)

    if cache_key is None:
        return compute().astype(np.float32)
    return cached_array(cache_dir() / "teachers" / f"clip-{dim}-{cache_key}-{content_key(list(texts))}.npy", compute)


def clip_teacher_config(config: RunConfig) -> RunConfig:
    """The run whose text encoder is the "clip" teacher of the ProtoCLIP run ``config``: the CLIP baseline trained
    with the same scale, data and seed (Fig. 6 (d))."""
    return config.replace(method="clip", method_kwargs={}, episode_size=None, image_lock_fraction=0.0)


def teacher_features(
    name: str, config: RunConfig, captions: Sequence[str], trained: Callable[[Any], tuple[Any, Any]]
) -> np.ndarray | None:
    """An external teacher's (PCA-reduced) features of every training caption: ``"minilm"`` (the packaged
    sentence encoder), ``"clip"`` (the text encoder of ``clip_teacher_config(config)``, trained first if it is not
    stored: ``trained`` is ``MethodContext.trained``) or ``"none"`` (``None``)."""
    teacher = check_teacher(name)
    if teacher == "minilm":
        return minilm_features(captions)
    if teacher == "clip":
        clip_config = clip_teacher_config(config)
        clip_model, tokenizer = trained(clip_config)
        # a CLIP run is the core's: its features change when the core does
        key = runs.config_hash(clip_config.to_dict()) + runs.code_fingerprint()
        return clip_text_features(clip_model, tokenizer, captions, cache_key=key)
    return None
