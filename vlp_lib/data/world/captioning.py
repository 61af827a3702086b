"""Captions and summaries: the alt-text caption of image ``i`` (with its noise), the oracle summary of a
scene and clean paraphrases for the retrieval set."""

from __future__ import annotations

from typing import Any

from vlp_lib.data import vocab
from vlp_lib.data.world.randomness import CAPTION_STREAM, PARAPHRASE_STREAM, Draws
from vlp_lib.data.world.scenes import _relation, sample_scene


def _article(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _object_phrase(
    obj: dict, d: Draws, knobs: dict[str, Any], detail: bool, where: bool, record: dict | None = None
) -> str:
    """ "a crimson star", with ``detail`` sometimes "a small crimson star", with ``where`` sometimes
    "... in the top left corner". ``record`` receives ``size`` and ``position``: whether the phrase names them."""
    colour = vocab.COLOURS[obj["colour"]]
    if d.random() < knobs["synonym_rate"]:
        colour = d.pick(vocab.COLOUR_SYNONYMS[colour])
    words = [colour, vocab.SHAPES[obj["shape"]]]
    sized = detail and d.random() < 0.3
    if sized:
        words.insert(0, d.pick(vocab.SIZES_TABLE[vocab.SIZES[obj["size"]]]))
    phrase = _article(" ".join(words))
    placed = where and d.random() < 0.2
    if placed:
        phrase += " " + d.pick(vocab.POSITIONS_TABLE[obj["position"]])
    if record is not None:
        record.update(size=sized, position=placed)
    return phrase


def _join(phrases: list[str], d: Draws, objs: list[dict], paraphrase: bool, record: dict | None = None) -> str:
    """The object phrases as one; ``record["relation"]`` receives the relation of the first object to the second
    that the text states ("left", "right", "above", "below"), or None."""
    if record is not None:
        record["relation"] = None
    if len(phrases) == 1:
        return phrases[0]
    if len(phrases) == 2:
        if not paraphrase:
            return f"{phrases[0]} and {phrases[1]}"
        related = d.random() < 0.5
        options = vocab.RELATIONS[_relation(objs[0], objs[1])] if related else vocab.PAIRINGS
        if record is not None and related:
            record["relation"] = _relation(objs[0], objs[1])
        return f"{phrases[0]} {d.pick(options)} {phrases[1]}"
    return ", ".join(phrases[:-1]) + f" and {phrases[-1]}"


_COUNT_FREE = [t for t, s in enumerate(vocab.CAPTION_TEMPLATES) if "{count}" not in s]


def describe(
    scene: dict[str, Any],
    d: Draws,
    knobs: dict[str, Any],
    template: int | None = None,
    facts: dict[str, Any] | None = None,
) -> tuple[str, bool]:
    """One caption of ``scene`` before junk and mismatch: ``(text, omitted)``.

    ``template`` forces a template id (the retrieval set uses distinct ones per image); otherwise
    ``knobs["paraphrase"]`` picks a random template or the fixed one. ``facts`` (a dict), if given, receives
    what the text states, without changing it: ``objects`` (the scene's object indices in the order the text
    names them; each named object's colour is stated), ``size`` and ``position`` (per named object, whether
    its size word / position phrase is stated) and ``relation`` (of the first named object to the second, or
    None). ``caption(..., facts=...)`` passes it through.
    """
    objs = scene["objects"]
    m = len(objs)
    omitted = m > 1 and d.random() < knobs["omit_rate"]
    paraphrase = knobs["paraphrase"]
    order = [0] if omitted else (d.sample(m, m) if paraphrase else list(range(m)))
    if template is None:
        if paraphrase:
            template = d.pick(_COUNT_FREE) if omitted else d.below(len(vocab.CAPTION_TEMPLATES))
        else:
            template = vocab.FIXED_TEMPLATE
    mentioned = [objs[i] for i in order]
    # positions of three objects make captions longer than the text context: at most two
    where = paraphrase and len(mentioned) <= 2
    records: list[dict] = [{} for _ in mentioned]
    phrases = [
        _object_phrase(o, d, knobs, detail=paraphrase, where=where, record=r) for o, r in zip(mentioned, records)
    ]
    bg_words = vocab.BACKGROUNDS_TABLE[vocab.BACKGROUNDS[scene["background"]]]
    bg = d.pick(bg_words) if paraphrase else bg_words[0]
    text = vocab.CAPTION_TEMPLATES[template].format(
        objs=_join(phrases, d, mentioned, paraphrase, record=facts), bg=bg, count=vocab.COUNT_WORDS[len(order) - 1]
    )
    if facts is not None:
        facts.update(objects=list(order), size=[r["size"] for r in records], position=[r["position"] for r in records])
    if paraphrase and d.random() < 0.3:  # alt text is often capitalised
        text = text[0].upper() + text[1:]
    return text, omitted


def _add_junk(text: str, d: Draws) -> str:
    for _ in range(1 + int(d.random() < 0.3)):
        junk, sep = d.pick(vocab.JUNK_PHRASES), d.pick([" ", " - ", " | ", ", "])
        text = f"{junk}{sep}{text}" if d.random() < 0.5 else f"{text}{sep}{junk}"
    return text


def caption(
    seed: int,
    index: int,
    knobs: dict[str, Any],
    scene: dict | None = None,
    allow_mismatch: bool = True,
    facts: dict[str, Any] | None = None,
) -> tuple[str, dict[str, int]]:
    """The alt-text caption of image ``index`` and its noise flags ``{mismatched, omitted, junk}``.

    ``scene`` is re-derived from ``(seed, index)`` if not given. ``facts`` (a dict), if given, receives what
    the caption states about ``scene`` (see ``describe``); when the caption is mismatched they are what the
    replaced caption would have stated, and the flag says so.
    """
    scene = sample_scene(seed, index, knobs) if scene is None else scene
    draws = Draws(seed, index, CAPTION_STREAM)
    text, omitted = describe(scene, draws, knobs, facts=facts)
    junk = draws.random() < knobs["junk_rate"]
    if junk:
        text = _add_junk(text, draws)
    mismatched = allow_mismatch and draws.random() < knobs["mismatch_rate"]
    if mismatched:
        # another image's caption, re-derived from its index: independent of n (prefix property)
        other = draws.below(2**31 - 1)
        other += other == index
        text, _ = caption(seed, other, knobs, allow_mismatch=False)
    return text, dict(mismatched=int(mismatched), omitted=int(omitted), junk=int(junk))


def summary(scene: dict[str, Any]) -> str:
    """One clean clause naming every object with canonical words: "a red star and a blue ring on a ...".

    This is the *oracle* summary (``World.summaries``): it is the true scene, every object, even when the caption
    is mismatched or omits objects, so it leaks ground truth. The fair stand-in for PyramidCLIP's T5 summariser
    reads the caption only: ``vlp_lib.papers.pyramidclip.summaries.summarize``.
    """
    phrases = [_article(f"{vocab.COLOURS[o['colour']]} {vocab.SHAPES[o['shape']]}") for o in scene["objects"]]
    objs = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + f" and {phrases[-1]}"
    return f"{objs} on a {vocab.BACKGROUNDS[scene['background']]} background"


def paraphrases(seed: int, index: int, knobs: dict[str, Any], k: int = 5) -> list[str]:
    """``k`` clean captions of image ``index`` from ``k`` distinct templates (no omission, junk or mismatch).

    The retrieval set (MS-COCO stand-in) uses them: five different descriptions of the true content.
    """
    clean = {**knobs, "omit_rate": 0.0, "paraphrase": True}
    scene = sample_scene(seed, index, knobs)
    d = Draws(seed, index, PARAPHRASE_STREAM)
    templates = d.sample(len(vocab.CAPTION_TEMPLATES), k)
    return [describe(scene, d, clean, template=t)[0] for t in templates]
