"""The ProtoCLIP chapter's run plans and the scorecard (no training: records are written by hand)."""

import pandas as pd
import pytest

from vlp_lib import experiment, protoclip_chapter as chapter, report, runs
from vlp_lib.train import TrainConfig


def test_every_row_is_a_valid_config_at_every_scale():
    for scale in chapter.CHAPTER_SCALES:
        for row in chapter.TABLE3 + chapter.TABLE10 + chapter.TABLE11 + chapter.TABLE4:
            c = chapter.config(row, scale, seed=0)
            assert c["method"] == row.method and c["augmentation"] == row.augmentation
            assert c["epochs"] == row.units * chapter.CHAPTER_SCALES[scale]["unit_epochs"]


def test_tables_share_rows_so_shared_runs_are_computed_once():
    t3 = {r.label: r for r in chapter.TABLE3}
    assert chapter.TABLE10[-1] == t3["ProtoCLIP"] and chapter.TABLE10[2] == t3["ProtoCLIP w/o RoBERTa"]
    assert chapter.TABLE11[0] == t3["- w/o augmentation"] and chapter.TABLE11[2] == t3["ProtoCLIP w/o RoBERTa"]
    assert chapter.TABLE4[0] == t3["ProtoCLIP"]  # the components' full recipe is the benchmark's E/2 run
    # Fig. 7's largest point is the benchmark's CLIP at E
    n, row = chapter.data_size_rows("laptop")[-1]
    assert runs.config_hash(chapter.config(row, "laptop", 0, train_size=n)) == \
        runs.config_hash(chapter.config(chapter.TABLE4[1], "laptop", 0))


def test_laptop_episodes_fill_whole_batches():
    sizes = chapter.CHAPTER_SCALES["laptop"]
    for row in chapter.TABLE4:
        c = chapter.config(row, "laptop", 0)
        t = TrainConfig(epochs=c["epochs"], batch_size=c["batch_size"], episode_size=c["episode_size"])
        n = c["train_size"]
        assert t.n_episodes(n) * t.steps_per_episode(n) * t.batch_size == row.units * sizes["unit_epochs"] * n


def test_laptop_runs_train_4x_the_first_books_steps_with_a_short_warmup():
    """Issue: every run at least 4x the first laptop book's steps (E/2 = 40, E = 80 steps), warm-up <= 10%,
    and Fig. 7's subsets train whole epochs in whole batches."""
    for row in chapter.TABLE3 + chapter.TABLE10 + chapter.TABLE11 + chapter.TABLE4 + chapter.TABLE4_CONTROLS:
        c = chapter.config(row, "laptop", 0)
        t = TrainConfig(epochs=c["epochs"], batch_size=c["batch_size"], episode_size=c["episode_size"])
        steps = t.n_episodes(c["train_size"]) * t.steps_per_episode(c["train_size"])
        assert steps >= 4 * 80 * row.units and c["warmup_steps"] <= 0.1 * steps
        assert (set(c["eval_tasks"]) == set(experiment.DEFAULT_EVAL_TASKS)) == (row.units >= 1)
    for n, row in chapter.data_size_rows("laptop"):
        c = chapter.config(row, "laptop", 0, train_size=n)
        t = TrainConfig(epochs=c["epochs"], batch_size=c["batch_size"], episode_size=c["episode_size"])
        assert t.n_episodes(n) * t.steps_per_episode(n) * t.batch_size == c["epochs"] * n


def _record(row, seed, metrics, timings, scale="smoke"):
    config = chapter.config(row, scale, seed)
    runs.save(experiment.RUN_KIND, config, metrics, timings)
    return runs.load(experiment.RUN_KIND, config)


def test_seeds_parameter():
    assert chapter.resolve_seeds("laptop", None) == [0, 1, 2] and chapter.resolve_seeds("smoke", None) == [0, 1]
    assert chapter.resolve_seeds("laptop", [3, 4, 5]) == [3, 4, 5]
    assert chapter.resolve_seeds("laptop", "[0, 1]") == [0, 1] and chapter.resolve_seeds("laptop", "4,5") == [4, 5]
    assert chapter.resolve_seeds("laptop", 7) == [7]
    for bad in ([], "[0, 1", [0, 0], [1.5], [-1], "a,b"):
        with pytest.raises(ValueError, match="seeds"):
            chapter.resolve_seeds("laptop", bad)


def test_relative_epochs_and_stage_shares():
    clip_row, proto_row = chapter.TABLE4[1], chapter.TABLE4[2]  # both 1 unit = 2 epochs at smoke
    clip = [_record(clip_row, s, {"x": 0.0}, {"training": 10.0, "evaluation": 99.0}) for s in (0, 1)]
    proto = [_record(proto_row, s, {"x": 0.0}, {"training": 10.0, "episode_start": 4.0, "feature_extraction": 3.0,
                                                   "kmeans": 0.9, "pbt": 0.1}) for s in (0, 1)]
    assert chapter.relative_epochs(clip, clip) == pytest.approx(2.0)  # evaluation is not training time
    assert chapter.relative_epochs(proto, clip) == pytest.approx(2.8)
    shares = chapter.episode_shares(proto)
    assert shares["kmeans"] == pytest.approx(0.9 / 14) and sum(shares.values()) == pytest.approx(1.0)


def test_scorecard_without_runs_says_not_run():
    card = report.scorecard("smoke")
    assert list(card.columns) == ["paper", "claim", "paper_value", "book_value", "verdict"]
    assert len(card) >= 8 and set(card["verdict"]) == {"not run"}
    assert (card["paper"] == "ProtoCLIP").all() and card["claim"].is_unique


def test_scorecard_judges_stored_runs():
    t3 = {r.label: r for r in chapter.TABLE3}
    for seed, luck in zip((0, 1, 2), (0.0, 0.05, -0.03)):
        _record(t3["ProtoCLIP w/o RoBERTa"], seed, {"avg3/linear": 0.30 + luck}, {}, "laptop")
        _record(t3["- w/o PBT"], seed, {"avg3/linear": 0.25 + luck + 0.001 * seed}, {}, "laptop")
        _record(t3["- w/o soft target"], seed, {"avg3/linear": 0.30 + luck + 0.01 * (seed - 1)}, {}, "laptop")
    card = report.scorecard("laptop").set_index("claim")
    assert card.loc["PBT helps (Table III)", "verdict"] == "reproduced"
    assert card.loc["Soft targets help (Table III)", "verdict"] == "inconclusive"
    assert card.loc["The external teacher helps (Table III)", "verdict"] == "not run"


def test_row_table_reports_paired_differences():
    t3 = {r.label: r for r in chapter.TABLE3}
    results = {t3["ProtoCLIP w/o RoBERTa"]: [], t3["- w/o PBT"]: []}
    for seed, luck in zip((0, 1, 2), (0.0, 0.05, -0.03)):
        results[t3["ProtoCLIP w/o RoBERTa"]].append(
            _record(t3["ProtoCLIP w/o RoBERTa"], seed, {"avg3/linear": 0.30 + luck}, {}))
        results[t3["- w/o PBT"]].append(_record(t3["- w/o PBT"], seed, {"avg3/linear": 0.28 + luck}, {}))
    table = chapter.row_table(results, list(results), {"avg3/linear": "linear"},
                              reference=t3["ProtoCLIP w/o RoBERTa"], delta_metric="avg3/linear")
    assert isinstance(table, pd.DataFrame)
    assert table.loc["- w/o PBT", "Δ (pp, per seed)"] == "-2.00 ± 0.00"
    assert table.loc["- w/o PBT", "vs reference"] == "lower"
