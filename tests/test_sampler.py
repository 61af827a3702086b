"""Samplers (vlp_lib.data.sampler), side-data gathering and merged sources (vlp_lib.data.paired)."""

import numpy as np
import pytest
import torch

from vlp_lib.data.paired import PairedData, concat, take
from vlp_lib.data.sampler import EpisodeSampler, MixedSampler, episode_indices, stream


def _data(n, size=8, ctx=6, offset=0, **extra):
    images = np.full((n, size, size, 3), offset % 256, dtype=np.uint8)
    tokens = torch.arange(offset, offset + n).view(n, 1).repeat(1, ctx)
    return PairedData(images=images, captions=[f"c{offset + i}" for i in range(n)], tokens=tokens, extra=extra)


# ---------------------------------------------------------------- EpisodeSampler


def test_default_plan_is_episode_indices_and_paired():
    plan = EpisodeSampler().plan(seed=4, episode=2, n_data=100, episode_length=40, batch_size=8)
    assert np.array_equal(plan.images, episode_indices(4, 2, 100, 40))
    assert plan.texts is plan.images
    assert plan.seen() == {"data": 40} and plan.seen(16) == {"data": 16}
    assert list(plan.names(np.arange(3))) == ["data"] * 3


def test_unpaired_texts_are_an_independent_permutation():
    paired = EpisodeSampler().plan(0, 1, 50, 50, 10)
    unpaired = EpisodeSampler(paired=False).plan(0, 1, 50, 50, 10)
    assert np.array_equal(unpaired.images, paired.images)  # the images of the paired run
    assert sorted(unpaired.texts.tolist()) == list(range(50))  # every text once
    assert (unpaired.texts != unpaired.images).mean() > 0.8
    again = EpisodeSampler(paired=False).plan(0, 1, 50, 50, 10)
    assert np.array_equal(again.texts, unpaired.texts)  # a function of (seed, episode)
    assert not np.array_equal(EpisodeSampler(paired=False).plan(0, 2, 50, 50, 10).texts, unpaired.texts)


def test_pools_and_a_small_text_pool_restarting():
    images, texts = np.arange(20, 50), np.array([3, 5, 7, 9])
    plan = EpisodeSampler(paired=False, images=images, texts=texts).plan(1, 0, 50, 25, 5)
    assert set(plan.images.tolist()) <= set(images.tolist()) and len(set(plan.images.tolist())) == 25
    assert len(plan.texts) == 25 and set(plan.texts.tolist()) == set(texts.tolist())
    for start in range(0, 24, 4):  # a new permutation of the pool each pass: all 4 before any repeats
        assert sorted(plan.texts[start : start + 4].tolist()) == texts.tolist()


def test_stream_passes_are_permutations():
    rng = np.random.default_rng(0)
    drawn = stream(rng, np.arange(7), 20)
    assert len(drawn) == 20 and sorted(drawn[:7].tolist()) == list(range(7))
    assert len(stream(rng, np.arange(7), 0)) == 0


@pytest.mark.parametrize(
    "kwargs, check, match",
    [
        ({"texts": [1, 2]}, (10, 5, 5), "texts"),
        ({"paired": "yes"}, (10, 5, 5), "paired"),
        ({"images": [1, 2, 3]}, (10, 5, 5), "episode_size"),
        ({"images": [1, 20]}, (10, 5, 5), "images"),
        ({"images": []}, (10, 5, 5), "images"),
        ({"paired": False, "texts": [-1]}, (10, 5, 5), "texts"),
    ],
)
def test_episode_sampler_refuses_bad_settings(kwargs, check, match):
    with pytest.raises(ValueError, match=match):
        EpisodeSampler(**kwargs).check(*check)


# ---------------------------------------------------------------- MixedSampler


def test_mixed_batches_hold_round_r_b_of_the_first_source():
    pools = {"class": np.arange(0, 30), "paired": np.arange(30, 100)}
    sampler = MixedSampler(pools, ratio=0.3)
    sampler.check(100, 64, 10)
    plan = sampler.plan(seed=0, episode=0, n_data=100, episode_length=64, batch_size=10)
    assert len(plan.images) == 64 and plan.texts is plan.images
    for b in range(6):
        rows = plan.images[b * 10 : (b + 1) * 10]
        assert (rows[:3] < 30).all() and (rows[3:] >= 30).all()
        assert list(plan.names(np.arange(b * 10, (b + 1) * 10))) == ["class"] * 3 + ["paired"] * 7
    assert plan.seen(60) == {"class": 18, "paired": 42}
    assert sum(plan.seen().values()) == 64
    # each source is read without replacement within a pass over it
    paired_rows = plan.images[plan.source == 1]
    assert len(set(paired_rows.tolist())) == len(paired_rows)


