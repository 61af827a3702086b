"""DIME-FM's text corpora (``vlp_lib.data.corpora``): captions of another seed, the NLP-like corpus that describes
no scene, the nearest-sentence selector (constructed corpus) and class-name prompts."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
import torch

from vlp_lib.data import corpora, tasks, vocab, world


def _alt(phrases) -> str:
    return "(?:" + "|".join(re.escape(p) for p in sorted(set(phrases), key=len, reverse=True)) + ")"


def _caption_regex() -> re.Pattern:
    """Every caption template with its slots as regular expressions: an object phrase ("a small crimson star in
    the top left corner"), joined ones ("..., ... and ...", "... left of ..."), background and count words."""
    colour = _alt([w for c in vocab.COLOURS for w in [c, *vocab.COLOUR_SYNONYMS[c]]])
    size = _alt([w for ws in vocab.SIZES_TABLE.values() for w in ws])
    position = _alt([w for ws in vocab.POSITIONS_TABLE.values() for w in ws])
    obj = rf"(?:a|an) (?:{size} )?{colour} {_alt(vocab.SHAPES)}(?: {position})?"
    join = _alt(
        [", ", " and ", *(f" {p} " for p in vocab.PAIRINGS), *(f" {r} " for rs in vocab.RELATIONS.values() for r in rs)]
    )
    slots = {
        "{objs}": rf"{obj}(?:{join}{obj})*",
        "{count}": _alt(vocab.COUNT_WORDS),
        "{bg}": _alt([w for ws in vocab.BACKGROUNDS_TABLE.values() for w in ws]),
    }
    parts = [
        "".join(slots.get(p, re.escape(p)) for p in re.split(r"(\{objs\}|\{bg\}|\{count\})", t))
        for t in vocab.CAPTION_TEMPLATES
    ]
    return re.compile("|".join(f"(?:{p})" for p in parts))


CAPTION_RE = _caption_regex()


# --------------------------------------------------------------------------------------------------------------
# caption_corpus


@pytest.mark.parametrize("knobs", [dict(), dict(shapes=list(tasks.SHAPE_SET_B), max_objects=1, junk_rate=0.0)])
def test_caption_corpus_is_the_world_captions_without_rendering(knobs, monkeypatch):
    expected = world.generate(30, 5, 16, cache=False, **knobs).captions
    monkeypatch.setattr(world.items, "render", lambda *a, **k: pytest.fail("caption_corpus rendered an image"))
    assert corpora.caption_corpus(30, 5, **knobs) == expected
    assert corpora.caption_corpus(30, 5, **knobs) == corpora.caption_corpus(30, 5, **knobs)  # deterministic
    assert corpora.caption_corpus(12, 5, **knobs) == expected[:12]  # a prefix


def test_caption_corpus_differs_across_seeds():
    a, b = corpora.caption_corpus(200, 1), corpora.caption_corpus(200, 2)
    assert a != b and len(set(a) & set(b)) < 20
    assert sum(x == y for x, y in zip(a, b)) < 5


def test_caption_corpus_of_set_B_names_no_set_A_shape():
    texts = corpora.caption_corpus(300, 3, shapes=list(tasks.SHAPE_SET_B))
    shape_words = {s for s in tasks.SHAPE_SET_A}  # the 12 shapes of A are single words
    assert all(" " not in s for s in shape_words)
    assert not any(shape_words & set(vocab.words(t)) for t in texts)
    named_b = {s for s in tasks.SHAPE_SET_B for t in texts if re.search(rf"\b{s}\b", t.lower())}
    assert named_b == set(tasks.SHAPE_SET_B)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(n=0, seed=1), "n"),
        (dict(n=2.5, seed=1), "n"),
        (dict(n=3, seed=-1), "seed"),
        (dict(n=3, seed=tasks.TASK_SEED_BASE), "seed"),
        (dict(n=3, seed=True), "seed"),
        (dict(n=3, seed=1, shapes=["blob"]), "shapes"),
        (dict(n=3, seed=1, colour="red"), "knob"),
    ],
)
def test_caption_corpus_rejects_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        corpora.caption_corpus(**kwargs)


# --------------------------------------------------------------------------------------------------------------
# nlp_corpus


