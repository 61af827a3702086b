"""The Fig. 6 plan: validation before compute, equal training amounts, and the paired claims table."""

import numpy as np
import pytest

from vlp_lib.book import report
from vlp_lib.data import training
from vlp_lib.papers.protoclip.book import ablation
from vlp_lib.train import TrainConfig


@pytest.fixture
def no_compute(monkeypatch):
    """Fail loudly if planning generates data or builds a model."""
    import vlp_lib.data.world as world
    import vlp_lib.experiment as experiment

    def refuse(*args, **kwargs):
        raise AssertionError("compute started before validation finished")

    monkeypatch.setattr(world, "generate", refuse)
    monkeypatch.setattr(training, "generate", refuse, raising=False)
    monkeypatch.setattr(experiment, "create_model", refuse, raising=False)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(episode_size=0), "episode_size"),
        (dict(episode_size=-5), "episode_size"),
        (dict(episode_size=2.5), "episode_size"),
        (dict(episode_size=1000, k=1001), "k"),
        (dict(k=0), "k"),
        (dict(external_teacher="roberta"), "external_teacher"),
        (dict(target_temperature="warm"), "target_temperature"),
        (dict(target_temperature=float("nan")), "target_temperature"),
        (dict(sweeps=["episode_size", "batch_size"]), "sweeps"),
        (dict(images_per_prototype=0), "images_per_prototype"),
        (dict(total_samples=0), "total_samples"),
        (dict(seeds=[]), "seeds"),
        (dict(scale="huge"), "scale"),
    ],
)
def test_bad_parameters_are_refused_before_compute(no_compute, kwargs, name):
    with pytest.raises(ValueError, match=name):
        ablation.make_plan(**{"scale": "laptop", **kwargs})


def test_laptop_plan_trains_every_run_on_the_same_number_of_pairs(no_compute):
    plan = ablation.make_plan("laptop")
    configs = plan.unique_configs()
    assert len(configs) == 10 * 3  # base + 3 episode sizes + 2 + 2 + 2 new bars per sweep, 3 seeds
    amounts = set()
    for c in configs:
        t = TrainConfig(epochs=c.train.epochs, batch_size=c.train.batch_size, episode_size=c.train.episode_size)
        n = c.train_size
        amounts.add(t.n_episodes(n) * t.steps_per_episode(n) * t.batch_size)
        steps = t.n_episodes(n) * t.steps_per_episode(n)
        assert steps >= 4 * 40 and c.train.warmup_steps <= 0.1 * steps  # 4x the first book's 40 steps per run
        # the official InfoNCE-only first episode, except in the L_Proto-only episode-size sweep
        assert c.method_args.warmup_episodes == (0 if c.method_args.clip_weight == 0 else 1)
    assert amounts == {ablation.ABLATION_SCALES["laptop"]["total_samples"]}
    assert plan.base["episode_size"] == round(0.2 * plan.base["train_size"])


def test_a_larger_episode_grows_the_world_and_the_training_amount(no_compute):
    plan = ablation.make_plan("laptop", episode_size=200_000, sweeps=[])
    assert plan.base["train_size"] == 200_000 and plan.base["total_samples"] == 200_000
    (run,) = [r for r in plan.runs if r.config.seed == 0]
    assert run.config.method_args.k is None  # derived: 200,000 // 10 = 20,000 prototypes
    small = ablation.estimate_seconds(ablation.make_plan("laptop", sweeps=[]), rates=RATES)
    big = ablation.estimate_seconds(plan, rates=RATES)
    # 200,000 pairs of training against 20,480; the one episode is the InfoNCE-only warm-up, so it never clusters
    assert big["seconds"] > 5 * small["seconds"] and big["world_seconds"] > small["world_seconds"]


# Rates passed explicitly: no calibration (which builds a model) in planning tests.
RATES = {
    "train": 1_000.0,
    "extract": 3_000.0,
    "kmeans_products_per_s": 6.7e10,
    "kmeans_seeding_products_per_s": 1.5e10,
    "eval_s": 7.0,
    "world_images_per_s": 4_000.0,
}


