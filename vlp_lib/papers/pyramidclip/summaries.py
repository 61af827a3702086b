"""Caption summaries: the extractive stand-in for PyramidCLIP's T5 summariser.

PyramidCLIP (Gao et al., §3.2 and §4.1) pairs the local image view with a *summary* ``T_S`` of each caption,
produced by a T5 summariser: a short text that keeps what the caption says about the salient objects. The
generated world has no T5, so ``summarize`` is a rule on the caption: it keeps every object phrase exactly as
the caption words it (colour word + shape name, colour synonyms kept: "a crimson star") and joins them with
" and ", dropping the template ("stock image ... isolated on"), size words, positions, relations, the background
and junk phrases ("free shipping", "IMG 2041").

Two summaries exist for every image of a world, and they answer different questions:

- ``summarize(caption)`` (this module) is the **fair** stand-in. It reads the caption only, as T5 does: a
  mismatched caption (another image's) gives a mismatched summary, and objects the caption omits stay omitted.
- ``World.summaries`` (``vlp_lib.data.world.summary``) is the **oracle**: every object of the true scene with
  canonical colour names, even when the caption is mismatched or incomplete. It leaks ground truth, so use it only
  as an upper-bound control (``world_summaries(w, oracle=True)``).

One way the rule is kinder than T5: it always removes junk phrases, which a real summariser might keep.
"""

from __future__ import annotations

from collections.abc import Sequence

from vlp_lib.data import vocab
from vlp_lib.data.world.captioning import _article
from vlp_lib.data.world.items import World

# Every word a caption may use for a colour (canonical names and their synonyms).
COLOUR_WORDS: frozenset[str] = frozenset(
    w for c, syns in vocab.COLOUR_SYNONYMS.items() for name in [c, *syns] for w in vocab.words(name)
)


def _shapes_by_first_word() -> dict[str, list[tuple[str, ...]]]:
    """Shape names as word tuples ("letter t" -> ("letter", "t")), grouped by first word, longest first."""
    out: dict[str, list[tuple[str, ...]]] = {}
    for name in sorted(vocab.SHAPES, key=lambda s: -len(vocab.words(s))):
        out.setdefault(vocab.words(name)[0], []).append(tuple(vocab.words(name)))
    return out


_SHAPES_BY_FIRST = _shapes_by_first_word()


def object_phrases(caption: str) -> list[tuple[str, str]]:
    """The ``(colour word, shape name)`` pairs a caption names, in caption order, words as the caption has them
    (lower case): "IMG 2041 | a small crimson star left of a blue ring" -> ``[("crimson", "star"), ("blue",
    "ring")]``. A pair is a colour word immediately followed by a shape name, which is how every object phrase of
    the world is worded (a size word, if any, comes before the colour); no other caption word is a colour word."""
    if not isinstance(caption, str):
        raise ValueError(f"caption must be a str, got {type(caption).__name__}")
    words = vocab.words(caption)
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(words) - 1:
        if words[i] in COLOUR_WORDS:
            for shape in _SHAPES_BY_FIRST.get(words[i + 1], ()):
                if tuple(words[i + 1 : i + 1 + len(shape)]) == shape:
                    found.append((words[i], " ".join(shape)))
                    i += len(shape)
                    break
        i += 1
    return found


def summarize(caption: str) -> str:
    """The extractive summary of ``caption``: its object phrases, "a crimson star and a blue ring".

    Keeps each object's colour word and shape name as the caption words them (synonyms kept), each with its
    article, joined by " and "; drops the template, sizes, positions, relations, the background and junk. Uses the
    caption only (see the module docstring). ``""`` if the caption names no object (never for a world caption).
    """
    return " and ".join(_article(f"{colour} {shape}") for colour, shape in object_phrases(caption))


def summarize_all(captions: Sequence[str]) -> list[str]:
    """``[summarize(c) for c in captions]``; ``ValueError`` naming ``captions`` for a bare string or a non-string
    item, before any summary is made."""
    if isinstance(captions, str) or not isinstance(captions, Sequence):
        raise ValueError(f"captions must be a sequence of str, got {type(captions).__name__}")
    bad = next((i for i, c in enumerate(captions) if not isinstance(c, str)), None)
    if bad is not None:
        raise ValueError(f"captions[{bad}] must be a str, got {type(captions[bad]).__name__}")
    return [summarize(c) for c in captions]


def world_summaries(w: World, oracle: bool = False) -> list[str]:
    """The summaries ``T_S`` of a world's captions: ``summarize_all(w.captions)`` (the fair stand-in for T5), or
    with ``oracle=True`` the world's clean ``w.summaries`` (every true object: an upper-bound control only)."""
    if not isinstance(w, World):
        raise ValueError(f"w must be a World, got {type(w).__name__}")
    if not isinstance(oracle, bool):
        raise ValueError(f"oracle must be a bool, got {oracle!r}")
    return list(w.summaries) if oracle else summarize_all(w.captions)
