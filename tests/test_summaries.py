"""The extractive summariser (PyramidCLIP's T5 stand-in) on captions the world generates with every knob."""

from __future__ import annotations

import numpy as np
import pytest

from vlp_lib.data import vocab, world
from vlp_lib.papers.pyramidclip import summaries

ALLOWED = set(summaries.COLOUR_WORDS) | {w for s in vocab.SHAPES for w in vocab.words(s)} | {"a", "an", "and"}


def _words_of(*tables) -> set[str]:
    out: set[str] = set()
    for table in tables:
        items = table.items() if isinstance(table, dict) else [(t, []) for t in table]
        for key, phrases in items:
            out |= {w for text in [key, *phrases] for w in vocab.words(text)}
    return out


# Words a summary must never hold: sizes, positions, relations, pairings, backgrounds, junk, templates, counts.
TEMPLATE_WORDS = {w for t in vocab.CAPTION_TEMPLATES for w in vocab.words(t.format(objs=" ", bg=" ", count=" "))}
FORBIDDEN = (
    _words_of(
        vocab.SIZES_TABLE,
        vocab.POSITIONS_TABLE,
        vocab.RELATIONS,
        vocab.PAIRINGS,
        vocab.BACKGROUNDS_TABLE,
        vocab.COUNT_WORDS,
    )
    | vocab.junk_words()
    | TEMPLATE_WORDS
) - {"a", "an", "and"}

KNOBS = {
    "web": dict(),
    "synonyms": dict(synonym_rate=1.0),
    "junk": dict(junk_rate=1.0, mismatch_rate=0.0),
    "fixed": dict(paraphrase=False),
    "omit": dict(min_objects=2, omit_rate=1.0, mismatch_rate=0.0),
    "full": dict(omit_rate=0.0, mismatch_rate=0.0, synonym_rate=0.5),
    "mismatch": dict(mismatch_rate=1.0),
}


def test_hand_written_captions():
    cap = "IMG 2041 | A small crimson star in the top left corner left of a big cobalt ring on a striped background"
    assert summaries.summarize(cap) == "a crimson star and a cobalt ring"
    assert (
        summaries.summarize("free shipping, three shapes: an amber letter t, a jet letter e and a red bar")
        == "an amber letter t and a jet letter e and a red bar"
    )
    assert summaries.summarize("stock image blue hexagon isolated on plain background") == "a blue hexagon"
    assert summaries.summarize("an orange mid sized") == ""  # no object phrase: nothing to keep
    assert summaries.object_phrases("a tiny ivory crescent next to a snowy wave") == [
        ("ivory", "crescent"),
        ("snowy", "wave"),
    ]


def test_colour_words_are_unambiguous():
    # the rule relies on colour words meaning nothing else in a caption, and on shape names being known
    assert not summaries.COLOUR_WORDS & FORBIDDEN
    assert not summaries.COLOUR_WORDS & {w for s in vocab.SHAPES for w in vocab.words(s)}
    assert not (ALLOWED - {"a", "an", "and"}) & FORBIDDEN


@pytest.mark.parametrize("setting", list(KNOBS))
def test_summary_keeps_only_object_phrases_of_the_caption(setting):
    w = world.generate(80, 21, cache=False, **KNOBS[setting])
    out = summaries.summarize_all(w.captions)
    known = set(vocab.vocabulary())
    for cap, summ in zip(w.captions, out):
        words = vocab.words(summ)
        assert summ and set(words) <= ALLOWED and not set(words) & FORBIDDEN, (cap, summ)
        assert set(words) <= known
        cap_text = " " + " ".join(vocab.words(cap)) + " "
        for colour, shape in summaries.object_phrases(summ):  # each phrase, word for word, from the caption
            assert f" {colour} {shape} " in cap_text, (cap, summ)
        # as many phrases as the caption names objects (it names 1-3, each with one colour word)
        assert len(summaries.object_phrases(summ)) == len([x for x in vocab.words(cap) if x in summaries.COLOUR_WORDS])


@pytest.mark.parametrize("setting", ["web", "synonyms", "omit", "full", "fixed"])
def test_summary_names_what_the_caption_states(setting):
    """Unmismatched captions: the named objects, in the caption's order, with their true shapes and colours."""
    w = world.generate(60, 22, cache=False, **KNOBS[setting])
    colour_of = {s: c for c, syns in vocab.COLOUR_SYNONYMS.items() for s in [c, *syns]}
    for i in range(len(w)):
        if w.labels["mismatched"][i]:
            continue
        facts: dict = {}
        scene = world.sample_scene(w.seed, i, w.knobs)
        world.caption(w.seed, i, w.knobs, scene, facts=facts)
        named = [scene["objects"][j] for j in facts["objects"]]
        got = summaries.object_phrases(summaries.summarize(w.captions[i]))
        assert [shape for _, shape in got] == [vocab.SHAPES[o["shape"]] for o in named]
        assert [vocab.COLOURS.index(colour_of[c]) for c, _ in got] == [o["colour"] for o in named]
        if w.labels["omitted"][i]:
            assert len(got) == 1  # omitted objects stay omitted


def test_mismatched_captions_give_mismatched_summaries():
    w = world.generate(60, 23, cache=False, mismatch_rate=1.0, synonym_rate=0.0)
    extractive, oracle = summaries.world_summaries(w), summaries.world_summaries(w, oracle=True)
    assert oracle == w.summaries and extractive == summaries.summarize_all(w.captions)
    shapes = [{vocab.SHAPES[s] for s in o[:, 0]} for o in w.objects]
    wrong = [not {s for _, s in summaries.object_phrases(e)} <= true for e, true in zip(extractive, shapes)]
    assert np.mean(wrong) > 0.7  # the caption is another image's, and so is its summary


def test_clean_fixed_captions_summarise_to_the_oracle_objects():
    w = world.generate(
        40, 24, cache=False, paraphrase=False, synonym_rate=0.0, omit_rate=0.0, junk_rate=0.0, mismatch_rate=0.0
    )
    for cap, oracle in zip(w.captions, w.summaries):
        objects = oracle.rsplit(" on a ", 1)[0].replace(", ", " and ")
        assert summaries.summarize(cap) == objects


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: summaries.summarize(3), "caption"),
        (lambda: summaries.summarize(None), "caption"),
        (lambda: summaries.summarize_all("a red star"), "captions"),
        (lambda: summaries.summarize_all(["a red star", 7]), r"captions\[1\]"),
        (lambda: summaries.world_summaries(["a red star"]), "^w must"),
        (lambda: summaries.world_summaries(world.generate(2, 0, cache=False), oracle="yes"), "oracle"),
    ],
)
def test_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()
