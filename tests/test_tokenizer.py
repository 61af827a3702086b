"""The word-level tokenizer of the generated world."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vlp_lib.data import tasks, vocab, world
from vlp_lib.data.tokenizer import DEFAULT_CONTEXT_LENGTH, WordTokenizer, world_tokenizer


def test_special_ids_and_eot_is_largest():
    tok = WordTokenizer(["red", "star", "a"], context_length=8)
    assert tok.vocab_size == 7 and tok.eot_id == tok.vocab_size - 1
    ids = tok("a red star")
    assert ids.dtype == torch.long and ids.shape == (1, 8)
    assert ids[0].tolist() == [2, 5, 3, 4, 6, 0, 0, 0]
    assert int(ids.max()) == tok.eot_id
    assert int(ids.argmax(-1)) == 4  # open_clip pools the text tower at argmax: the <eot>


def test_unknown_case_and_punctuation():
    tok = WordTokenizer(["red", "star"], context_length=6)
    assert torch.equal(tok("Red, STAR!"), tok("red star"))
    assert tok("blue star")[0, 1].item() == 1  # <unk>
    assert tok.decode(tok("blue star")[0]) == "<unk> star"


def test_truncation_keeps_eot():
    tok = WordTokenizer(["word"], context_length=5)
    ids = tok(["word " * 20, "word"])
    assert ids.shape == (2, 5)
    assert ids[0].tolist() == [2, 3, 3, 3, tok.eot_id]
    assert (ids.argmax(-1) == torch.tensor([4, 2])).all()


def test_batch_and_decode():
    tok = world_tokenizer()
    caps = ["a red star on a striped background", "IMG 2041 crimson ring"]
    ids = tok(caps)
    assert ids.shape == (2, tok.context_length) and tok.context_length == DEFAULT_CONTEXT_LENGTH
    assert tok.decode(ids[0]) == caps[0]
    assert tok.decode(ids[1].tolist()) == "img 2041 crimson ring"


def test_bad_arguments():
    with pytest.raises(ValueError, match="context_length"):
        WordTokenizer(["a"], context_length=1)
    with pytest.raises(ValueError, match="context_length"):
        WordTokenizer(["a"], context_length=0)
    with pytest.raises(ValueError, match="vocab"):
        WordTokenizer(["Red"])
    with pytest.raises(ValueError, match="vocab"):
        WordTokenizer(["red star"])


def test_world_words_are_all_known():
    tok = world_tokenizer()
    assert tok.vocab_size == len(vocab.vocabulary()) + 4
    w = world.generate(300, 1, cache=False)
    w2 = world.generate(100, 2, cache=False, junk_rate=1.0, synonym_rate=1.0, min_objects=2)
    texts = w.captions + w.summaries + w2.captions + list(vocab.DEFINITIONS.values())
    ids = tok(texts)
    assert (ids != 1).all(), "a caption, summary or definition word is unknown"
    assert tasks.task_words() <= set(tok.word_to_id)
    prompts = [t.format(c) for spec in tasks.TASKS.values() for t in spec["templates"] for c in spec["classnames"]]
    assert (tok(prompts) != 1).all()


def test_default_context_fits_99_percent_of_captions():
    knobs = world.check_knobs()  # the defaults: web-like captions
    captions = [world.caption(0, i, knobs)[0] for i in range(3000)]  # captions need no pixels
    lengths = np.array([len(vocab.words(c)) + 2 for c in captions])
    assert (lengths <= DEFAULT_CONTEXT_LENGTH).mean() >= 0.99
