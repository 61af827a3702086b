"""Tests of vlp_lib.book.plots: every figure is built from real data, returned, and saved as a non-empty PNG."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure

from vlp_lib.book import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1_000
    # atomic save: no temporary file is left beside the figure
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []


def blobs(n_per_class: int, n_classes: int, dim: int = 16, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    return rng.normal(size=(n_classes, dim))[y] + 0.2 * rng.normal(size=(len(y), dim)), y


def test_loss_curve_with_logit_scale_and_lr(tmp_path):
    history = [
        {
            "step": s,
            "loss": 4.0 * np.exp(-s / 50) + 0.1 * np.sin(s),
            "lr": 1e-3 * min(1, s / 10),
            "logit_scale": 14.3 + s / 10,
        }
        for s in range(200)
    ]
    fig = plots.loss_curve(history, path=tmp_path / "loss.png")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 3  # loss, logit scale, lr
    assert len(fig.axes[0].lines) == 2  # raw and smoothed
    assert_png(tmp_path / "loss.png")
    # loss only, from a DataFrame: one panel
    fig = plots.loss_curve(pd.DataFrame(history)[["step", "loss"]])
    assert len(fig.axes) == 1
    with pytest.raises(ValueError, match="loss"):
        plots.loss_curve([{"step": 1}])


def test_confusion_matrix_counts_and_normalisation(tmp_path):
    y_true = np.array([0, 0, 0, 1, 1, 2])
    y_pred = np.array([0, 0, 1, 1, 1, 0])
    fig = plots.confusion_matrix(y_true, y_pred, ["a", "b", "c"], path=tmp_path / "cm.png")
    assert isinstance(fig, Figure)
    values = fig.axes[0].images[0].get_array()
    np.testing.assert_allclose(values, [[2 / 3, 1 / 3, 0], [0, 1, 0], [1, 0, 0]])
    assert_png(tmp_path / "cm.png")
    counts = plots.confusion_matrix(torch.as_tensor(y_true), y_pred, ["a", "b", "c"], normalize=False)
    np.testing.assert_array_equal(counts.axes[0].images[0].get_array(), [[2, 1, 0], [0, 2, 0], [1, 0, 0]])


SLOW = pytest.mark.skipif(
    not os.environ.get("VLP_SLOW_TESTS"),
    reason="umap-learn's numba compilation takes ~1 min on 2 cores; set VLP_SLOW_TESTS=1 to run",
)


@pytest.mark.parametrize("method", ["tsne", pytest.param("umap", marks=SLOW), "mds"])
def test_embed_2d_methods(method):
    x, _ = blobs(10, 3)
    xy = plots.embed_2d(x, method=method, seed=0)
    assert xy.shape == (30, 2) and np.isfinite(xy).all()


def test_embed_2d_is_deterministic_and_checks_method():
    x, _ = blobs(10, 2)
    np.testing.assert_array_equal(plots.embed_2d(x, "tsne", seed=1), plots.embed_2d(x, "tsne", seed=1))
    with pytest.raises(ValueError, match="method"):
        plots.embed_2d(x, "pca")


def test_embedding_scatter_subsamples_deterministically(tmp_path):
    x, y = blobs(20, 4)
    fig = plots.embedding_scatter(x, y, ["w", "x", "y", "z"], max_points=50, path=tmp_path / "tsne.png")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert sum(len(c.get_offsets()) for c in ax.collections) == 50
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["w", "x", "y", "z"]
    assert_png(tmp_path / "tsne.png")
    np.testing.assert_array_equal(plots._subsample(160, 100, 0), plots._subsample(160, 100, 0))
    assert len(plots._subsample(50, 100, 0)) == 50


def test_image_grid_with_captions(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(10, 16, 16, 3), dtype=np.uint8)
    captions = [f"a crimson star left of a blue ring number {i} free shipping" for i in range(10)]
    fig = plots.image_grid(images, captions, ncols=4, path=tmp_path / "grid.png")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 12  # 3 rows x 4 columns, the last 2 empty
    assert "\n" in fig.axes[0].get_title()  # wrapped
    assert_png(tmp_path / "grid.png")
    assert isinstance(plots.image_grid(images[:3]), Figure)
    with pytest.raises(ValueError, match="captions"):
        plots.image_grid(images, captions[:3])


def test_bar_with_error_paper_vs_book(tmp_path):
    table = pd.DataFrame(
        {
            "group": ["CIFAR10", "CIFAR10", "CIFAR100", "CIFAR100", "STL10", "STL10"],
            "label": ["CLIP", "ProtoCLIP"] * 3,
            "mean": [0.45, 0.49, 0.20, 0.23, 0.60, 0.66],
            "std": [0.01, 0.02, 0.01, np.nan, 0.03, 0.02],
            "paper": [0.4912, 0.5395, 0.2032, 0.2460, np.nan, np.nan],
        }
    )
    fig = plots.bar_with_error(table, path=tmp_path / "bars.png", ylabel="zero-shot top-1")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    # 6 "this book" bars + 4 paper bars (hatched, unfilled)
    assert len(ax.patches) == 10
    assert sum(1 for p in ax.patches if p.get_hatch()) == 4
    assert [t.get_text() for t in ax.get_xticklabels()] == ["CIFAR10", "CIFAR100", "STL10"]
    assert_png(tmp_path / "bars.png")
    # without a paper column: only our bars
    fig = plots.bar_with_error(table.drop(columns=["paper"]))
    assert len(fig.axes[0].patches) == 6
    with pytest.raises(ValueError, match="mean"):
        plots.bar_with_error(table.drop(columns=["mean"]))


def test_style_is_scoped_to_the_library():
    before = matplotlib.rcParams["axes.spines.top"]
    plots.loss_curve([{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}])
    assert matplotlib.rcParams["axes.spines.top"] == before


def test_recipe_curve(tmp_path):
    candidates = {
        "a": {"train_seconds": 60.0, "shapes10_linear": 0.5, "samples_per_s": 2000.0},
        "b": {"train_seconds": 61.0, "shapes10_linear": 0.3, "samples_per_s": 1000.0},
    }
    curves = {"a": [(30.0, 0.4), (60.0, 0.5)], "b": [(30.0, 0.2), (60.0, 0.3)]}
    fig = plots.recipe_curve(candidates, curves, path=tmp_path / "recipe.png")
    assert isinstance(fig, Figure) and len(fig.axes[0].lines) == 2
    assert_png(tmp_path / "recipe.png")
    with pytest.raises(ValueError, match="nothing to plot"):
        plots.recipe_curve({}, {})
