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


def _bars() -> pd.DataFrame:
    return pd.DataFrame({"group": ["a", "b", "c"], "label": ["x"] * 3, "mean": [40.0, 50.0, 45.0], "std": [1, 2, 1]})


def _dashed(ax) -> list:
    return [line for line in ax.lines if line.get_gid() == "chance"]


def test_bar_with_error_names_its_x_axis_and_draws_chance():
    fig = plots.bar_with_error(_bars(), ylabel="accuracy (%)", xlabel="episode size (pairs)", chance=12.5)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "episode size (pairs)" and ax.get_ylabel() == "accuracy (%)"
    (line,) = _dashed(ax)
    assert set(line.get_ydata()) == {12.5}
    assert "chance" in [t.get_text() for t in ax.get_legend().get_texts()]
    # groups of different metrics: a segment over each group named, one legend entry
    fig = plots.bar_with_error(_bars(), ylabel="accuracy (%)", chance={"a": 10.0, "c": 25.0, "not a group": 5.0})
    ax = fig.axes[0]
    segments = [s for c in ax.collections if c.get_gid() == "chance" for s in c.get_segments()]
    assert sorted(float(s[0][1]) for s in segments) == [10.0, 25.0]
    assert [t.get_text() for t in ax.get_legend().get_texts()].count("chance") == 1
    # no chance level known: no line, no legend entry
    ax = plots.bar_with_error(_bars(), chance=None).axes[0]
    assert not _dashed(ax) and "chance" not in [t.get_text() for t in ax.get_legend().get_texts()]


def test_every_library_figure_labels_its_axes():
    history = [{"step": s, "loss": 1.0 / (s + 1)} for s in range(5)]
    assert all(ax.get_ylabel() for ax in plots.loss_curve(history).axes)
    assert plots.loss_curve(history).axes[-1].get_xlabel()
    ax = plots.confusion_matrix([0, 1, 1], [0, 1, 0], ["a", "b"]).axes[0]
    assert ax.get_xlabel() == "predicted class" and ax.get_ylabel() == "true class"
    feats, labels = blobs(5, 2)
    ax = plots.embedding_scatter(feats, labels, ["a", "b"], method="mds").axes[0]
    assert "no units" in ax.get_xlabel() and "no units" in ax.get_ylabel()
    table = pd.DataFrame({"true": [0.9, 0.5], "colour": [1.0, 0.4], "n": [10, 10]}, index=["none", "simclr"])
    ax = plots.consistency_bars(table).axes[0]
    assert ax.get_xlabel() and ax.get_ylabel()


def test_a_figure_is_shown_with_its_alt_text(capsys):
    import base64

    fig = plots.bar_with_error(_bars(), ylabel="accuracy (%)")
    shown = plots.AltFigure(fig, "Bar chart: accuracy per   group,\\n chance dashed.")
    data, metadata = shown._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(PNG_MAGIC)
    # the alt text, on one line, as the output's plain text and in its image metadata (what the book's build reads)
    assert data["text/plain"] == metadata["image/png"]["alt"] == "Bar chart: accuracy per group,\\n chance dashed."
    with pytest.raises(ValueError, match="alt"):
        plots.AltFigure(fig, "  ")
    with pytest.raises(TypeError, match="Figure"):
        plots.AltFigure("figure.png", "a figure")  # type: ignore[arg-type]
    plots.show(fig, "Bar chart: shown outside a notebook")  # IPython's display prints the plain text there
    assert "Bar chart: shown outside a notebook" in capsys.readouterr().out


def test_the_book_build_gives_each_notebook_image_its_alt_text():
    """The Sphinx side (``plots.setup``): a notebook's image output with an alt text in its metadata gives the image
    node of its file (myst-nb names it by the PNG's sha256) that alt text; an image without one, or with its own, is
    left as it is."""
    import hashlib

    from docutils import nodes

    fig = plots.bar_with_error(_bars(), ylabel="accuracy (%)")
    data, metadata = plots.AltFigure(fig, "Bar chart: three groups")._repr_mimebundle_()
    other, _ = plots.AltFigure(
        plots.loss_curve([{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}]), "x"
    )._repr_mimebundle_()
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": "# page"},
            {"cell_type": "code", "outputs": [{"output_type": "display_data", "data": data, "metadata": metadata}]},
            {"cell_type": "code", "outputs": [{"output_type": "display_data", "data": other, "metadata": {}}]},
        ]
    }
    alts = plots.alt_texts(notebook)
    digest = hashlib.sha256(base64_bytes(data["image/png"])).hexdigest()
    assert alts == {digest: "Bar chart: three groups"}
    doctree = nodes.section()
    shown = nodes.image(uri=f"../_build/jupyter_execute/{digest}.png")
    without = nodes.image(
        uri="../_build/jupyter_execute/" + hashlib.sha256(base64_bytes(other["image/png"])).hexdigest() + ".png"
    )
    own = nodes.image(uri=f"{digest}.png", alt="its own")
    doctree += [shown, without, own]
    assert plots.set_alt_texts(doctree, alts) == 1
    assert shown["alt"] == "Bar chart: three groups" and "alt" not in without and own["alt"] == "its own"


def base64_bytes(text) -> bytes:
    import base64

    return base64.b64decode("".join(text) if isinstance(text, list) else text)
