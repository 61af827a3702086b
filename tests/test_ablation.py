"""The Fig. 6 plan: validation before compute, equal training amounts, and the paired claims table."""

import numpy as np
import pytest

from vlp_lib import ablation, report
from vlp_lib.train import TrainConfig


@pytest.fixture
def no_compute(monkeypatch):
    """Fail loudly if planning generates data or builds a model."""
    import vlp_lib.data.world as world
    import vlp_lib.experiment as experiment

    def refuse(*args, **kwargs):
        raise AssertionError("compute started before validation finished")

    monkeypatch.setattr(world, "generate", refuse)
    monkeypatch.setattr(experiment, "generate", refuse, raising=False)
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
    assert len(configs) == 13 * 3  # base + 4 episode sizes + 3 + 3 + 2 new bars per sweep, 3 seeds
    amounts = set()
    for c in configs:
        t = TrainConfig(epochs=c["epochs"], batch_size=c["batch_size"], episode_size=c["episode_size"])
        n = c["train_size"]
        amounts.add(t.n_episodes(n) * t.steps_per_episode(n) * t.batch_size)
        steps = t.n_episodes(n) * t.steps_per_episode(n)
        assert steps >= 4 * 40 and c["warmup_steps"] <= 0.1 * steps  # 4x the first book's 40 steps per run
        # the official InfoNCE-only first episode, except in the L_Proto-only episode-size sweep
        assert c["method_kwargs"]["warmup_episodes"] == (0 if c["method_kwargs"]["clip_weight"] == 0 else 1)
    assert amounts == {ablation.ABLATION_SCALES["laptop"]["total_samples"]}
    assert plan.base["episode_size"] == round(0.2 * plan.base["train_size"])


def test_a_larger_episode_grows_the_world_and_the_training_amount(no_compute):
    plan = ablation.make_plan("laptop", episode_size=200_000, sweeps=[])
    assert plan.base["train_size"] == 200_000 and plan.base["total_samples"] == 200_000
    (run,) = [r for r in plan.runs if r.config["seed"] == 0]
    assert run.config["method_kwargs"].get("k") is None  # derived: 200,000 // 10 = 20,000 prototypes
    small = ablation.estimate_seconds(ablation.make_plan("laptop", sweeps=[]))
    big = ablation.estimate_seconds(plan)
    assert big["seconds"] > 10 * small["seconds"] and big["world_seconds"] > small["world_seconds"]


def _fake_results(plan, effect):
    """Records whose metric is a per-seed offset (shared by all settings) plus ``effect[(sweep, value)]``."""
    out = []
    for run in plan.runs:
        seed = run.config["seed"]
        value = 0.2 + 0.05 * seed + effect.get((run.sweep, run.value), 0.0) + 0.001 * np.sin(7 * seed + len(str(run.value)))
        out.append((run, {"metrics": {"avg3/linear": value}}))
    return out


def test_claims_are_judged_on_per_seed_differences(no_compute):
    plan = ablation.make_plan("laptop")
    n = plan.base["train_size"]
    effect = {("target_temperature", 0.01): 0.02, ("external_teacher", "minilm"): -0.02,
              ("episode_size", plan.base["episode_size"]): 0.0}
    results = _fake_results(plan, effect)
    # the bars' stds are dominated by the 5-point seed offsets, the paired differences are not
    bars = ablation.sweep_table(results)
    assert (bars["std"] > 0.04).all()
    claims = ablation.claims_table(results, plan).set_index("claim")
    soft = claims.loc["soft target tau_y = 0.01 beats hardmax"]
    assert soft["verdict"] == "reproduced" and soft["gain"] == pytest.approx(0.02, abs=0.003)
    assert claims.loc["the language-model teacher (RoBERTa; ours MiniLM) helps", "verdict"] == "not reproduced"
    assert claims.loc["episode of 0.2 of the data beats one episode per epoch", "reference"] == n
    ipp = claims.loc["10 images per prototype is the best value"]
    assert ipp["reference"] != 10 and ipp["seeds"] == 3


def test_verdict_rule():
    assert report.verdict([0.02, 0.021, 0.019]) == "reproduced"
    assert report.verdict([-0.02, -0.021, -0.019]) == "not reproduced"
    assert report.verdict([0.02, -0.02, 0.01]) == "inconclusive"
    assert report.verdict([0.5, 0.5]) == "inconclusive"  # fewer than 3 seeds
    np.testing.assert_allclose(report.paired_differences({0: 1.0, 1: 2.0, 2: 5.0}, {1: 1.5, 2: 1.0, 3: 0.0}), [0.5, 4.0])


def test_list_parameters_accept_papermill_strings(no_compute):
    """papermill's -p passes lists as strings: "[]", "[0]" or comma-separated names must work."""
    assert len(ablation.make_plan("laptop", sweeps="[]", seeds="[0]").runs) == 1
    plan = ablation.make_plan("laptop", sweeps="target_temperature", seeds="0,1,2")
    assert {r.sweep for r in plan.runs} == {"base", "target_temperature"} and plan.seeds == [0, 1, 2]
    with pytest.raises(ValueError, match="sweeps"):
        ablation.make_plan("laptop", sweeps="[episode_size")