def test_mixed_source_order_does_not_depend_on_the_ratio():
    pools = {"class": np.arange(0, 40), "paired": np.arange(40, 100)}
    low = MixedSampler(pools, ratio=0.25).plan(2, 3, 100, 80, 8)
    high = MixedSampler(pools, ratio=0.5).plan(2, 3, 100, 80, 8)
    first_low, first_high = low.images[low.source == 0], high.images[high.source == 0]
    assert np.array_equal(first_low, first_high[: len(first_low)])  # common random numbers across r
    assert low.seen() == {"class": 20, "paired": 60} and high.seen() == {"class": 40, "paired": 40}


def test_mixed_with_three_sources_and_the_extremes():
    pools = {"a": [0, 1, 2], "b": [3, 4, 5], "c": [6, 7, 8, 9]}
    plan = MixedSampler(pools, ratio=(0.25, 0.5)).plan(0, 0, 10, 8, 4)
    assert plan.seen() == {"a": 2, "b": 4, "c": 2}
    only_second = MixedSampler({"a": [0], "b": [1, 2]}, ratio=0.0).plan(0, 0, 3, 6, 3)
    assert set(only_second.images.tolist()) == {1, 2} and only_second.seen() == {"a": 0, "b": 6}


@pytest.mark.parametrize(
    "pools, ratio, match",
    [
        ({"a": [0]}, 0.5, "pools"),
        ({"a": [0], "b": [1]}, 1.5, "ratio"),
        ({"a": [0], "b": [1]}, -0.1, "ratio"),
        ({"a": [0], "b": [1]}, True, "ratio"),
        ({"a": [0], "b": [1]}, (0.2, 0.3), "ratio"),
        ({"a": [0], "b": [1], "c": [2]}, (0.7, 0.6), "ratio"),
    ],
)
def test_mixed_sampler_refuses_bad_arguments(pools, ratio, match):
    with pytest.raises(ValueError, match=match):
        MixedSampler(pools, ratio)


def test_mixed_sampler_check_refuses_indices_outside_the_data():
    with pytest.raises(ValueError, match="pools"):
        MixedSampler({"a": [0, 1], "b": [2, 99]}, 0.5).check(10, 4, 2)


# ---------------------------------------------------------------- side data and merged sources


def test_take_keeps_the_container_type(tmp_path):
    idx = np.array([4, 0, 2])
    arr = np.arange(10) * 2
    mm = np.lib.format.open_memmap(tmp_path / "a.npy", mode="w+", dtype=np.int64, shape=(10,))
    mm[:] = arr
    got = take(mm, idx)
    assert type(got) is np.ndarray and got.tolist() == [8, 0, 4]
    assert torch.equal(take(torch.arange(10), idx), torch.tensor([4, 0, 2]))
    assert take(["a", "b", "c", "d", "e"], idx) == ["e", "a", "c"]
    nested = take({"shape": arr, "boxes": [np.zeros((i, 4)) for i in range(10)]}, idx)
    assert nested["shape"].tolist() == [8, 0, 4] and [b.shape[0] for b in nested["boxes"]] == [4, 0, 2]
    with pytest.raises(ValueError, match="side data"):
        take(3.0, idx)


def test_check_extra_names_the_problem():
    data = _data(5, teacher=np.zeros((5, 2)), short=np.zeros((4, 2)), labels={"a": np.zeros(5), "b": np.zeros(3)})
    data.check_extra("teacher")
    for name in ("missing", "short", "labels"):
        with pytest.raises(ValueError, match=name):
            data.check_extra(name)


def test_concat_merges_sources_with_pools_and_a_source_extra():
    a = _data(3, offset=0, labels={"shape": np.array([0, 1, 2]), "only_a": np.zeros(3)}, definitions=["x"] * 3)
    b = _data(4, offset=10, labels={"shape": np.array([5, 6, 7, 8])}, summaries=["s"] * 4)
    merged, pools = concat({"class": a, "paired": b})
    assert len(merged) == 7 and pools["class"].tolist() == [0, 1, 2] and pools["paired"].tolist() == [3, 4, 5, 6]
    assert merged.extra["labels"]["shape"].tolist() == [0, 1, 2, 5, 6, 7, 8]
    assert "only_a" not in merged.extra["labels"] and "definitions" not in merged.extra
    assert merged.extra["source"].tolist() == ["class"] * 3 + ["paired"] * 4
    assert merged.tokens[4, 0].item() == 11 and merged.captions[3] == "c10" and merged.images[5, 0, 0, 0] == 10
    merged.check_extra("source")
    with pytest.raises(ValueError, match="size"):
        concat({"a": _data(2, size=8), "b": _data(2, size=16)})
    with pytest.raises(ValueError, match="context"):
        concat({"a": _data(2, ctx=6), "b": _data(2, ctx=8)})
