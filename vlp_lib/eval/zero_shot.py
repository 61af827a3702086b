"""Zero-shot classification with CLIP's prompt ensemble (ProtoCLIP Sec. IV-C.1, Tables III and VI)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch
import torch.nn.functional as F

from vlp_lib.eval.common import ArrayLike, _check_len, _labels
from vlp_lib.eval.encode import encode_images, encode_texts
from vlp_lib.eval.probes import macro_accuracy


def _fill(template: str | Callable[[str], str], classname: str) -> str:
    # open_clip's templates are lambdas, CLIP's notebooks use "a photo of a {}." strings: take both
    return template(classname) if callable(template) else template.format(classname)


def zero_shot_classifier(
    model: torch.nn.Module,
    tokenizer: Callable[[list[str]], torch.Tensor],
    classnames: Sequence[str],
    templates: Sequence[str | Callable[[str], str]],
    batch_size: int = 512,
    device: str | torch.device | None = None,
) -> torch.Tensor:
    """Class weights ``[D, C]`` by CLIP's prompt ensemble (Radford et al. 2021, Sec. 3.1.4).

    For each class every template is filled in and encoded, each embedding is L2-normalised, the
    embeddings are averaged and the mean is renormalised (as open_clip's ``build_zero_shot_classifier``).
    ProtoCLIP uses CLIP's class names and templates (Sec. IV-C.1).
    """
    classnames, templates = list(classnames), list(templates)
    if not classnames:
        raise ValueError("classnames is empty")
    if not templates:
        raise ValueError("templates is empty")
    texts = [_fill(t, c) for c in classnames for t in templates]
    emb = encode_texts(model, tokenizer, texts, batch_size=batch_size, device=device, normalize=True)
    emb = emb.view(len(classnames), len(templates), -1).mean(dim=1)
    return F.normalize(emb, dim=-1).T.contiguous()


def zero_shot_accuracy(
    model: torch.nn.Module,
    tokenizer: Callable[[list[str]], torch.Tensor],
    images: ArrayLike,
    labels: ArrayLike,
    classnames: Sequence[str],
    templates: Sequence[str | Callable[[str], str]],
    batch_size: int = 256,
    device: str | torch.device | None = None,
    image_features: torch.Tensor | None = None,
) -> dict[str, float]:
    """Zero-shot ``top1`` / ``top5`` accuracy (fractions) of uint8 images ``[N, H, W, 3]`` with ``labels``, and
    ``top1_macro``, top-1's class-balanced mean (``eval.macro_accuracy``).

    Normalised image features against the prompt-ensemble classifier (ProtoCLIP Sec. IV-C.1: "L2-normalized
    representations"); top-5 is top-``min(5, C)`` so that it is defined for tasks with fewer than 5 classes.
    ``image_features``: the images' unnormalised features from ``encode_images`` when the caller has them
    already (the suite encodes each test split once for zero-shot and the probes); same numbers either way.
    """
    y = _labels(labels, "labels")
    _check_len(len(images), len(y), "labels", "images")
    if y.size and (y.min() < 0 or y.max() >= len(classnames)):
        raise ValueError(f"labels must lie in [0, {len(classnames)}), got range [{y.min()}, {y.max()}]")
    weights = zero_shot_classifier(model, tokenizer, classnames, templates, device=device)
    if image_features is None:
        feats = encode_images(model, images, batch_size=batch_size, device=device, normalize=True)
    else:
        _check_len(len(image_features), len(y), "labels", "image_features")
        feats = F.normalize(image_features.float(), dim=-1)
    logits = feats @ weights
    out = _topk_accuracy(logits, torch.as_tensor(y), ks=(1, 5))
    out["top1_macro"] = macro_accuracy(logits.argmax(dim=1).numpy(), y)
    return out


def _topk_accuracy(logits: torch.Tensor, target: torch.Tensor, ks: Iterable[int]) -> dict[str, float]:
    n_classes = logits.shape[1]
    ks = tuple(ks)
    pred = logits.topk(min(max(ks), n_classes), dim=1).indices
    correct = pred == target.view(-1, 1)
    return {f"top{k}": correct[:, : min(k, n_classes)].any(dim=1).double().mean().item() for k in ks}
