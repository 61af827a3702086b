"""Text-only corpora of the world: DIME-FM's unpaired text sources (our stand-ins for its Supp A corpora).

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

A corpus is named in a run config by a JSON-able spec (``check_corpus``, ``build_corpus``): captions, NLP
sentences, prompts, a union of corpora, or the constructed corpus (built by the DIME-FM method, which has the
teacher's features).

Everything is deterministic: sentence ``i`` of a corpus depends on ``(seed, i)`` only, so the corpus of ``n``
sentences is a prefix of the corpus of ``n' > n`` with the same seed. Corpus seeds must lie below
``tasks.TASK_SEED_BASE`` (evaluation tasks' seeds), so that no corpus holds an evaluation image's caption.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

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

_COLOUR_WORDS = frozenset(
    w for c in vocab.COLOURS for name in [c, *vocab.COLOUR_SYNONYMS[c]] for w in vocab.words(name)
)
_SHAPE_FIRST_WORDS = frozenset(vocab.words(s)[0] for s in vocab.SHAPES)
# The knobs of the world whose captions the NLP corpus shuffles: the defaults (noisy alt-text).
_DEFAULT_KNOBS = check_knobs()


def _check_corpus_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < TASK_SEED_BASE:
        raise ValueError(
            f"seed must be an integer in [0, {TASK_SEED_BASE}) (below the evaluation tasks' seeds), got {seed!r}"
        )
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
        raise ValueError(
            f"query_features and pool_features must have the same width, got {q.shape[1]} and {p.shape[1]}"
        )
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
        raise ValueError(
            f"pool_texts must hold one sentence per pool_features row: {len(texts)} texts, {len(pool)} rows"
        )
    idx = nearest_indices(query_features, pool, k)
    return list(dict.fromkeys(texts[j] for j in idx.ravel()))


# Supp G setting (3)'s class-name prompt (CLIP's "a photo of a {}.")
DEFAULT_TEMPLATE = "a photo of a {}."


def class_prompts(classnames: Sequence[str], template: str = DEFAULT_TEMPLATE) -> list[str]:
    """One prompt per class name, ``template.format(name)``: the class-name texts of DIME-FM Supp G's setting (3)
    ("partially covered": unrelated captions plus prompts of the image corpus' classes). ``ValueError`` naming
    ``classnames`` (a non-empty sequence of non-empty strings) or ``template`` (exactly one ``{}``)."""
    if (
        isinstance(classnames, str)
        or not len(classnames)
        or not all(isinstance(c, str) and c.strip() for c in classnames)
    ):
        raise ValueError(f"classnames must be a non-empty sequence of non-empty strings, got {classnames!r}")
    if (
        not isinstance(template, str)
        or template.count("{}") != 1
        or template.replace("{}", "").count("{")
        or template.count("}") != 1
    ):
        raise ValueError(f"template must be a string with exactly one '{{}}', got {template!r}")
    return [template.format(c) for c in classnames]


# --- corpus specs: a text corpus named by a JSON-able dict (DIME-FM's ``method_kwargs["texts"]``) ------------

# kind -> (required keys, optional keys)
CORPUS_KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "captions": (("n", "seed"), ("world_knobs",)),
    "nlp": (("n", "seed"), ()),
    "prompts": (("classnames",), ("template",)),
    "union": (("parts",), ()),
    "constructed": (("queries", "pool"), ()),
}


def constructed_parts(spec: Any) -> list[dict[str, Any]]:
    """The constructed corpora of a checked spec (itself, or parts of its unions); ``[]`` for anything else."""
    if not isinstance(spec, dict):
        return []
    if spec.get("kind") == "constructed":
        return [spec]
    if spec.get("kind") == "union":
        return [c for part in spec["parts"] for c in constructed_parts(part)]
    return []


def check_corpus(spec: Any) -> dict[str, Any]:
    """``ValueError`` naming what is wrong with a corpus spec, without computing anything; returns ``spec``.

    A spec is a dict with a ``"kind"``:

    - ``{"kind": "captions", "n", "seed", "world_knobs": {...}}``: ``caption_corpus(n, seed, **world_knobs)``;
    - ``{"kind": "nlp", "n", "seed"}``: ``nlp_corpus(n, seed)``;
    - ``{"kind": "prompts", "classnames": [...], "template": "a photo of a {}."}``: ``class_prompts``;
    - ``{"kind": "union", "parts": [spec, ...]}``: the parts' sentences one after the other;
    - ``{"kind": "constructed", "queries", "pool": spec}``: the teacher-nearest pool sentence of each of the first
      ``queries`` images of the image corpus (``nearest_sentences``), the stand-in for DIME-FM's Algorithm 1.
      It needs the teacher's features, so only a method that has them builds it (``build_corpus`` with
      ``query_features`` and ``encode``); its pool holds no constructed corpus.
    """
    if not isinstance(spec, dict):
        raise ValueError(f"spec must be a dict with a 'kind' (one of {sorted(CORPUS_KINDS)}), got {spec!r}")
    kind = spec.get("kind")
    if kind not in CORPUS_KINDS:
        raise ValueError(f"kind must be one of {sorted(CORPUS_KINDS)}, got {kind!r}")
    required, optional = CORPUS_KINDS[kind]
    missing = [k for k in required if k not in spec]
    if missing:
        raise ValueError(f"a {kind!r} corpus needs {missing}, got {spec!r}")
    unknown = set(spec) - {"kind", *required, *optional}
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)} of a {kind!r} corpus; known: {[*required, *optional]}")
    if kind in ("captions", "nlp"):
        check_positive_int("n", spec["n"])
        _check_corpus_seed(spec["seed"])
        knobs = spec.get("world_knobs", {})
        if not isinstance(knobs, dict):
            raise ValueError(f"world_knobs must be a dict of world knobs, got {knobs!r}")
        check_knobs(**knobs)
    elif kind == "prompts":
        class_prompts(spec["classnames"], spec.get("template", DEFAULT_TEMPLATE))
    elif kind == "union":
        parts = spec["parts"]
        if not isinstance(parts, (list, tuple)) or not parts:
            raise ValueError(f"parts must be a non-empty list of corpus specs, got {parts!r}")
        for part in parts:
            check_corpus(part)
    else:
        check_positive_int("queries", spec["queries"])
        check_corpus(spec["pool"])
        if constructed_parts(spec["pool"]):
            raise ValueError("pool of a 'constructed' corpus must not itself hold a constructed corpus")
    return spec


def build_corpus(
    spec: dict[str, Any], query_features: Any = None, encode: Callable[[list[str]], Any] | None = None
) -> list[str]:
    """The sentences of the corpus ``spec`` (``check_corpus``, called first: bad specs compute nothing).

    A ``"constructed"`` corpus (also inside a union) needs the teacher: ``query_features`` are its image features
    of the image corpus (rows in corpus order; the first ``queries`` are the queries) and ``encode(texts)`` its
    text features of a list of sentences; the corpus is ``nearest_sentences(query_features[:queries],
    encode(pool), pool)``. Without them it is refused with a ``ValueError`` naming ``spec``: the DIME-FM method
    builds it, it has the teacher.
    """
    check_corpus(spec)
    kind = spec["kind"]
    if kind == "captions":
        return caption_corpus(spec["n"], spec["seed"], **spec.get("world_knobs", {}))
    if kind == "nlp":
        return nlp_corpus(spec["n"], spec["seed"])
    if kind == "prompts":
        return class_prompts(spec["classnames"], spec.get("template", DEFAULT_TEMPLATE))
    if kind == "union":
        return [t for part in spec["parts"] for t in build_corpus(part, query_features, encode)]
    if query_features is None or encode is None:
        raise ValueError(
            "spec: a 'constructed' corpus picks the teacher-nearest sentences of its pool, so it needs "
            "the teacher's features (query_features and encode); the DIME-FM method builds it"
        )
    if spec["queries"] > len(query_features):
        raise ValueError(f"queries ({spec['queries']}) is more than the image corpus' {len(query_features)} images")
    pool = build_corpus(spec["pool"])
    return nearest_sentences(query_features[: spec["queries"]], encode(pool), pool)
