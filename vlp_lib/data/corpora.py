"""Text-only corpora of the world: DIME-FM's unpaired text sources (spec 2.3, "Text corpora").

DIME-FM distils with images and sentences that were never paired. Its three kinds of text, in the world:

- ``caption_corpus``: the alt-text captions of a world of its own seed, computed without rendering a pixel
  (a caption is a function of ``(seed, index, knobs)`` only). Images of any other seed are unpaired with them
  by construction; with the same seed and knobs they are exactly ``world.generate(...).captions``.
- ``nlp_corpus``: sentences in the world's vocabulary that describe no scene (the NLP-text stand-in): a
  deterministic mix of junk phrases (``vocab.JUNK_PHRASES``), shape definitions (``vocab.DEFINITIONS``, "a
  square is a flat shape with ...") and word-shuffled captions. No sentence names a coloured object (no colour
  word is directly followed by a shape name), and every caption template needs one, so none is a caption of
  any scene.
- ``nearest_sentences``: the "constructed corpus", a stand-in for the main paper's Algorithm 1 (not in our
  sources; Supp B says only that the selected sentences lie close to the images in feature space): the
  cosine-nearest pool sentence(s) of each query image feature, deduplicated.

``class_prompts`` gives the class-name prompts of DIME-FM Supp G's setting (3) ("a photo of a {}").

Everything is deterministic: sentence ``i`` of a corpus depends on ``(seed, i)`` only, so the corpus of ``n``
sentences is a prefix of the corpus of ``n' > n`` with the same seed. Corpus seeds must lie below
``tasks.TASK_SEED_BASE`` (evaluation tasks' seeds), so that no corpus holds an evaluation image's caption.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from vlp_lib.config import check_positive_int
from vlp_lib.data import vocab
from vlp_lib.data.tasks import TASK_SEED_BASE
from vlp_lib.data.world import Draws, caption, check_knobs
from vlp_lib.data.world.captioning import _article

# The random stream of the NLP corpus' own draws (kind, junk phrases, definitions, shuffles): apart from the
# world's scene / caption / render / paraphrase streams (0-3).
NLP_STREAM = 16
# The kinds of NLP-corpus sentences, drawn with equal probability per sentence.
NLP_KINDS: tuple[str, ...] = ("junk", "definition", "shuffled")
# Reshuffles of a caption's words before the fallback order (colour words last).
SHUFFLE_TRIES = 20
# Queries per block in ``nearest_indices`` (bounds the similarity matrix held at once).
QUERY_BLOCK = 1024

_COLOUR_WORDS = frozenset(w for c in vocab.COLOURS for name in [c, *vocab.COLOUR_SYNONYMS[c]]
                          for w in vocab.words(name))
_SHAPE_FIRST_WORDS = frozenset(vocab.words(s)[0] for s in vocab.SHAPES)
# The knobs of the world whose captions the NLP corpus shuffles: the defaults (noisy alt-text).
_DEFAULT_KNOBS = check_knobs()


def _check_corpus_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < TASK_SEED_BASE:
        raise ValueError(f"seed must be an integer in [0, {TASK_SEED_BASE}) (below the evaluation tasks' seeds), "
                         f"got {seed!r}")
    return int(seed)


def caption_corpus(n: int, seed: int, **world_knobs: Any) -> list[str]:
    """The alt-text captions of the first ``n`` images of world ``(seed, world_knobs)``, without rendering.

    Equal to ``world.generate(n, seed, **world_knobs).captions`` (any image size): the world's noise (mismatch,
    omission, junk, synonyms) included. Use a seed no image corpus uses, and the captions are unpaired with every
    image by construction. ``ValueError`` naming ``n``, ``seed`` (a non-negative int below
    ``tasks.TASK_SEED_BASE``) or a bad knob, before anything is computed.
    """
    n = check_positive_int("n", n)
    seed = _check_corpus_seed(seed)
    knobs = check_knobs(**world_knobs)
    return [caption(seed, i, knobs)[0] for i in range(n)]


def names_an_object(text: str) -> bool:
    """Whether ``text`` has a colour word (canonical or synonym) directly followed by the first word of a shape
    name: every object phrase of every caption template does ("a crimson star", "a small red letter t")."""
    w = vocab.words(text)
    return any(a in _COLOUR_WORDS and b in _SHAPE_FIRST_WORDS for a, b in zip(w, w[1:]))


def _shuffled(words: list[str], d: Draws) -> list[str]:
    """A permutation of ``words`` in which no colour word is directly followed by a shape name: up to
    ``SHUFFLE_TRIES`` uniform shuffles, else the last shuffle with its colour words moved to the end."""
    order = words
    for _ in range(SHUFFLE_TRIES):
        order = [words[j] for j in d.sample(len(words), len(words))]
        if not names_an_object(" ".join(order)):
            return order
    return [w for w in order if w not in _COLOUR_WORDS] + [w for w in order if w in _COLOUR_WORDS]


def nlp_sentence(seed: int, index: int) -> tuple[str, str]:
    """Sentence ``index`` of the NLP corpus of ``seed``: ``(kind, text)`` with ``kind`` in ``NLP_KINDS``.

    - ``"junk"``: 1-3 distinct junk phrases ("free shipping buy now");
    - ``"definition"``: a shape and its definition ("a square is a flat shape with four equal straight ...");
    - ``"shuffled"``: the words of caption ``index`` of world ``seed`` (default knobs) in a random order in which
      no colour word precedes a shape name, lowercase, without punctuation.
    """
    seed = _check_corpus_seed(seed)
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
        raise ValueError(f"index must be a non-negative integer, got {index!r}")
    index = int(index)
    d = Draws(seed, index, NLP_STREAM)
    kind = NLP_KINDS[d.below(len(NLP_KINDS))]
    if kind == "junk":
        picked = d.sample(len(vocab.JUNK_PHRASES), 1 + d.below(3))
        return kind, " ".join(vocab.JUNK_PHRASES[j] for j in picked)
    if kind == "definition":
        shape = d.pick(vocab.SHAPES)
        return kind, f"{_article(shape)} is {vocab.DEFINITIONS[shape]}"
    words = vocab.words(caption(seed, index, _DEFAULT_KNOBS)[0])
    return kind, " ".join(_shuffled(words, d))


def nlp_corpus(n: int, seed: int) -> list[str]:
    """``n`` sentences in the world's vocabulary that describe no scene (``nlp_sentence(seed, i)`` for
    ``i < n``): about a third each of junk phrases, shape definitions and word-shuffled captions. None names a
    coloured object (``names_an_object`` is false), so none matches a caption template. ``ValueError`` naming
    ``n`` or ``seed`` (a non-negative int below ``tasks.TASK_SEED_BASE``)."""
    n = check_positive_int("n", n)
    seed = _check_corpus_seed(seed)
    return [nlp_sentence(seed, i)[1] for i in range(n)]


def _as_matrix(name: str, x: Any) -> np.ndarray:
    """``x`` (an array or a CPU/GPU tensor) as a float64 matrix with finite, non-zero rows."""
    if hasattr(x, "detach"):  # a torch tensor, without importing torch
        x = x.detach().cpu().numpy()
    try:
        m = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric matrix [n, d]: {err}") from None
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty matrix [n, d], got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError(f"{name} holds non-finite values")
    if (np.linalg.norm(m, axis=1) == 0).any():
        raise ValueError(f"{name} has an all-zero row (cosine similarity is undefined)")
    return m


def nearest_indices(query_features: Any, pool_features: Any, k: int = 1) -> np.ndarray:
    """int64 ``[n_query, k]``: the indices of the ``k`` pool rows of highest cosine similarity to each query row,
    most similar first (ties: the lower index first). ``ValueError`` naming the parameter for a non-matrix, an
    empty, non-finite or all-zero row, different widths, or ``k`` not in ``1..n_pool``."""
    q = _as_matrix("query_features", query_features)
    p = _as_matrix("pool_features", pool_features)
    if q.shape[1] != p.shape[1]:
        raise ValueError(f"query_features and pool_features must have the same width, got {q.shape[1]} and "
                         f"{p.shape[1]}")
    k = check_positive_int("k", k)
    if k > len(p):
        raise ValueError(f"k must be at most the pool size {len(p)}, got {k}")
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    p = p / np.linalg.norm(p, axis=1, keepdims=True)
    out = np.empty((len(q), k), np.int64)
    for a in range(0, len(q), QUERY_BLOCK):
        sim = q[a : a + QUERY_BLOCK] @ p.T
        out[a : a + QUERY_BLOCK] = np.argsort(-sim, axis=1, kind="stable")[:, :k]
    return out


def nearest_sentences(query_features: Any, pool_features: Any, pool_texts: Sequence[str], k: int = 1) -> list[str]:
    """The constructed corpus (the stand-in for DIME-FM's Algorithm 1): for each query image feature, its ``k``
    cosine-nearest pool sentences (``nearest_indices``), deduplicated by text, in first-seen order (query by
    query, nearest first). ``pool_texts[j]`` is the sentence of ``pool_features[j]``. ``ValueError`` naming the
    parameter (see ``nearest_indices``; ``pool_texts`` must be a list of strings, one per pool row)."""
    if isinstance(pool_texts, str):
        raise ValueError("pool_texts must be a sequence of strings, not one string")
    texts = list(pool_texts)
    if not all(isinstance(t, str) for t in texts):
        raise ValueError("pool_texts must be a sequence of strings")
    pool = _as_matrix("pool_features", pool_features)
    if len(texts) != len(pool):
        raise ValueError(f"pool_texts must hold one sentence per pool_features row: {len(texts)} texts, "
                         f"{len(pool)} rows")
    idx = nearest_indices(query_features, pool, k)
    return list(dict.fromkeys(texts[j] for j in idx.ravel()))


def class_prompts(classnames: Sequence[str], template: str = "a photo of a {}.") -> list[str]:
    """One prompt per class name, ``template.format(name)``: the class-name texts of DIME-FM Supp G's setting (3)
    ("partially covered": unrelated captions plus prompts of the image corpus' classes). ``ValueError`` naming
    ``classnames`` (a non-empty sequence of non-empty strings) or ``template`` (exactly one ``{}``)."""
    if isinstance(classnames, str) or not len(classnames) or \
            not all(isinstance(c, str) and c.strip() for c in classnames):
        raise ValueError(f"classnames must be a non-empty sequence of non-empty strings, got {classnames!r}")
    if not isinstance(template, str) or template.count("{}") != 1 or template.replace("{}", "").count("{") \
            or template.count("}") != 1:
        raise ValueError(f"template must be a string with exactly one '{{}}', got {template!r}")
    return [template.format(c) for c in classnames]