def test_the_caption_matcher_recognises_true_captions():
    """The check below is not vacuous: every clean caption and every paraphrase is a template match."""
    knobs = dict(junk_rate=0.0, mismatch_rate=0.0)
    caps = corpora.caption_corpus(300, 7, **knobs)
    assert all(CAPTION_RE.fullmatch(c.lower()) for c in caps)
    eff = world.check_knobs()
    paras = [p for i in range(40) for p in world.paraphrases(7, i, eff, 5)]
    assert all(CAPTION_RE.fullmatch(p.lower()) for p in paras)
    assert all(corpora.names_an_object(c) for c in caps + paras)
    # and noisy captions (junk phrases around them) still contain one
    assert all(CAPTION_RE.search(c.lower()) for c in corpora.caption_corpus(300, 8))


def test_nlp_corpus_describes_no_scene():
    texts = corpora.nlp_corpus(600, 4)
    assert len(texts) == 600
    for t in texts:
        assert not CAPTION_RE.search(t.lower()), t
        assert not corpora.names_an_object(t), t
    known = set(vocab.vocabulary())
    assert all(set(vocab.words(t)) <= known for t in texts)  # the world's vocabulary


def test_nlp_corpus_is_deterministic_and_a_prefix():
    a = corpora.nlp_corpus(300, 4)
    assert a == corpora.nlp_corpus(300, 4)
    assert corpora.nlp_corpus(50, 4) == a[:50]
    b = corpora.nlp_corpus(300, 5)
    assert a != b and sum(x == y for x, y in zip(a, b)) < 60  # junk and definitions repeat by chance


def test_nlp_corpus_mixes_junk_definitions_and_shuffled_captions():
    seed, n = 9, 600
    sentences = [corpora.nlp_sentence(seed, i) for i in range(n)]
    assert [t for _, t in sentences] == corpora.nlp_corpus(n, seed)
    kinds = Counter(k for k, _ in sentences)
    assert set(kinds) == set(corpora.NLP_KINDS)
    assert all(0.25 * n < kinds[k] < 0.42 * n for k in corpora.NLP_KINDS)
    captions = corpora.caption_corpus(n, seed)
    junk = vocab.junk_words()
    definitions = {f"{'an' if s[0] in 'aeiou' else 'a'} {s} is {d}" for s, d in vocab.DEFINITIONS.items()}
    for i, (kind, text) in enumerate(sentences):
        if kind == "junk":
            assert text and set(vocab.words(text)) <= junk
        elif kind == "definition":
            assert text in definitions
        else:  # the words of caption i of the world of this seed, reordered
            assert sorted(text.split()) == sorted(vocab.words(captions[i]))
            assert text != " ".join(vocab.words(captions[i]))
    assert len({t for k, t in sentences if k == "definition"}) > 15


def test_shuffle_fallback_keeps_colours_away_from_shapes(monkeypatch):
    monkeypatch.setattr(corpora, "SHUFFLE_TRIES", 0)  # every shuffled caption takes the fallback order
    sentences = [corpora.nlp_sentence(2, i) for i in range(150)]
    assert any(k == "shuffled" for k, _ in sentences)
    assert not any(corpora.names_an_object(t) for _, t in sentences)


@pytest.mark.parametrize(
    "kwargs, name",
    [(dict(n=0, seed=1), "n"), (dict(n=3, seed=-2), "seed"), (dict(n=3, seed=tasks.TASK_SEED_BASE + 5), "seed")],
)
def test_nlp_corpus_rejects_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        corpora.nlp_corpus(**kwargs)
    with pytest.raises(ValueError, match="index"):
        corpora.nlp_sentence(1, -1)


# --------------------------------------------------------------------------------------------------------------
# nearest_sentences