def test_estimate_counts_training_extraction_kmeans_and_evaluation(no_compute):
    plan = ablation.make_plan("laptop", sweeps=[], seeds=[0])
    (c,) = plan.unique_configs()
    n, e = c.train_size, c.episode_size
    episodes = round(c.train.epochs * n / e)
    k, d = e // 10, c.method_args.head_dim
    clustering = episodes - 1  # the InfoNCE-only first episode does not cluster
    expected = (
        episodes * (e // c.train.batch_size) * c.train.batch_size / RATES["train"]
        + RATES["eval_s"]
        + clustering
        * (
            e / RATES["extract"]
            + e * k * 2 * d * 20 / RATES["kmeans_products_per_s"]
            + e * k * 2 * d / RATES["kmeans_seeding_products_per_s"]
        )
    )
    estimate = ablation.estimate_seconds(plan, rates=RATES)
    assert estimate["runs_to_do"] == 1 and estimate["seconds"] == pytest.approx(expected)
    assert estimate["world_seconds"] == pytest.approx(n / 4_000.0)
    # the "clip" teacher's CLIP run is counted once per seed, at the CLIP rate where one is given
    teacher = ablation.make_plan("laptop", sweeps=[], seeds=[0], external_teacher="clip")
    with_clip = ablation.estimate_seconds(teacher, rates={**RATES, "clip_train": 2_000.0})
    clip_seconds = c.train.epochs * n / 2_000.0 + RATES["eval_s"]
    (tc,) = teacher.unique_configs()
    assert with_clip["seconds"] == pytest.approx(ablation.run_seconds(tc, RATES) + clip_seconds)


def test_calibration_measures_this_machine_once_per_process():
    """Real code on a tiny smoke run: every rate is positive and finite, and a second call is the cached one."""
    plan = ablation.make_plan("smoke", sweeps=[], seeds=[0])
    (c,) = plan.unique_configs()
    rates = ablation.calibrate_rates(c, steps=2, evaluation=False)
    assert set(rates) == {
        "world_images_per_s",
        "train",
        "extract",
        "kmeans_products_per_s",
        "kmeans_seeding_products_per_s",
        "eval_s",
    }
    assert all(np.isfinite(v) and v > 0 for k, v in rates.items() if k != "eval_s") and rates["eval_s"] == 0.0
    assert ablation.calibrate_rates(c, steps=2, evaluation=False) == rates
    estimate = ablation.estimate_seconds(plan, rates=rates)
    assert estimate["seconds"] > 0 and estimate["runs_to_do"] == 1


def _fake_results(plan, effect):
    """Records whose metric is a per-seed offset (shared by all settings) plus ``effect[(sweep, value)]``."""
    out = []
    for run in plan.runs:
        seed = run.config.seed
        value = (
            0.2 + 0.05 * seed + effect.get((run.sweep, run.value), 0.0) + 0.001 * np.sin(7 * seed + len(str(run.value)))
        )
        out.append((run, {"metrics": {"avg3/linear": value}}))
    return out


def test_claims_are_judged_on_per_seed_differences(no_compute):
    plan = ablation.make_plan("laptop")
    n = plan.base["train_size"]
    effect = {
        ("target_temperature", 0.01): 0.02,
        ("external_teacher", "minilm"): -0.02,
        ("episode_size", plan.base["episode_size"]): 0.0,
    }
    results = _fake_results(plan, effect)
    # the bars' stds are dominated by the 5-point seed offsets, the paired differences are not
    bars = ablation.sweep_table(results)
    assert (bars["std"] > 0.04).all()
    claims = ablation.claims_table(results, plan).set_index("claim")
    soft = claims.loc["soft target tau_y = 0.01 beats hardmax"]
    # +2.0 pp to a few hundredths against the paper's +1.58: entirely above the paper's effect
    assert soft["verdict"] == "larger than claimed" and soft["gain"] == pytest.approx(0.02, abs=0.003)
    assert claims.loc["the language-model teacher (RoBERTa; ours MiniLM) helps", "verdict"] == "opposite"
    assert claims.loc["episode of 0.2 of the data beats one episode per epoch", "reference"] == n
    ipp = claims.loc["10 images per prototype is the best value"]
    assert ipp["reference"] != 10 and ipp["seeds"] == 3
    # the paper's stated gains travel with the claims, as fractions, and decide "smaller than claimed"
    assert soft["paper gain (pp)"] == 1.58 and soft["test"].paper_effect == pytest.approx(0.0158)
    episode = claims.loc["episode of 0.2 of the data beats one episode per epoch"]
    assert episode["test"].paper_effect == pytest.approx(0.0286)
    assert episode["verdict"] == "no effect"  # tight interval inside ±1 pp, the paper says +2.86 pp
    assert set(claims["id"]) <= {c.id for c in ablation.CLAIMS}


def test_verdict_rule():
    assert report.verdict([0.02, 0.021, 0.019]) == "reproduced"
    assert report.verdict([-0.02, -0.021, -0.019]) == "opposite"
    assert report.verdict([0.02, -0.02, 0.01]) == "inconclusive"
    assert report.verdict([0.5]) == "inconclusive"  # fewer than 2 seeds: no interval
    assert report.verdict([0.02, -0.02, 0.01], paper_effect=0.10) == "smaller than claimed"
    np.testing.assert_allclose(
        report.paired_differences({0: 1.0, 1: 2.0, 2: 5.0}, {1: 1.5, 2: 1.0, 3: 0.0}), [0.5, 4.0]
    )


def test_list_parameters_accept_papermill_strings(no_compute):
    """papermill's -p passes lists as strings: "[]", "[0]" or comma-separated names must work."""
    assert len(ablation.make_plan("laptop", sweeps="[]", seeds="[0]").runs) == 1
    plan = ablation.make_plan("laptop", sweeps="target_temperature", seeds="0,1,2")
    assert {r.sweep for r in plan.runs} == {"base", "target_temperature"} and plan.seeds == [0, 1, 2]
    with pytest.raises(ValueError, match="sweeps"):
        ablation.make_plan("laptop", sweeps="[episode_size")


def test_fig6_panels_name_their_hyper_parameter_and_draw_chance():
    """Each Fig. 6 panel as the notebook draws it: the swept hyper-parameter on the x axis, chance dashed (avg3's
    linear probe: the mean of its three tasks' 1 / classes; on real data the headline task's), and an alt text
    saying so. Nothing is trained: the records are made up."""
    from pathlib import Path

    from vlp_lib.book import plots
    from vlp_lib.suite import VALIDATION_TASKS, chance_levels

    assert set(ablation.SWEEP_AXES) == set(ablation.SWEEPS)
    plan = ablation.make_plan("smoke", seeds=[0, 1])
    levels = chance_levels(plan.config.eval)
    chance = ablation.chance_level(plan)
    assert chance == pytest.approx(np.mean([levels[f"{t}/linear"] for t in VALIDATION_TASKS]))
    table = ablation.sweep_table([(run, {"metrics": {plan.metric: 0.3}}) for run in plan.runs], plan.metric)
    for sweep in ablation.SWEEPS:
        t = table[table["sweep"] == sweep].assign(label="ProtoCLIP (this book)")
        t["group"] = [str(v) for v in t["value"]]
        fig = plots.bar_with_error(
            t, ylabel=ablation.bar_ylabel(plan), xlabel=ablation.SWEEP_AXES[sweep], chance=100 * chance
        )
        ax = fig.axes[0]
        assert ax.get_xlabel() == ablation.SWEEP_AXES[sweep] and ax.get_ylabel().endswith("(%)")
        assert [line.get_ydata()[0] for line in ax.lines if line.get_gid() == "chance"] == [pytest.approx(100 * chance)]
        alt = ablation.figure_alt(plan, sweep, t, chance)
        assert alt.startswith("Bar chart") and ablation.SWEEP_AXES[sweep] in alt and "2 seeds" in alt
        assert f"chance ({100 * chance:.1f}%) dashed" in alt
    real = Path(__file__).resolve().parent / "data" / "openclipart"
    on_real = ablation.make_plan(
        "smoke", sweeps=[], seeds=[0], train_data=str(real / "pairs.csv"), eval_tasks=[f"folder:{real / 'categories'}"]
    )
    assert on_real.metric == "categories/linear" and ablation.chance_level(on_real) == pytest.approx(1 / 8)


def test_the_untrained_networks_are_those_of_every_claims_reference_bar(no_compute, monkeypatch):
    """``ablation.untrained`` evaluates, per seed, the untrained network of each bar a claim of Fig. 6 compares with
    (a "best_of" claim: every other bar of its sweep), so the learning check reads every reference; nothing else."""
    import vlp_lib.experiment as experiment

    evaluated = []
    monkeypatch.setattr(
        experiment, "untrained", lambda config, verbose=True: evaluated.append(config) or {"seed": config.seed}
    )
    plan = ablation.make_plan("laptop")
    untrained = ablation.untrained(plan)
    n = plan.base["train_size"]
    assert set(untrained) == {
        ("episode_size", n),
        ("target_temperature", 0.0),
        ("images_per_prototype", 5),
        ("images_per_prototype", 50),
        ("external_teacher", "none"),
        ("external_teacher", "clip"),
    }
    assert all([r["seed"] for r in records] == list(plan.seeds) for records in untrained.values())
    assert len(evaluated) == 6 * len(plan.seeds)
