"""The head-to-head chapter: its configs, its parameters refused before compute, the equal-seconds
calibration on hand-computed records, its claims judged on fake stored records, and the scorecard's lines."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vlp_lib import experiment, runs
from vlp_lib.book import lengths, lineup, report
from vlp_lib.papers.headtohead.book import chapter
from vlp_lib.papers.headtohead.book.chapter import CLIP, VARIANTS, Calibration, Row, Run

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "headtohead.ipynb"


@pytest.mark.parametrize("scale", ["smoke", "laptop", "paper"])
def test_every_variant_builds_a_valid_config_at_every_scale(scale):
    unit = chapter.unit_episodes(scale)
    sizes = chapter.CHAPTER_SCALES[scale]
    assert sizes["train_size"] % sizes["episode_size"] == 0 and sizes["episode_size"] % sizes["batch_size"] == 0
    for name, variant in VARIANTS.items():
        config = chapter.config(chapter.run_of(name, unit), scale, 0)
        assert config.method == variant.method
        assert chapter.trained_samples(config.to_dict()) == (
            unit * sizes["episode_size"] if variant.method != "icmlm" else (unit - unit // 2) * sizes["episode_size"]
        )
        # the common setting: one world, resolution, batch, lr and evaluation (a claim differs only in its idea)
        assert (config.train_size, config.train.batch_size, config.train.lr) == (
            sizes["train_size"],
            sizes["batch_size"],
            sizes["lr"],
        )
        assert list(config.eval.tasks) == chapter.EVAL_TASKS
        assert config.context_length == (lineup.CONTEXT_LENGTH if variant.text_tower else lineup.IMAGE_ONLY_CONTEXT)
        assert config.image_size == sizes["image_size"]
        if variant.method == "icmlm":  # its TP_Postag start: the other half of its samples
            init = config.method_args.init
            assert init.method == "tp" and chapter.trained_samples(init.to_dict()) == unit // 2 * sizes["episode_size"]
    chapter.check_plan(scale, [0], list(VARIANTS))


def test_rows_clip_at_its_own_seconds_is_its_equal_samples_row():
    assert Row(CLIP, "seconds", 1.0) == Row(CLIP) and Row("iclip", "seconds") != Row("iclip")
    assert chapter.resolve(Row("iclip", "seconds"), "smoke", None) is None  # not calibrated: not run
    assert chapter.resolve(Row("icmlm"), "laptop", None) == Run("icmlm", 5, 5)  # 10 episodes: 5 of TP, then 5


@pytest.mark.parametrize(
    "bad",
    [["nope"], ["clip", "clip"], [], [3], {"not": "a list"}, "dimefm"],
)
def test_bad_variants_are_refused_naming_the_parameter(bad):
    with pytest.raises(ValueError, match="variants"):
        chapter.check_variants(bad)


def test_variants_always_include_clip_in_book_order():
    # by default every variant but ICMLM (the budget: chapter.LEFT_OUT says why), which runs when asked for
    assert chapter.check_variants(None) == chapter.DEFAULT_VARIANTS == [v for v in VARIANTS if v != "icmlm"]
    assert "icmlm" in chapter.LEFT_OUT
    assert chapter.check_variants(["icmlm", "protoclip"]) == [CLIP, "protoclip", "icmlm"]
    assert chapter.check_variants("iclip,unicl") == [CLIP, "iclip", "unicl"]


@pytest.mark.parametrize("bad", [[0], [-1.0], [0.5, 0.5], ["x"], [True], [float("inf")], [], {"not": "a list"}])
def test_bad_time_factors_are_refused_naming_the_parameter(bad):
    with pytest.raises(ValueError, match="time_factors"):
        chapter.check_time_factors(bad)


def test_the_longer_length_is_not_a_curve_budget():
    # LONGER times CLIP's seconds is every variant's longer equal-seconds row, calibrated at that length
    with pytest.raises(ValueError, match="time_factors"):
        chapter.check_time_factors([0.5, float(chapter.LONGER)])


def test_time_factors_always_hold_one():
    assert chapter.check_time_factors([2, 0.25]) == [0.25, 1.0, 2.0]
    assert chapter.check_time_factors(None, "laptop") == sorted(chapter.CHAPTER_SCALES["laptop"]["time_factors"])


@pytest.mark.parametrize("bad", [["nope"], ["icmlm"], [], [3], {"not": "a list"}])
def test_bad_curve_variants_are_refused_naming_the_parameter(bad):
    with pytest.raises(ValueError, match="curve_variants"):
        chapter.check_curve_variants(bad, chapter.check_variants(None))


def test_curve_variants_default_to_clip_and_keep_book_order():
    variants = chapter.check_variants(None)
    assert chapter.check_curve_variants(None, variants) == [CLIP]
    assert chapter.check_curve_variants(["iclip", "clip"], variants) == [CLIP, "iclip"]


def _cells() -> tuple[str, str]:
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    index = next(i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", []))
    return "".join(cells[index]["source"]), "".join(cells[index + 1]["source"])


@pytest.mark.parametrize(
    "name, value", [("variants", ["clip", "nope"]), ("time_factors", [0.5, 0.0]), ("curve_variants", ["icmlm"])]
)
def test_the_notebook_refuses_bad_input_before_any_compute(name, value, monkeypatch):
    from vlp_lib.data import world

    def forbidden(*args, **kwargs):
        raise AssertionError("computed before validating")

    monkeypatch.setattr(world, "generate", forbidden)
    monkeypatch.setattr(experiment, "run", forbidden)
    params, checks = _cells()
    namespace: dict = {}
    exec(compile(params, "parameters", "exec"), namespace)
    namespace.update(scale="smoke", **{name: value})
    with pytest.raises(ValueError, match=name):
        exec(compile(checks, "checks", "exec"), namespace)


# --- the equal-seconds calibration, by hand --------------------------------------------------------------------------


def _record(variant: str, episodes: int, seconds: float, seed: int = 0, start: float = 0.0, **metrics) -> dict:
    config = chapter.config(chapter.run_of(variant, episodes), "laptop", seed)
    timings = {"training": seconds, "episode_start": start, "evaluation": 99.0, "setup": 50.0}
    return {"config": config.to_dict(), "timings": timings, "metrics": metrics}


def test_calibration_on_hand_computed_records():
    # laptop: episodes of 2,048 samples, equal samples = 10 episodes = 20,480 samples
    assert chapter.unit_episodes("laptop") == 10 and chapter.CHAPTER_SCALES["laptop"]["episode_size"] == 2_048
    clip = [lineup.variant_record(_record(CLIP, 10, s, seed)) for seed, s in enumerate((10.0, 12.0))]
    # ProtoCLIP: training 14 and 16 s plus 2 s of episode starts (K-Means, PBT) each: 16 + 18 -> mean 17 s
    proto = [lineup.variant_record(_record("protoclip", 10, s, seed, start=2.0)) for seed, s in enumerate((14.0, 16.0))]
    assert [r["samples"] for r in clip] == [20_480, 20_480] and proto[0]["seconds"] == 16.0
    # ICMLM: its TP_Postag start (5 episodes, 3 s) and itself (5 episodes, 19 s): 22 s for 20,480 samples
    icmlm = chapter.run_of("icmlm", 10)
    assert icmlm == Run("icmlm", 5, 5)
    own = _record("icmlm", 10, 19.0)
    start = {"config": chapter.config(Run("tp_postag", icmlm.init_episodes), "laptop", 0).to_dict(), "timings": {}}
    start["timings"] = {"training": 3.0}
    combined = lineup.variant_record(own, start)
    assert combined["samples"] == 20_480 and combined["seconds"] == 22.0
    calibration = chapter.calibrate({CLIP: clip, "protoclip": proto, "icmlm": [combined]})
    assert calibration.clip_seconds == pytest.approx(11.0)
    assert calibration.seconds_per_sample["protoclip"] == pytest.approx(17.0 / 20_480)
    assert calibration.relative_cost("protoclip") == pytest.approx(17.0 / 11.0)
    # 11 s fit 11 / 17 * 20,480 = 13,251.8 samples = 6.47 episodes -> 6; 22 s fit 26,503.5 = 12.94 -> 13
    assert calibration.episodes("protoclip", 1.0, 2_048) == 6
    assert calibration.episodes("protoclip", 2.0, 2_048) == 13
    # ICMLM: 11 s fit 11 / 22 * 20,480 = 10,240 samples = 5 episodes: 2 of TP_Postag, then 3 of ICMLM
    assert calibration.episodes("icmlm", 1.0, 2_048) == 5
    assert chapter.resolve(Row("icmlm", "seconds"), "laptop", calibration) == Run("icmlm", 3, 2)
    assert chapter.resolve(Row("protoclip", "seconds", 2.0), "laptop", calibration) == Run("protoclip", 13)
    assert chapter.resolve(Row(CLIP, "seconds"), "laptop", calibration) == Run(CLIP, 10)  # its own run, reused
    # CLIP itself at 1x lands on its equal-samples amount, at 0.5x on half of it
    assert calibration.episodes(CLIP, 1.0, 2_048) == 10 and calibration.episodes(CLIP, 0.5, 2_048) == 5
    # a tiny budget still trains one episode (ICMLM: one of each)
    assert Calibration({"iclip": 1.0, CLIP: 1.0}, 1.0).episodes("iclip", 0.01, 2_048) == 1
    assert chapter.resolve(Row("icmlm", "seconds", 0.01), "laptop", calibration) == Run("icmlm", 1, 1)
    with pytest.raises(ValueError, match="CLIP"):
        chapter.calibrate({"protoclip": proto})


def test_the_stored_calibration_chooses_the_equal_seconds_runs(tmp_path, monkeypatch):
    # measured once and stored: a second measurement (a re-make's: other seconds) leaves the runs as they were, and
    # only the drift table shows it; a variant the record lacks is added to it
    monkeypatch.setenv("VLP_RESULTS_DIR", str(tmp_path))
    seeds = [0, 1]
    first = Calibration({CLIP: 1e-3, "protoclip": 1.5e-3}, 20.0)
    assert chapter.saved_calibration("smoke", seeds) is None
    assert chapter.settle_calibration("smoke", seeds, first) == first
    assert chapter.saved_calibration("smoke", seeds) == first
    again = Calibration({CLIP: 1.1e-3, "protoclip": 1.2e-3}, 22.0)
    assert chapter.settle_calibration("smoke", seeds, again) == first
    assert chapter.stored_calibration("smoke", seeds) == first
    drift = chapter.calibration_drift(first, again)
    assert drift.loc["CLIP's seconds (the target)", "drift"] == "+10.0%"
    assert drift.loc["ProtoCLIP: cost per step (x CLIP)", ["stored", "measured now", "drift"]].tolist() == [
        "1.50",
        "1.09",
        "-27.3%",
    ]
    wider = Calibration({CLIP: 1.1e-3, "protoclip": 1.2e-3, "unicl": 1.3e-3}, 22.0)
    settled = chapter.settle_calibration("smoke", seeds, wider)
    assert settled.seconds_per_sample == {CLIP: 1e-3, "protoclip": 1.5e-3, "unicl": 1.3e-3}
    assert settled.clip_seconds == 20.0 and chapter.saved_calibration("smoke", seeds) == settled
    # a record of other code still chooses the runs (a change of code re-makes them, it does not choose others)
    path = runs.record_path(chapter.CALIBRATION_KIND, chapter._calibration_key("smoke", seeds, chapter.WORLD))
    record = json.loads(path.read_text())
    record["code_fingerprint"] = "0" * 16
    record["checksum"] = runs.checksum(record)
    path.write_text(json.dumps(record))
    assert not runs.current(record) and chapter.saved_calibration("smoke", seeds) == settled
    # other seeds or other data: another record
    assert chapter.saved_calibration("smoke", [0, 1, 2]) is None
    assert chapter.saved_calibration("smoke", seeds, chapter.Data(train_data="pairs.csv")) is None


# --- claims on fake stored records ---------------------------------------------------------------------------------

GAINS = {CLIP: 0.0, "protoclip": 0.05, "pyramidclip": -0.05, "unicl": 0.0}  # avg3/linear over CLIP; others +0.02
RATES = {"pyramidclip": 2.0, "tp_postag": 0.5}  # seconds per sample relative to CLIP; others 1


def _variant_of(config: dict) -> str:
    method, kwargs = config["method"], config["method_kwargs"]
    if method == "protoclip":
        return "protoclip" if kwargs.get("external_teacher") == "minilm" else "protoclip_no_teacher"
    if method == "pyramidclip":
        return "pyramidclip_no_roi" if "weights" in kwargs else "pyramidclip"
    return {"clip": CLIP, "iclip": "iclip", "unicl": "unicl", "tp": "tp_postag", "icmlm": "icmlm"}[method]


def _fake_store(monkeypatch):
    """``experiment.stored`` answering every config of the chapter from its variant, seed and samples: a seed's
    common luck, the variant's gain, a little noise of its own, and accuracy growing with the samples trained."""
    names = list(VARIANTS)

    def fake(config):
        d = config.to_dict()
        name, seed = _variant_of(d), d["seed"]
        samples = chapter.trained_samples(d)
        noise = np.random.default_rng([seed, names.index(name)]).normal(0.0, 0.002)
        linear = 0.3 + GAINS.get(name, 0.02) + noise + 0.0001 * samples / 64 + 0.01 * np.sin(3.0 * seed)
        seconds = RATES.get(name, 1.0) * samples / 100
        return {"config": d, "metrics": {chapter.LINEAR: linear}, "timings": {"training": seconds}}

    monkeypatch.setattr(chapter.experiment, "stored", fake)