def test_nearest_sentences_picks_the_cosine_nearest_and_deduplicates():
    pool = np.array([[10.0, 10.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    texts = ["diagonal", "x", "y", "z"]
    # the first query's largest dot product is "diagonal" (11); its cosine-nearest is "x"
    queries = np.array([[1.0, 0.1, 0.0], [0.0, 0.2, 3.0], [5.0, 0.0, 0.1], [0.1, 2.0, 0.0]])
    assert corpora.nearest_sentences(queries, pool, texts) == ["x", "z", "y"]
    assert corpora.nearest_indices(queries, pool).tolist() == [[1], [3], [1], [2]]
    # k = 2: query by query, nearest first, each sentence once
    assert corpora.nearest_indices(queries, pool, k=2).tolist() == [[1, 0], [3, 2], [1, 0], [2, 0]]
    assert corpora.nearest_sentences(queries, pool, texts, k=2) == ["x", "diagonal", "z", "y"]
    # torch tensors work as well
    assert corpora.nearest_sentences(torch.tensor(queries), torch.tensor(pool), texts) == ["x", "z", "y"]


def test_nearest_sentences_deduplicates_equal_texts_and_breaks_ties_by_index():
    pool = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])  # rows 0 and 1 have the same direction
    assert corpora.nearest_indices(np.array([[1.0, 0.0]]), pool, k=2).tolist() == [[0, 1]]
    texts = ["a red star", "a red star", "a blue ring"]
    q = np.array([[1.0, 0.0], [1.0, 0.1]])
    assert corpora.nearest_sentences(q, pool, texts, k=2) == ["a red star"]
    assert corpora.nearest_sentences(q, pool, texts, k=3) == ["a red star", "a blue ring"]


def test_nearest_indices_match_brute_force_across_blocks(monkeypatch):
    rng = np.random.default_rng(0)
    q, p = rng.normal(size=(37, 8)), rng.normal(size=(50, 8))
    cos = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (p / np.linalg.norm(p, axis=1, keepdims=True)).T
    full = corpora.nearest_indices(q, p, k=3)
    monkeypatch.setattr(corpora, "QUERY_BLOCK", 5)
    assert np.array_equal(corpora.nearest_indices(q, p, k=3), full)
    assert np.array_equal(full[:, 0], cos.argmax(1))
    assert np.array_equal(full, np.argsort(-cos, axis=1)[:, :3])
    assert full.dtype == np.int64 and full.shape == (37, 3)


@pytest.mark.parametrize(
    "args, kwargs, name",
    [
        ((np.ones((2, 3)), np.ones((4, 2)), list("abcd")), {}, "width"),
        ((np.ones((2, 3)), np.ones((4, 3)), list("abcd")), dict(k=0), "k"),
        ((np.ones((2, 3)), np.ones((4, 3)), list("abcd")), dict(k=5), "k"),
        ((np.ones((2, 3)), np.ones((4, 3)), list("abc")), {}, "pool_texts"),
        ((np.ones((2, 3)), np.ones((4, 3)), "abcd"), {}, "pool_texts"),
        ((np.ones((2, 3)), np.ones((4, 3)), [1, 2, 3, 4]), {}, "pool_texts"),
        ((np.ones((2, 3)), np.zeros((4, 3)), list("abcd")), {}, "pool_features"),
        ((np.full((2, 3), np.nan), np.ones((4, 3)), list("abcd")), {}, "query_features"),
        ((np.ones(3), np.ones((4, 3)), list("abcd")), {}, "query_features"),
        ((np.ones((0, 3)), np.ones((4, 3)), list("abcd")), {}, "query_features"),
        ((np.ones((2, 3)), [["a", "b", "c"]] * 4, list("abcd")), {}, "pool_features"),
    ],
)
def test_nearest_sentences_rejects_bad_arguments(args, kwargs, name):
    with pytest.raises(ValueError, match=name):
        corpora.nearest_sentences(*args, **kwargs)


# --------------------------------------------------------------------------------------------------------------
# class_prompts


def test_class_prompts():
    assert corpora.class_prompts(["square", "letter t"]) == ["a photo of a square.", "a photo of a letter t."]
    assert corpora.class_prompts(("ring",), template="a {} shape.") == ["a ring shape."]
    prompts = corpora.class_prompts(tasks.SHAPE_SET_A)
    assert len(prompts) == 12 and all(set(vocab.words(p)) <= set(vocab.vocabulary()) for p in prompts)
    assert not any(corpora.names_an_object(p) for p in prompts)  # a prompt names a class, not a scene


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(classnames="square"), "classnames"),
        (dict(classnames=[]), "classnames"),
        (dict(classnames=["square", " "]), "classnames"),
        (dict(classnames=["square", 3]), "classnames"),
        (dict(classnames=["square"], template="a photo"), "template"),
        (dict(classnames=["square"], template="a {} and a {}"), "template"),
        (dict(classnames=["square"], template="a {0}"), "template"),
        (dict(classnames=["square"], template="a {} }"), "template"),
    ],
)
def test_class_prompts_rejects_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        corpora.class_prompts(**kwargs)
