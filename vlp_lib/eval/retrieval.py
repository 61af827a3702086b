"""Image-text retrieval recall@{1,5,10} both ways and their mean (ProtoCLIP Sec. IV-C.4, Table VIII)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from vlp_lib.eval.common import ArrayLike, _check_dim, _check_len, _feats, _labels


def retrieval_recall(
    image_feats: ArrayLike,
    text_feats: ArrayLike,
    text_image_index: ArrayLike,
    ks: Sequence[int] = (1, 5, 10),
    chunk_size: int = 1024,
) -> dict[str, float]:
    """Zero-shot image-to-text and text-to-image recall@k and their mean (ProtoCLIP Table VIII).

    Ranking by the dot product of L2-normalised features (Sec. IV-C.4). ``text_image_index[j]`` is the
    image that caption ``j`` describes. Image-to-text: an image is a hit at k if *any* of its captions is
    among its k most similar texts (the MS-COCO convention with 5 captions per image). Text-to-image: a
    caption is a hit at k if its image is among its k most similar images. A wrong candidate that ties
    with the correct one is ranked ahead of it (pessimistic, and deterministic, unlike a sort). Keys
    ``i2t_R@k``, ``t2i_R@k`` for each k in ``ks`` and ``mean_recall`` (the mean of all of them), all
    fractions.
    """
    img = F.normalize(_feats(image_feats, "image_feats"), dim=-1)
    txt = F.normalize(_feats(text_feats, "text_feats"), dim=-1)
    owner = torch.as_tensor(_labels(text_image_index, "text_image_index"))
    _check_len(len(txt), len(owner), "text_image_index", "text_feats")
    _check_dim(img, txt, "image_feats", "text_feats")
    if len(img) == 0 or len(txt) == 0:
        raise ValueError("image_feats and text_feats must be non-empty")
    if owner.min() < 0 or owner.max() >= len(img):
        raise ValueError(f"text_image_index must lie in [0, {len(img)}), got [{owner.min()}, {owner.max()}]")
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) <= 0:
        raise ValueError(f"ks must be positive integers, got {ks}")

    # rank of a query = number of wrong candidates scoring at least as high as its best correct one;
    # recall@k = P(rank < k). Ties count against the query (pessimistic), so a collapsed model whose
    # features are all equal scores ~0 rather than a perfect 1.
    i2t_rank = torch.empty(len(img), dtype=torch.long)
    for start in range(0, len(img), chunk_size):
        sim = img[start : start + chunk_size] @ txt.T
        correct = owner.view(1, -1) == torch.arange(start, start + len(sim)).view(-1, 1)
        best = sim.masked_fill(~correct, float("-inf")).max(dim=1, keepdim=True).values
        # an image without captions has best = -inf: every text outranks it, so it never hits
        i2t_rank[start : start + len(sim)] = ((sim >= best) & ~correct).sum(dim=1)
    t2i_rank = torch.empty(len(txt), dtype=torch.long)
    for start in range(0, len(txt), chunk_size):
        sim = txt[start : start + chunk_size] @ img.T
        target = owner[start : start + len(sim)].view(-1, 1)
        wrong = torch.ones_like(sim, dtype=torch.bool).scatter_(1, target, False)
        t2i_rank[start : start + len(sim)] = ((sim >= sim.gather(1, target)) & wrong).sum(dim=1)
    out = {}
    for k in ks:
        out[f"i2t_R@{k}"] = (i2t_rank < k).double().mean().item()
    for k in ks:
        out[f"t2i_R@{k}"] = (t2i_rank < k).double().mean().item()
    out["mean_recall"] = float(np.mean([out[f"{d}_R@{k}"] for d in ("i2t", "t2i") for k in ks]))
    return out
