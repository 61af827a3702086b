"""The world's part-of-speech lexicon: ICMLM's tags mined from captions (this book's stand-in for
the paper's POS tagger).

ICMLM (Sariyildiz et al., Supp A) builds its label sets from captions with a POS tagger: the K most frequent nouns,
adjectives and verbs (TP_Postag's tags, and the maskable tokens of ICMLM's triplets, Supp F.1). The world's
captions come from a closed vocabulary (``vocab``), so the tagger is a table of what a real tagger would say of
each caption word:

- ``NN``: the shapes (a multi-word shape is one concept tagged by its head word: "t" of "letter t"), the
  template nouns (photo, icon, sticker, ...), background/backdrop/shapes, the position nouns (corner, top, ...)
  and the nouns of the alt-text junk (shipping, price, ...: a real tagger tags web noise too);
- ``ADJ``: colour words and their synonyms, sizes, background-texture words (multi-word ones by their head
  word: "dot" of "polka dot", "sized" of "mid sized"), template and junk adjectives (simple, cute, free, ...);
- ``VB``: the template verbs (isolated, printed, showing, is) and the junk verbs (buy, click, ...).

Determiners, prepositions, numbers, counts and proper names ("by anna") belong to no class: they are never tags.
Every tag is one word of the world's tokenizer, so a tag is also a maskable token.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from vlp_lib.data import vocab

POS_CLASSES = ("NN", "ADJ", "VB")


def _heads(phrases: Sequence[str]) -> list[str]:
    """The head (last) word of each phrase: one tag per multi-word concept."""
    return [vocab.words(p)[-1] for p in phrases]


_TEMPLATE_NOUNS = [
    "photo",
    "image",
    "backdrop",
    "background",
    "clipart",
    "stock",
    "icon",
    "vector",
    "illustration",
    "drawing",
    "wallpaper",
    "design",
    "sticker",
    "paper",
    "picture",
    "logo",
    "texture",
    "sketch",
    "shapes",
    "fabric",
    "art",
    "pattern",
    "surface",
]
_POSITION_NOUNS = ["corner", "side", "centre", "middle", "top", "bottom", "left", "right"]
_JUNK_NOUNS = [
    "shipping",
    "img",
    "dsc",
    "royalty",
    "price",
    "quality",
    "hd",
    "jpg",
    "png",
    "copyright",
    "arrival",
    "sale",
    "edition",
    "thanks",
]
_TEMPLATE_ADJECTIVES = ["simple", "cute", "digital"]
_JUNK_ADJECTIVES = ["free", "best", "high", "new", "limited"]
_TEMPLATE_VERBS = ["isolated", "printed", "showing", "is"]
_JUNK_VERBS = ["buy", "click", "download", "follow", "watching"]

# POS class -> its words, in a fixed order (ties in tag frequency are broken by this order)
LEXICON: dict[str, tuple[str, ...]] = {
    "NN": tuple(dict.fromkeys(_heads(vocab.SHAPES) + _TEMPLATE_NOUNS + _POSITION_NOUNS + _JUNK_NOUNS)),
    "ADJ": tuple(
        dict.fromkeys(
            [w for c in vocab.COLOURS for w in _heads([c, *vocab.COLOUR_SYNONYMS[c]])]
            + [w for phrases in vocab.SIZES_TABLE.values() for w in _heads(phrases)]
            + [w for phrases in vocab.BACKGROUNDS_TABLE.values() for w in _heads(phrases)]
            + _TEMPLATE_ADJECTIVES
            + _JUNK_ADJECTIVES
        )
    ),
    "VB": tuple(dict.fromkeys(_TEMPLATE_VERBS + _JUNK_VERBS)),
}
_WORD_POS = {w: pos for pos, ws in LEXICON.items() for w in ws}
# the head word of each shape, in shape-id order: TP_Label's classes as tokens (ICMLM masking with label_set "label")
SHAPE_HEADS: tuple[str, ...] = tuple(_heads(vocab.SHAPES))


def check_pos(pos: Any) -> tuple[str, ...]:
    """``pos`` as a tuple of distinct POS classes (``POS_CLASSES``, in canonical order); ``ValueError`` naming
    ``pos`` for an unknown class, an empty selection or a bare string."""
    if isinstance(pos, str) or not isinstance(pos, (list, tuple)) or not pos:
        raise ValueError(f"pos must be a non-empty list of POS classes from {POS_CLASSES}, got {pos!r}")
    unknown = [p for p in pos if p not in POS_CLASSES]
    if unknown:
        raise ValueError(f"pos: unknown POS classes {unknown}; known: {list(POS_CLASSES)}")
    return tuple(p for p in POS_CLASSES if p in pos)


def pos_of(word: str) -> str | None:
    """The POS class of ``word`` (``"NN"``, ``"ADJ"``, ``"VB"``) or ``None`` when it is in no class."""
    return _WORD_POS.get(word)


def tag_counts(captions: Sequence[str], pos: Sequence[str] = POS_CLASSES) -> Counter:
    """How many captions hold each word of the classes ``pos`` (document frequency: a word twice in one caption
    counts once, as a caption's multi-hot target holds it once)."""
    classes = set(check_pos(pos))
    counts: Counter = Counter()
    for text in captions:
        counts.update({w for w in vocab.words(text) if _WORD_POS.get(w) in classes})
    return counts


def tag_vocabulary(captions: Sequence[str], pos: Sequence[str] = POS_CLASSES, k: int = 50) -> list[str]:
    """TP_Postag's label set (Supp A, Tab. 1): the ``k`` most frequent tags of the classes ``pos`` in ``captions``
    (all of them when fewer than ``k`` occur), most frequent first; ties are broken by the lexicon's order
    (``LEXICON``), so the result is deterministic. ``ValueError`` naming ``pos`` or ``k`` before any counting."""
    pos = check_pos(pos)
    k = _check_k(k)
    if isinstance(captions, str):
        raise ValueError("captions must be a sequence of strings, not one string")
    order = {w: i for i, w in enumerate(w for p in POS_CLASSES for w in LEXICON[p])}
    counts = tag_counts(captions, pos)
    return sorted(counts, key=lambda w: (-counts[w], order[w]))[:k]


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def _check_tags(tags: Any) -> list[str]:
    if isinstance(tags, str) or not isinstance(tags, (list, tuple)) or not tags:
        raise ValueError(f"tags must be a non-empty list of words, got {tags!r}")
    if len(set(tags)) != len(tags):
        raise ValueError(f"tags must be distinct, got {list(tags)}")
    return list(tags)


def tag_targets(captions: Sequence[str], tags: Sequence[str]) -> np.ndarray:
    """Multi-hot targets of ℓ_tp: float32 ``[N, len(tags)]``, 1 where caption ``i`` holds tag ``j``."""
    tags = _check_tags(tags)
    column = {t: j for j, t in enumerate(tags)}
    out = np.zeros((len(captions), len(tags)), np.float32)
    for i, text in enumerate(captions):
        hits = [column[w] for w in vocab.words(text) if w in column]
        out[i, hits] = 1.0
    return out


def tag_ids(tokenizer: Any, tags: Sequence[str]) -> torch.Tensor:
    """The token ids of ``tags`` in ``tokenizer`` (a ``WordTokenizer``); ``ValueError`` naming ``tags`` if one
    is not a word of its vocabulary (it could never be masked)."""
    tags = _check_tags(tags)
    missing = [t for t in tags if t not in tokenizer.word_to_id]
    if missing:
        raise ValueError(f"tags {missing} are not words of the tokenizer's vocabulary")
    return torch.tensor([tokenizer.word_to_id[t] for t in tags], dtype=torch.long)


def maskable(tokens: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """bool ``[N, T]``: which positions of ``tokens`` hold one of ``ids`` (ICMLM masks only label-set tokens)."""
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be 2-D [N, T], got shape {tuple(tokens.shape)}")
    return torch.isin(tokens, ids.to(tokens.device))


def masked_triplets(tokens: torch.Tensor, ids: torch.Tensor, mask_id: int) -> dict[str, torch.Tensor]:
    """ICMLM's (image, caption, masked token) triplets (Supp F.1): one per maskable token of each caption, "only one
    masked token per (image, caption) pair, so many triplets are built for a single pair".

    ``tokens`` ``[N, T]`` token ids of the captions, ``ids`` the maskable token ids (the label set's). Returns
    ``pair`` ``[M]`` (the caption / image index of each triplet), ``tokens`` ``[M, T]`` (the caption with that one
    token replaced by ``mask_id``), ``position`` ``[M]`` and ``target`` ``[M]`` (the hidden token id); triplets
    are ordered by caption, then position. A caption with no maskable token gives none."""
    if isinstance(mask_id, bool) or not isinstance(mask_id, (int, np.integer)) or mask_id < 0:
        raise ValueError(f"mask_id must be a non-negative integer, got {mask_id!r}")
    where = maskable(tokens, ids)
    pair, position = where.nonzero(as_tuple=True)
    masked = tokens[pair].clone()
    target = masked[torch.arange(len(pair)), position].clone()
    masked[torch.arange(len(pair)), position] = int(mask_id)
    return {"pair": pair, "tokens": masked, "position": position, "target": target}


def lexicon_size(pos: Sequence[str] = POS_CLASSES) -> int:
    """How many words the classes ``pos`` hold: the largest label set the world can give."""
    return sum(len(LEXICON[p]) for p in check_pos(pos))


__all__ = [
    "LEXICON",
    "POS_CLASSES",
    "SHAPE_HEADS",
    "check_pos",
    "lexicon_size",
    "masked_triplets",
    "maskable",
    "pos_of",
    "tag_counts",
    "tag_ids",
    "tag_targets",
    "tag_vocabulary",
]