def test_claims_are_judged_on_stored_records(monkeypatch):
    seeds = [0, 1, 2, 3, 4]
    _fake_store(monkeypatch)
    lines = {line["id"]: line for line in chapter.claims("smoke", seeds)}
    assert set(lines) == {c.id for c in chapter.CLAIMS} and len(lines) == 2 * (len(chapter.DEFAULT_VARIANTS) - 1)
    assert lines["H_protoclip_samples"]["verdict"] == "reproduced"
    assert lines["H_pyramidclip_samples"]["verdict"] == "opposite"
    assert lines["H_unicl_samples"]["verdict"] == "no effect"
    assert all(line["seeds"] == 5 and line["paper"] == "Head to head" for line in lines.values())
    # PyramidCLIP costs twice CLIP per sample: at CLIP's seconds it trains half the samples (smoke: 1 episode of 2)
    calibration = chapter.stored_calibration("smoke", seeds)
    assert calibration is not None and calibration.relative_cost("pyramidclip") == pytest.approx(2.0)
    assert chapter.resolve(Row("pyramidclip", "seconds"), "smoke", calibration) == Run("pyramidclip", 1)
    assert chapter.resolve(Row("tp_postag", "seconds"), "smoke", calibration) == Run("tp_postag", 4)
    assert lines["H_pyramidclip_seconds"]["verdict"] == "opposite"
    # the notebook's table judges the same records the same way
    rows = {row for claim in chapter.CLAIMS for row in claim.rows()}
    results = {row: chapter.stored(row, "smoke", seeds, calibration) for row in rows}
    table = chapter.claims_table(results, notebook="headtohead")
    assert table.loc["H_protoclip_samples", "verdict"] == "reproduced"
    # the page states the words at 5% FDR (here over the page's own claims: the fake store has no other chapter's)
    judged = report.with_fdr(table.reset_index().assign(primary=False)).set_index("id")
    assert judged.loc["H_protoclip_samples", "verdict_fdr"] in ("reproduced", "inconclusive")
    summary_line = chapter.verdict_summary(judged.assign(verdict_fdr="reproduced"), "samples")
    assert "above CLIP: ProtoCLIP" in summary_line
    assert "undecided at 5% FDR: ProtoCLIP" in chapter.verdict_summary(
        judged.assign(verdict_fdr="inconclusive"), "samples"
    )
    summary = chapter.summary_table(results, calibration, list(VARIANTS), claims=judged)
    assert summary.loc["PyramidCLIP", "cost per step (x CLIP)"] == "2.00"
    # the summary's gain at equal samples is the claim's: its mean, its (pooled) interval and its word at 5% FDR
    line = judged.loc["H_protoclip_samples"]
    assert summary.loc["ProtoCLIP", "gain at equal samples (pp)"] == (
        f"{line['book_value']} {line['interval']}: {report.verdict_text(line['verdict_fdr'], line['verdict'])}"
    )
    assert chapter.metric_table(results, list(VARIANTS), chapter.ZERO_SHOT).loc["TP_Postag (K = 50)"].iloc[0] == "—"
    # the curve: each variant's equal-samples point and its point at CLIP's seconds, one point where they coincide
    results.update({row: chapter.stored(row, "smoke", seeds, calibration) for row in [Row(CLIP, "seconds", 2.0)]})
    points = chapter.curve_points(results, chapter.DEFAULT_VARIANTS, [0.5, 1.0, 2.0]).set_index(["variant", "budget"])
    assert set(points.loc["CLIP"].index) == {"equal samples", "2x CLIP's seconds"}
    assert set(points.loc["PyramidCLIP"].index) == {"equal samples", "equal seconds"}
    assert set(points.loc["UniCL (r = 0.5)"].index) == {"equal samples"}  # its cost is CLIP's: one run
    assert (
        points.loc[("PyramidCLIP", "equal samples"), "samples"]
        == 2 * points.loc[("PyramidCLIP", "equal seconds"), "samples"]
    )


def test_every_claim_is_judged_again_at_the_longer_length(monkeypatch, tmp_path):
    seeds = [0, 1, 2, 3, 4]
    _fake_store(monkeypatch)
    # the longer runs on the first longer_seeds of the seeds (three at laptop scale; here five, to decide)
    monkeypatch.setitem(chapter.CHAPTER_SCALES["smoke"], "longer_seeds", 5)
    assert chapter.longer_seeds("laptop", seeds) == [0, 1, 2]
    lines = {line["id"]: line for line in chapter.claims("smoke", seeds)}
    assert set(chapter.LONGER_IDS) == set(lines) and chapter.LONGER >= 3
    assert set(chapter.LONGER_SAMPLES_IDS) == {i for i in lines if i.endswith("_samples")}
    assert lines["H_protoclip_samples"]["verdict_longer"].startswith(f"at {chapter.LONGER}x: reproduced (")
    assert lines["H_protoclip_samples"]["verdict_longer"].endswith("; holds")
    # the equal-seconds claims too, at LONGER times CLIP's seconds (the fake store's ProtoCLIP costs what CLIP does)
    assert lines["H_protoclip_seconds"]["verdict_longer"].startswith(f"at {chapter.LONGER}x: reproduced (")
    assert "(at 1.00x the reference's seconds)" in lines["H_protoclip_seconds"]["verdict_longer"]
    # the longer rows are the same variants at LONGER times the equal samples, the reference CLIP's
    assert chapter.longer(Row(CLIP)) == Row(CLIP, "samples", float(chapter.LONGER))
    assert chapter.resolve(chapter.longer(Row("protoclip")), "laptop", None) == Run("protoclip", 10 * chapter.LONGER)
    assert chapter.longer(Row("protoclip", "seconds")) == Row("protoclip", "seconds", float(chapter.LONGER))
    with pytest.raises(ValueError, match="book's length"):
        chapter.longer(Row(CLIP, "seconds", 2.0))
    # a row at LONGER times CLIP's seconds reads the calibration of that length, whose target is CLIP's seconds there:
    # PyramidCLIP at twice CLIP's cost trains half of CLIP's 40 episodes
    long_calibration = Calibration({CLIP: 1e-3, "pyramidclip": 2e-3}, chapter.LONGER * 20_480 * 1e-3)
    assert chapter.resolve(Row("pyramidclip", "seconds", 4.0), "laptop", long_calibration) == Run("pyramidclip", 20)
    assert chapter.longer_calibration("smoke", seeds).relative_cost("pyramidclip") == pytest.approx(2.0)
    # the page's table, sentence and figure read the same lines
    rows = {row for claim in chapter.compared_claims() for row in claim.rows()}
    calibration = chapter.stored_calibration("smoke", seeds)
    results = {row: chapter.stored(row, "smoke", seeds, calibration) for row in rows}
    claims = chapter.claims_table(results, notebook="headtohead").assign(verdict_fdr=lambda t: t["verdict"])
    table = chapter.lengths_table(claims)
    assert list(table.index) == [chapter.variant_label(i) for i in chapter.LONGER_SAMPLES_IDS]
    assert list(chapter.lengths_table(claims, "seconds").index) == list(table.index)
    assert (
        table.loc["ProtoCLIP", f"at {chapter.LONGER}x: verdict (value); trend"]
        == (lines["H_protoclip_samples"]["verdict_longer"])
    )
    summary = chapter.trend_summary(claims)
    assert summary.startswith("reproduced: ProtoCLIP (+") and "trend: holds (5)" in summary
    note = chapter.headline_note(claims.reset_index())
    assert note.startswith(f"Trained {chapter.LONGER}x as long (seeds 0, 1, 2; ") and summary in note
    assert f"At {chapter.LONGER}x CLIP's seconds: {chapter.trend_summary(claims, 'seconds')}." in note
    assert chapter.headline_note(claims.reset_index().assign(verdict_longer="")) == ""
    assert "not checked" in chapter.learned_text(results)  # the fake store has no untrained networks
    long_lines = chapter.longer_lines(results)
    assert long_lines.loc["H_protoclip_samples", "verdict"] == "reproduced"
    assert long_lines.loc["H_protoclip_samples", "book_value"] in lines["H_protoclip_samples"]["verdict_longer"]
    fig = chapter.lengths_figure(claims, long_lines, tmp_path / "two_lengths.png")
    assert (tmp_path / "two_lengths.png").exists()
    assert len(fig.axes[0].get_yticklabels()) == len(chapter.LONGER_SAMPLES_IDS)
    # the longer equal-seconds runs beside CLIP's longer runs: the ratio read against CLIP at LONGER times the samples
    calibration = chapter.longer_calibration("smoke", seeds)
    table = chapter.seconds_table(results, calibration, list(chapter.DEFAULT_VARIANTS), factor=chapter.LONGER)
    assert table.loc[("ProtoCLIP", "equal seconds"), "x CLIP's seconds"] == "1.00"
    assert table.loc[("ProtoCLIP", "equal seconds"), "within ±5%"] == "yes"
    # the longer equal-samples runs: no ratio (another session's seconds); the sentences on the ratios and the costs
    assert table.loc[("ProtoCLIP", "equal samples"), "x CLIP's seconds"] == ""
    ratios = chapter.ratios_sentence(results, list(chapter.DEFAULT_VARIANTS), chapter.LONGER)
    assert ratios.startswith("7 of 7 variants' runs took CLIP's seconds within ±5% (ProtoCLIP 1.00, ")
    measured = chapter.achieved_calibration(results, list(chapter.DEFAULT_VARIANTS), chapter.LONGER)
    shift = chapter.cost_shift(measured, calibration, None)
    assert shift.startswith(
        "the pilot missed the variants' costs per step both ways: against CLIP's runs, their runs came out +0% to +0% off"
    )
    assert "Each against its own pilot run, in seconds per sample, CLIP's runs took" in shift


def test_the_longer_calibration_times_a_trial_then_a_pilot(tmp_path, monkeypatch):
    # real training at smoke scale: the trial trains each variant trial_rounds times for TRIAL_EPISODES episodes, in turn
    monkeypatch.setenv("VLP_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("VLP_CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    order = []
    timed = chapter._timed_training
    monkeypatch.setattr(chapter, "_timed_training", lambda c: order.append(c.method) or timed(c))
    trial = chapter.trial_calibration("smoke", 0, [CLIP, "tp_postag"], progress=False)
    assert order == ["clip", "tp"] * chapter.CHAPTER_SCALES["smoke"]["trial_rounds"]
    assert chapter.CHAPTER_SCALES["laptop"]["trial_rounds"] == chapter.TRIAL_ROUNDS == 3
    assert all(s > 0 for s in trial.seconds_per_sample.values())
    # its target: CLIP's seconds at LONGER times the equal samples, by the same timing
    unit_samples = chapter.unit_episodes("smoke") * chapter.CHAPTER_SCALES["smoke"]["episode_size"]
    assert trial.clip_seconds == pytest.approx(chapter.LONGER * unit_samples * trial.seconds_per_sample[CLIP])
    assert not any((tmp_path / "results").rglob("*.json"))  # timed, not stored: no run record
    # the pilot: CLIP at LONGER times the samples and each variant at the trial's budget, once each, on one seed;
    # their seconds per sample are the calibration (timings made up here: PyramidCLIP 2.5 times CLIP per sample)
    trial = Calibration({CLIP: 1e-3, "pyramidclip": 2e-3}, chapter.LONGER * unit_samples * 1e-3)
    rate = {"clip": 1e-3, "pyramidclip": 2.5e-3}
    runs_timed = []

    def fake(c):
        samples = chapter.trained_samples(c.to_dict())
        runs_timed.append((c.method, samples, c.seed))
        return rate[c.method] * samples

    monkeypatch.setattr(chapter, "_timed_training", fake)
    pilot = chapter.pilot_calibration("smoke", 1, trial, [CLIP, "pyramidclip"], progress=False)
    episode = chapter.CHAPTER_SCALES["smoke"]["episode_size"]
    clip_samples = chapter.LONGER * unit_samples
    assert runs_timed == [("clip", clip_samples, 1), ("pyramidclip", clip_samples // 2 // episode * episode, 1)]
    assert pilot.clip_seconds == pytest.approx(1e-3 * clip_samples)
    assert pilot.relative_cost("pyramidclip") == pytest.approx(2.5)
    for bad in ([CLIP, "icmlm"], ["tp_postag"]):
        with pytest.raises(ValueError, match="CLIP and no ICMLM"):
            chapter.trial_calibration("smoke", 0, bad, progress=False)
        with pytest.raises(ValueError, match="CLIP and no ICMLM"):
            chapter.pilot_calibration("smoke", 0, trial, bad, progress=False)
    # stored at the longer length under its own key; the book's length keeps its first one
    chapter.save_calibration("smoke", [0], pilot, length=chapter.LONGER)
    assert chapter.saved_calibration("smoke", [0], length=chapter.LONGER) == pilot
    assert chapter.saved_calibration("smoke", [0]) is None
    assert "length" not in chapter._calibration_key("smoke", [0], chapter.WORLD)
    # with the trial that set the pilot's budgets, and how far it fell short
    chapter.save_calibration("smoke", [0], pilot, length=chapter.LONGER, trial=trial)
    assert chapter.saved_trial("smoke", [0]) == trial and chapter.saved_trial("smoke", [1]) is None
    assert chapter.trial_gap(trial, pilot) == (
        "it put every variant 20% cheaper relative to CLIP than their pilot runs took "
        "(PyramidCLIP 2.00 against 2.50 times CLIP per step)"
    )


def test_rows_are_made_seed_by_seed(monkeypatch):
    # every row of a seed, then the next seed: a slower hour of the machine falls on both sides of a comparison
    made = []
    monkeypatch.setattr(
        chapter, "_records", lambda run, scale, seeds, **kw: made.append((run.variant, list(seeds))) or [{}]
    )
    chapter.run_rows([Row(CLIP), Row("protoclip")], "smoke", [0, 1], progress=False)
    assert made == [(CLIP, [0]), ("protoclip", [0]), (CLIP, [1]), ("protoclip", [1])]


def test_runs_outside_five_percent_are_calibrated_again_from_themselves_and_made_again_once(tmp_path, monkeypatch):
    monkeypatch.setenv("VLP_RESULTS_DIR", str(tmp_path / "results"))
    episode = chapter.CHAPTER_SCALES["smoke"]["episode_size"]
    unit = chapter.unit_episodes("smoke") * episode  # CLIP's samples at the book's length

    def runs_of(samples: int, seconds: float) -> list[dict]:
        return [{"samples": samples, "seconds": seconds} for _ in (0, 1)]

    # the first round: PyramidCLIP's half of CLIP's samples took 0.62 of its seconds, UniCL's run CLIP's seconds
    first = Calibration({CLIP: 0.01, "pyramidclip": 0.02, "unicl": 0.01}, 0.01 * unit)
    results = {
        Row(CLIP): runs_of(unit, 0.01 * unit),
        Row("pyramidclip", "seconds"): runs_of(unit // 2, 0.00625 * unit),
        Row("unicl", "seconds"): runs_of(unit, 0.01 * unit),
    }
    made, discarded = [], []
    monkeypatch.setattr(
        chapter, "_records", lambda run, scale, seeds, **kw: made.append((run, list(seeds))) or [{"made": True}]
    )
    monkeypatch.setattr(
        chapter.runs, "discard", lambda kind, config: discarded.append((config["method"], config["seed"]))
    )
    monkeypatch.setattr(chapter.experiment, "stored", lambda config: None)  # no CLIP run stored to compare with
    variants = [CLIP, "pyramidclip", "unicl"]
    remade, corrected = chapter.correct_seconds(results, "smoke", [0, 1], variants, first, progress=False)
    # the calibration the runs measured: PyramidCLIP at 1.25 times CLIP per sample, so 0.8 of CLIP's samples
    assert corrected == chapter.achieved_calibration(results, variants)
    assert corrected.relative_cost("pyramidclip") == pytest.approx(1.25) and corrected.clip_seconds == 0.01 * unit
    assert chapter.saved_calibration("smoke", [0, 1]) == corrected
    stored_first = chapter.saved_first("smoke", [0, 1])
    assert stored_first is not None and stored_first.calibration == first
    assert stored_first.ratios == pytest.approx({"pyramidclip": 0.625, "unicl": 1.0})
    # every equal-seconds row and CLIP's made again, seed by seed, none loaded: the stored runs discarded first
    pyramid = chapter.resolve(Row("pyramidclip", "seconds"), "smoke", corrected)
    assert pyramid == Run("pyramidclip", round(0.8 * unit / episode))
    assert [(run.variant, seeds) for run, seeds in made] == [
        (v, [s]) for s in (0, 1) for v in (CLIP, "pyramidclip", "unicl")
    ]
    assert sorted(discarded) == sorted((m, s) for m in ("clip", "pyramidclip", "unicl") for s in (0, 1))
    assert set(remade) == {Row(CLIP), Row("pyramidclip", "seconds"), Row("unicl", "seconds")}
    assert chapter.first_calibration("smoke", [0, 1]) == first
    assert chapter.first_ratios_sentence(stored_first) == (
        "1 of 2 variants' first runs took CLIP's seconds within ±5% (UniCL (r = 0.5) 1.00); the other 1 took 0.62 "
        "times them (PyramidCLIP 0.62)"
    )
    remade_results = {**results, **{row: runs_of(unit, 0.01 * unit) for row in remade}}
    text = chapter.correction_text(stored_first, remade_results, variants, corrected, "smoke")
    assert text.startswith("By it, 1 of 2 variants' first runs took") and (
        "After it, 2 of 2 variants' runs took CLIP's seconds within ±5% (PyramidCLIP 1.00, UniCL (r = 0.5) 1.00)."
        in text
    )
    # UniCL trained the same 2 episodes in both rounds; CLIP's runs took what they took before
    assert text.endswith(
        "took 1.3 s in the first round and 1.3 s in the second (+0%); the variants that trained the same episodes in "
        "both rounds took UniCL (r = 0.5) 1.3 then 1.3 s, so their ratios moved with CLIP's seconds. Against the "
        "target (CLIP's first-round seconds) 2 of 2 variants' runs took within ±5% of it."
    )
    # CLIP's runs a fifth slower in the second round: the variants' ratios fall with it, not their seconds
    slower = {**remade_results, Row(CLIP): runs_of(unit, 0.012 * unit)}
    assert chapter.correction_text(stored_first, slower, variants, corrected, "smoke").endswith(
        "(+20%); the variants that trained the same episodes in both rounds took UniCL (r = 0.5) 1.3 then 1.3 s, so "
        "their ratios moved with CLIP's seconds. Against the target (CLIP's first-round seconds) 2 of 2 variants' "
        "runs took within ±5% of it. CLIP's own timing moved by more than the rule's window between two sessions, and "
        "the rule reads the seconds beside it."
    )
    assert chapter.miss_side(slower, variants) == (
        "Every run outside the window had fewer seconds than CLIP's (0.83 times them): a gain there is the variant's "
        "despite them, a loss may be those seconds'."
    )
    assert chapter.miss_side(remade_results, variants) == ""
    assert chapter.costs_against(corrected, first) == (
        "-38% to +0% of the pilot's (PyramidCLIP 1.25 against 2.00 times CLIP per step)"  # the first is the dearest
    )
    assert chapter.correction_text(None, remade_results, variants, first, "smoke").endswith(
        "no second round was made (the rule "
        "makes one only where a run missed by more than 5%, in the session that measured the calibration)."
    )
    assert "left out" in chapter.drift_note(stored_first) and "the drift" in chapter.drift_note(None)
    # whole episodes: 0.8 of CLIP's 2 episodes rounds to 2, at 1.25 of its seconds by the calibration
    assert chapter.episode_misses(corrected, "smoke", variants) == (
        "By the calibration its runs follow, whole episodes cannot come within ±5% of the target for 1 variant (the "
        "nearest count, and its seconds over the target: PyramidCLIP: 2 episodes, 1.25)."
    )
    assert chapter.episode_misses(first, "smoke", variants).startswith("By the calibration its runs follow, every")
    # CLIP's runs made again must train the numbers of the runs they replace (only their seconds are new)
    monkeypatch.setattr(chapter.experiment, "stored", lambda config: {"metrics": {"a": 1.0, "train_samples_per_s": 9}})
    monkeypatch.setattr(
        chapter, "_records", lambda run, scale, seeds, **kw: [{"metrics": {"a": 1.0, "train_samples_per_s": 7}}]
    )
    assert chapter._metrics({"metrics": {"a": 1.0, "train_samples_per_s": 7}}) == {"a": 1.0}
    chapter.correct_seconds(results, "smoke", [0, 3], variants, first, progress=False)
    monkeypatch.setattr(chapter, "_records", lambda run, scale, seeds, **kw: [{"metrics": {"a": 0.5}}])
    with pytest.raises(RuntimeError, match="trained other numbers"):
        chapter.correct_seconds(results, "smoke", [0, 4], variants, first, progress=False)
    # once only: a second round is refused, whatever the new ratios
    with pytest.raises(ValueError, match="corrected once already"):
        chapter.correct_seconds(results, "smoke", [0, 1], variants, corrected, progress=False)
    # within ±5% everywhere: nothing stored, nothing made (another seed list is another record)
    made.clear()
    inside = {**results, Row("pyramidclip", "seconds"): runs_of(unit // 2, 0.0102 * unit)}
    assert chapter.correct_seconds(inside, "smoke", [0, 2], variants, first, progress=False) == ({}, first)
    assert made == [] and chapter.saved_calibration("smoke", [0, 2]) is None
    # a smoke run's seconds measure nothing: the chapter corrects at laptop and paper scale only
    assert (
        not chapter.CHAPTER_SCALES["smoke"]["correct_seconds"] and chapter.CHAPTER_SCALES["laptop"]["correct_seconds"]
    )


def test_an_equal_seconds_claim_is_judged_only_within_five_percent(monkeypatch):
    # PyramidCLIP at 2.6 times CLIP per sample: CLIP's 2 episodes buy it 1 (0.77, rounded), which takes 1.3 times
    # CLIP's seconds: outside the rule's 5%, so not judged and out of the tested claims (and of the FDR family)
    monkeypatch.setitem(RATES, "pyramidclip", 2.6)
    _fake_store(monkeypatch)
    lines = {line["id"]: line for line in chapter.claims("smoke", [0, 1, 2, 3, 4])}
    line = lines["H_pyramidclip_seconds"]
    assert line["verdict"] == report.UNEQUAL_SECONDS and np.isnan(line["p"])
    assert line["book_value"].endswith("(at 1.30x the reference's seconds)")
    assert lines["H_protoclip_seconds"]["book_value"].endswith("(at 1.00x the reference's seconds)")
    assert lines["H_protoclip_seconds"]["verdict"] == "reproduced"
    card = report.with_fdr(pd.DataFrame(list(lines.values())).assign(primary=False))
    assert "H_pyramidclip_seconds" not in set(report.tested_claims(card)["id"])
    assert "not judged (seconds more than 5% apart): PyramidCLIP" in chapter.verdict_summary(
        card.set_index("id"), "seconds"
    )
    seconds = {row: chapter.stored(row, "smoke", [0, 1]) for row in (Row(CLIP), Row("pyramidclip", "seconds"))}
    calibration = chapter.stored_calibration("smoke", [0, 1])
    table = chapter.seconds_table(seconds, calibration, [CLIP, "pyramidclip"])
    assert table.loc[("PyramidCLIP", "equal seconds"), "x CLIP's seconds"] == "1.30"
    assert table.loc[("PyramidCLIP", "equal seconds"), "within ±5%"] == "no"
    assert chapter.ratios_sentence(seconds, [CLIP, "pyramidclip"]) == (
        "0 of 1 variants' runs took CLIP's seconds within ±5%; the other 1 took 1.30 times them (PyramidCLIP 1.30)"
    )


def test_without_runs_every_claim_reaches_the_scorecard_as_not_run():
    card = report.scorecard("smoke")
    ours = card[card["paper"] == "Head to head"].set_index("id")
    assert set(ours.index) == {c.id for c in chapter.CLAIMS}
    assert (ours["verdict"] == "not run").all()
    assert all(
        rule in chapter.RULES
        for rule in [chapter.CALIBRATION_RULE, chapter.LONGER_SECONDS_RULE, chapter.CORRECTION_RULE]
    )


def test_the_page_says_when_clip_has_barely_learned(monkeypatch):
    monkeypatch.setattr(experiment, "stored", lambda config: None)  # no baseline in this store
    config = {"train_size": 1000, "epochs": 1, "batch_size": 100}  # no evaluation config: chance reads 0

    def results(linear):
        return {Row(CLIP): [{"config": config, "metrics": {chapter.LINEAR: v}} for v in linear]}

    low = chapter.learning_check(results([0.03, 0.05]), "laptop")
    assert "1,000 samples" in low and "4.0%" in low and "4.0 pp above chance" in low and "close to chance" in low
    high = chapter.learning_check(results([0.50, 0.52]), "laptop")
    assert (
        "51.0%" in high
        and "close to chance" not in high
        and "rank nothing" in high
        and "untrained" in high
        and "baseline" not in high
    )
    # with the baseline stored: the share of its gain over chance that CLIP reached here
    baseline = {"config": {**config, "task_train": 5000}, "metrics": {chapter.LINEAR: 0.60}}
    monkeypatch.setattr(experiment, "stored", lambda config: baseline)
    text = chapter.learning_check(results([0.14, 0.16]), "laptop")
    assert "60.0% (its probes train on 5,000 images" in text and "about 25% of the baseline's gain" in text


REAL = Path(__file__).resolve().parent / "data" / "openclipart"
REAL_TASK = f"folder:{REAL / 'categories'}"


def test_on_real_pairs_every_variant_that_can_run_gets_a_config_on_them(capsys):
    data = chapter.check_data(str(REAL / "pairs.csv"), [REAL_TASK])
    # class_data not given: iCLIP and UniCL take the folder task's train split, said in a note; the ROI terms
    # cannot run without boxes, and say why
    assert data.class_data == REAL_TASK and REAL_TASK in capsys.readouterr().out
    left_out = chapter.skipped(list(VARIANTS), data)
    assert set(left_out) == {"pyramidclip"} and all(left_out.values())
    # without a folder task (the world's avg3 tasks) there is no class data to take: iCLIP and UniCL are skipped,
    # naming the parameters that would give them some
    without = chapter.check_data(str(REAL / "pairs.csv"))
    reasons = chapter.skipped(list(VARIANTS), without)
    assert set(reasons) == {"pyramidclip", "iclip", "unicl"}
    assert "class_data" in reasons["iclip"] and "eval_tasks" in reasons["iclip"]
    sizes = chapter.sizes_on("smoke", data)
    assert sizes["train_size"] == 512 and sizes["episode_size"] % sizes["batch_size"] == 0
    for name in set(VARIANTS) - set(left_out):
        config = chapter.config(chapter.run_of(name, chapter.unit_episodes("smoke", data)), "smoke", 0, data)
        assert config.train_data == str(REAL / "pairs.csv") and list(config.eval.tasks) == [REAL_TASK]
        if config.method in ("iclip", "unicl"):  # the folder task's train split (its test split stays the test)
            assert config.method_args.class_data["folder"].endswith("categories/train")
    with_classes = chapter.check_data(str(REAL / "pairs.csv"), [REAL_TASK], f"folder:{REAL / 'categories' / 'train'}")
    assert set(chapter.skipped(list(VARIANTS), with_classes)) == {"pyramidclip"}


def test_on_real_pairs_the_claims_read_the_headline_task_or_say_why_not():
    data = lineup.check_data(str(REAL / "pairs.csv"), [REAL_TASK])  # no class data: iCLIP's claims cannot run
    claims = {c.id: c for c in chapter.claims_on("smoke", data)}
    assert claims["H_protoclip_samples"].metric == "categories/linear"
    assert "linear probe on categories" in claims["H_protoclip_samples"].text
    assert claims["H_iclip_samples"].kind == "not_run" and "class_data" in claims["H_iclip_samples"].reason
    assert chapter.claims_on("smoke") == chapter.CLAIMS  # the world's claims unchanged
    assert list(chapter.metrics_on("smoke", data)) == [
        "categories/linear",
        "categories/knn",
        "categories/zeroshot_top1",
    ]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (("missing.csv",), "train_data: no such CSV file"),
        (("world", ["folder:/nonexistent"]), "eval_tasks"),
        (("world", None, "cats"), "class_data must be"),
        (("world", None, "folder:/nonexistent"), "class_data"),
    ],
)
def test_bad_data_parameters_are_refused_before_compute(arguments, message):
    with pytest.raises(ValueError, match=message):
        chapter.check_data(*arguments)


def test_an_interval_is_read_without_the_equal_seconds_ratio():
    # the two-lengths figure reads a claim's mean and interval from its texts; an equal-seconds value's ratio is not one
    line = {"book_value": "-0.35 pp (at 0.83x the reference's seconds)", "interval": "[-2.00, +1.31] pp"}
    assert lengths.interval(line) == (-0.35, -2.0, 1.31)
    assert lengths.interval({"book_value": "+1.00 pp", "interval": ""}) is None
