"""Figures of the book: training curves, confusion matrices, embedding maps, image grids, paper-vs-book bars.

Every function builds a ``matplotlib.figure.Figure`` directly (not through ``pyplot``), so no global figure
state accumulates across a notebook's loops, and returns it; Jupyter displays a returned Figure once.
``path`` saves a PNG at 150 dpi atomically (written next to the target, then renamed), so a crashed run
never leaves a half-written figure for the book to pick up. The look is set in one place: ``STYLE``.

**Alt text.** A notebook shows a figure with ``show(fig, alt)`` (``AltFigure``): the PNG as Jupyter's inline backend
renders it, with ``alt``, a sentence saying what the figure shows, in the output's metadata (``"image/png": {"alt":
...}``) and as its plain-text form. myst-nb takes an image's alt text only from cell metadata (one for all the cell's
images), so this module is also a Sphinx extension (``setup``, listed in ``_config.yml``): when the book is built,
each notebook image whose output carries an alt text gets it as its HTML ``alt`` attribute, instead of the image's
file path.
"""

from __future__ import annotations

import binascii
import contextlib
import functools
import hashlib
import inspect
import json
import os
import sys
import tempfile
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, cast

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.rcsetup import cycler  # what mpl.cycler is (its stub does not re-export it)

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

# The one place the book's look is set: readable at notebook width and in the built HTML pages.
STYLE: dict[RcKeyType, Any] = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": cycler(color=cast(ListedColormap, mpl.colormaps["tab10"]).colors),
    "image.cmap": "viridis",
    "legend.frameon": False,
}
DPI = 150


def _show_figures_inline() -> None:
    """Let Jupyter display a returned ``Figure`` as a PNG. IPython's inline backend registers that display
    formatter only once ``pyplot`` is imported, and this module never imports it: without this, an executed
    notebook kept only the text "<Figure size ...>" of every figure and the built pages showed none.
    Outside IPython (scripts, tests) it does nothing."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is None:
        return
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    set_matplotlib_formats("png")


_show_figures_inline()


def use_style() -> None:
    """Apply ``STYLE`` globally (for figures a notebook draws itself, so they match the library's)."""
    mpl.rcParams.update(STYLE)


def _styled(fn: Callable[..., Figure]) -> Callable[..., Figure]:
    """Draw under ``STYLE`` without changing the caller's rcParams."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with mpl.rc_context(STYLE):
            return fn(*args, **kwargs)

    return wrapper


def save(fig: Figure, path: str | os.PathLike) -> Path:
    """Write ``fig`` as a PNG at ``DPI`` to ``path`` atomically; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".png", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=DPI, bbox_inches="tight")
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a figure is meant to be read by the book build
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def _finish(fig: Figure, path: str | os.PathLike | None) -> Figure:
    if path is not None:
        save(fig, path)
    return fig


# --------------------------------------------------------------------------------------------------------------
# showing a figure with its alt text

ALT_KEY = "alt"  # the key of an image output's metadata that carries its alt text
CHANCE_STYLE: dict[str, Any] = {"color": "0.15", "linestyle": "--", "linewidth": 1.0, "gid": "chance"}  # one look
CHANCE_LABEL = "chance"


class AltFigure:
    """``fig`` as Jupyter displays it, with ``alt`` (what the figure shows, in words) for a reader who cannot see it:
    the PNG the inline backend would render (``IPython.core.pylabtools.print_figure``), ``alt`` in the output's
    metadata (``{"image/png": {"alt": alt}}``, which the book's build turns into the HTML ``alt``: ``setup``) and
    as the output's plain text (instead of "<Figure size ...>")."""

    def __init__(self, fig: Figure, alt: str) -> None:
        if not isinstance(fig, Figure):
            raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
        if not isinstance(alt, str) or not alt.strip():
            raise ValueError("alt must be a sentence saying what the figure shows, got an empty one")
        self.fig, self.alt = fig, " ".join(alt.split())

    def png(self) -> str:
        """The figure as the inline backend renders it: a base64 PNG (tight bounding box, the figure's dpi)."""
        from IPython.core.pylabtools import print_figure

        return str(print_figure(self.fig, "png", base64=True))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        return {"image/png": self.png(), "text/plain": self.alt}, {"image/png": {ALT_KEY: self.alt}}

    def __repr__(self) -> str:
        return self.alt


def show(fig: Figure, alt: str) -> None:
    """Display ``fig`` with its alt text (``AltFigure``); a figure made through ``pyplot`` is closed after, so that
    the inline backend does not show it a second time at the end of the cell."""
    from IPython.display import display

    shown = AltFigure(fig, alt)
    display(shown)
    if "matplotlib.pyplot" in sys.modules and getattr(fig.canvas, "manager", None) is not None:
        sys.modules["matplotlib.pyplot"].close(fig)


def chance_line(ax: Any, chance: float | None, label: str = CHANCE_LABEL, vertical: bool = False) -> None:
    """A dashed line at ``chance`` (the axis' units: a percent axis takes percent), labelled for the legend; none
    where ``chance`` is ``None`` or not finite."""
    if chance is None or not np.isfinite(chance):
        return
    (ax.axvline if vertical else ax.axhline)(chance, label=label, zorder=1.5, **CHANCE_STYLE)


def alt_texts(notebook: Mapping[str, Any]) -> dict[str, str]:
    """``{sha256 of the PNG's bytes: alt text}`` of every image output of ``notebook`` (nbformat 4 JSON) that carries
    one (``AltFigure``): myst-nb names an image output's file by that hash."""
    out: dict[str, str] = {}
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            alt = (output.get("metadata") or {}).get("image/png", {}).get(ALT_KEY)
            png = (output.get("data") or {}).get("image/png")
            if not alt or not png:
                continue
            try:
                data = binascii.a2b_base64("".join(png) if isinstance(png, list) else png)
            except binascii.Error:
                continue
            out[hashlib.sha256(data).hexdigest()] = str(alt)
    return out


def set_alt_texts(doctree: Any, alts: Mapping[str, str]) -> int:
    """Give every image node of ``doctree`` whose file is named by a hash of ``alts`` (myst-nb's notebook outputs) its
    alt text, unless it has one; the number of images given one."""
    from docutils import nodes

    given = 0
    for node in doctree.findall(nodes.image):
        alt = alts.get(PurePosixPath(str(node.get("uri", ""))).stem)
        if alt and not node.get("alt"):
            node["alt"] = alt
            given += 1
    return given


def _alt_texts_on_read(app: Any, doctree: Any) -> None:
    source = app.env.doc2path(app.env.docname)
    if not str(source).endswith(".ipynb"):
        return
    try:
        notebook = json.loads(open(source, encoding="utf-8").read())
    except (OSError, ValueError):
        return
    alts = alt_texts(notebook)
    if alts:
        set_alt_texts(doctree, alts)


def setup(app: Any) -> dict[str, Any]:
    """The Sphinx extension (``_config.yml``'s ``sphinx.extra_extensions``): every notebook image shown by ``show``
    gets its alt text in the built page."""
    app.connect("doctree-read", _alt_texts_on_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor, without importing torch here
        x = x.detach().cpu().numpy()
    return np.asarray(x)


# --------------------------------------------------------------------------------------------------------------
# training curves


def _smooth(values: pd.Series) -> pd.Series:
    # an exponential moving average over ~5% of the run, as TensorBoard's smoothing slider does
    span = max(2, len(values) // 20)
    return values.ewm(span=span, adjust=True).mean()


@_styled
def loss_curve(history: Sequence[dict[str, Any]] | pd.DataFrame, path: str | os.PathLike | None = None) -> Figure:
    """Training loss vs step (raw and smoothed); further panels for ``logit_scale`` and ``lr`` when logged.

    ``history`` is a list of dicts (one per logged step) with at least ``step`` and ``loss``, or a DataFrame.
    """
    df = pd.DataFrame(list(history) if not isinstance(history, pd.DataFrame) else history)
    missing = {"step", "loss"} - set(df.columns)
    if df.empty or missing:
        raise ValueError(f"history must be non-empty with keys 'step' and 'loss'; missing {sorted(missing)}")
    df = df.sort_values("step")
    extras = [k for k in ("logit_scale", "lr") if k in df.columns and df[k].notna().any()]
    fig = Figure(figsize=(6.4, 3.2 + 1.6 * len(extras)), layout="constrained")
    axes = fig.subplots(1 + len(extras), 1, sharex=True, squeeze=False, height_ratios=[2] + [1] * len(extras))[:, 0]
    loss = df[["step", "loss"]].dropna()
    axes[0].plot(loss["step"], loss["loss"], color="C0", alpha=0.3, linewidth=0.8, label="loss")
    if len(loss) > 2:
        axes[0].plot(loss["step"], _smooth(loss["loss"]), color="C0", linewidth=1.8, label="smoothed")
    axes[0].set_ylabel("training loss (nats)")
    axes[0].legend(loc="upper right")
    labels = {"logit_scale": "logit scale (1/τ)", "lr": "learning rate (per step)"}
    for ax, key, color in zip(axes[1:], extras, ("C1", "C2")):
        values = df[["step", key]].dropna()
        ax.plot(values["step"], values[key], color=color, linewidth=1.4)
        ax.set_ylabel(labels[key])
        if key == "lr":
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    axes[-1].set_xlabel("optimisation step (batches)")
    return _finish(fig, path)


# --------------------------------------------------------------------------------------------------------------
# confusion matrix


@_styled
def confusion_matrix(
    y_true: Any,
    y_pred: Any,
    classnames: Sequence[str],
    normalize: bool = True,
    path: str | os.PathLike | None = None,
    title: str | None = None,
) -> Figure:
    """Confusion matrix (rows: true class, columns: predicted) from ``sklearn.metrics.confusion_matrix``.

    ``normalize`` divides each row by its count, so the diagonal is per-class recall. Labels are class ids
    ``0..len(classnames)-1``; cells are annotated with their value when there are at most 20 classes.
    """
    from sklearn.metrics import confusion_matrix as sk_confusion_matrix

    y_true, y_pred = _to_numpy(y_true).reshape(-1), _to_numpy(y_pred).reshape(-1)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_pred has {len(y_pred)} entries but y_true has {len(y_true)}")
    n = len(classnames)
    counts = sk_confusion_matrix(y_true, y_pred, labels=np.arange(n))
    if normalize:
        rows = counts.sum(axis=1, keepdims=True)
        values = np.divide(counts, rows, out=np.zeros(counts.shape), where=rows > 0)
    else:
        values = counts
    side = min(12.0, 2.5 + 0.45 * n)
    fig = Figure(figsize=(side + 1.0, side), layout="constrained")
    ax = fig.subplots()
    ax.grid(False)
    im = ax.imshow(values, cmap="Blues", vmin=0, vmax=1 if normalize else None)
    fig.colorbar(im, ax=ax, shrink=0.8, label="fraction of true class" if normalize else "count")
    ticks = np.arange(n)
    ax.set_xticks(ticks, labels=classnames, rotation=60, ha="right", rotation_mode="anchor")
    ax.set_yticks(ticks, labels=classnames)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    if n <= 20:
        threshold = values.max() / 2 if values.size else 0
        for i in range(n):
            for j in range(n):
                text = f"{values[i, j]:.2f}" if normalize else f"{values[i, j]:d}"
                color = "white" if values[i, j] > threshold else "black"
                ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
    if title:
        ax.set_title(title)
    return _finish(fig, path)


# --------------------------------------------------------------------------------------------------------------
# embedding maps (ProtoCLIP Fig. 8: t-SNE of image representations)


def _subsample(n: int, max_points: int, seed: int) -> np.ndarray:
    """Sorted indices of a deterministic (seeded) subset of at most ``max_points`` of ``n`` rows."""
    if n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=max_points, replace=False))


def embed_2d(feats: Any, method: str = "tsne", seed: int = 0, normalize: bool = True) -> np.ndarray:
    """2-D coordinates ``[N, 2]`` of ``feats`` by ``method`` in {"tsne", "umap", "mds"}.

    Features are L2-normalised first (``normalize``), since the models compare them by cosine similarity.
    t-SNE: scikit-learn, ``init="pca"``, perplexity 30 (lowered to ``(N - 1) / 3`` for small N, since it must
    stay below N). UMAP: umap-learn with 15 neighbours (fewer for small N), single-threaded as any seeded
    UMAP is; its first call in a process pays ~1 min of numba compilation on 2 cores. MDS: scikit-learn metric MDS
    (SMACOF; quadratic in N, keep N to a few thousand).
    """
    x = _to_numpy(feats).astype(np.float64)
    if x.ndim != 2 or len(x) < 3:
        raise ValueError(f"feats must be [N, D] with N >= 3, got shape {x.shape}")
    if normalize:
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    n = len(x)
    if method == "tsne":
        from sklearn.manifold import TSNE

        perplexity = min(30.0, max(1.0, (n - 1) / 3))
        return TSNE(n_components=2, init="pca", perplexity=perplexity, random_state=seed).fit_transform(x)
    if method == "umap":
        import umap

        # the spectral initialisation needs a connected k-NN graph, which tiny inputs may not give
        init = "spectral" if n > 50 else "random"
        reducer = umap.UMAP(n_components=2, n_neighbors=min(15, n - 1), random_state=seed, init=init, n_jobs=1)
        return np.asarray(reducer.fit_transform(x))
    if method == "mds":
        from sklearn.manifold import MDS

        kwargs: dict[str, Any] = dict(n_components=2, n_init=1, random_state=seed)
        # scikit-learn >= 1.8 can start SMACOF from classical MDS (deterministic, and its future default)
        if "init" in inspect.signature(MDS).parameters:
            kwargs["init"] = "classical_mds"
        return MDS(**kwargs).fit_transform(x)
    raise ValueError(f"method must be one of 'tsne', 'umap', 'mds', got {method!r}")


@_styled
def embedding_scatter(
    feats: Any,
    labels: Any,
    classnames: Sequence[str],
    method: str = "tsne",
    seed: int = 0,
    max_points: int = 2000,
    path: str | os.PathLike | None = None,
    title: str | None = None,
) -> Figure:
    """Scatter of a 2-D embedding (``embed_2d``) of ``feats``, coloured by class, as ProtoCLIP Fig. 8.

    ``labels`` are class ids indexing ``classnames``. At most ``max_points`` rows, drawn deterministically
    from ``seed``. A legend names the classes when
    there are at most 30 of them.
    """
    x, y = _to_numpy(feats), _to_numpy(labels).reshape(-1)
    if len(x) != len(y):
        raise ValueError(f"labels has {len(y)} entries but feats has {len(x)}")
    idx = _subsample(len(x), max_points, seed)
    xy = embed_2d(x[idx], method=method, seed=seed)
    y = y[idx]
    n_classes = len(classnames)
    cmap = mpl.colormaps["tab10" if n_classes <= 10 else "tab20" if n_classes <= 20 else "turbo"]
    colors = cmap(np.arange(n_classes) % cmap.N if n_classes <= 20 else np.linspace(0, 1, n_classes))
    fig = Figure(figsize=(7.5 if n_classes <= 30 else 6.0, 6.0), layout="constrained")
    ax = fig.subplots()
    ax.grid(False)
    for c in np.unique(y):
        mask = y == c
        ax.scatter(
            xy[mask, 0], xy[mask, 1], s=6, color=colors[int(c)], alpha=0.8, linewidths=0, label=classnames[int(c)]
        )
    if n_classes <= 30:
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), markerscale=2.5, ncols=1 + n_classes // 16)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.spines[:].set_visible(False)  # 2-D embedding axes have no units
    name = method.upper() if method != "tsne" else "t-SNE"
    ax.set_xlabel(f"{name} dimension 1 (no units)")
    ax.set_ylabel(f"{name} dimension 2 (no units)")
    ax.set_title(title or f"{name} of {len(idx)} points")
    return _finish(fig, path)


# --------------------------------------------------------------------------------------------------------------
# image grid


@_styled
def image_grid(
    images: Any,
    captions: Sequence[str] | None = None,
    ncols: int = 8,
    path: str | os.PathLike | None = None,
    wrap: int = 22,
) -> Figure:
    """uint8 images ``[N, H, W, 3]`` in a grid of ``ncols`` columns, each with its caption wrapped below."""
    imgs = _to_numpy(images)
    if imgs.ndim != 4 or imgs.shape[-1] != 3:
        raise ValueError(f"images must be [N, H, W, 3], got shape {imgs.shape}")
    if captions is not None and len(captions) != len(imgs):
        raise ValueError(f"captions has {len(captions)} entries but images has {len(imgs)}")
    n = len(imgs)
    ncols = max(1, min(ncols, n))
    nrows = max(1, -(-n // ncols))
    wrapped = [textwrap.fill(str(c), wrap) for c in captions] if captions is not None else None
    lines = max((w.count("\n") + 1 for w in wrapped), default=0) if wrapped else 0
    cell_w, cell_h = 1.6, 1.6 + 0.14 * lines
    fig = Figure(figsize=(cell_w * ncols, cell_h * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i >= n:
            continue
        ax.imshow(imgs[i], interpolation="nearest")
        if wrapped:
            ax.set_title(wrapped[i], fontsize=7, y=-0.02, va="top", pad=0)
    return _finish(fig, path)


# --------------------------------------------------------------------------------------------------------------
# paper vs this book


@_styled
def bar_with_error(
    table: pd.DataFrame,
    path: str | os.PathLike | None = None,
    title: str | None = None,
    ylabel: str | None = None,
    xlabel: str | None = None,
    chance: float | Mapping[Any, float] | None = None,
) -> Figure:
    """Grouped bars: ``mean`` +- ``std`` for each ``label`` within each ``group``, the paper's value beside.

    ``table`` has columns ``group`` (x-axis clusters, e.g. a data set), ``label`` (a bar colour, e.g. a
    method), ``mean``, optionally ``std`` (error bar) and ``paper`` (the value the paper reports). Where
    ``paper`` is present, an outlined, hatched bar of the same colour stands right of "this book"'s bar.
    Groups and labels keep their order of first appearance. ``xlabel`` names what the groups are (the swept
    hyper-parameter, the metric); ``chance``, in the bars' units, draws a dashed line labelled "chance": one number
    across the whole axis, or ``{group: level}`` a segment over each group named (groups of different metrics).
    """
    missing = {"group", "label", "mean"} - set(table.columns)
    if missing:
        raise ValueError(f"table is missing columns {sorted(missing)}")
    if table.empty:
        raise ValueError("table is empty")
    groups = list(dict.fromkeys(table["group"]))
    labels = list(dict.fromkeys(table["label"]))
    has_paper = "paper" in table.columns and table["paper"].notna().any()
    slots = len(labels) * (2 if has_paper else 1)
    width = 0.8 / slots
    colors = {lab: f"C{i % 10}" for i, lab in enumerate(labels)}
    fig = Figure(figsize=(max(4.0, 1.2 + len(groups) * (0.35 + 0.3 * slots)), 3.6), layout="constrained")
    ax = fig.subplots()
    ax.grid(axis="x", visible=False)
    for _, row in table.iterrows():
        g, j = groups.index(row["group"]), labels.index(row["label"])
        slot = j * (2 if has_paper else 1)
        x = g - 0.4 + width * (slot + 0.5)
        std = row["std"] if "std" in table.columns and pd.notna(row["std"]) else None
        ax.bar(x, row["mean"], width, color=colors[row["label"]], yerr=std, capsize=2, error_kw={"elinewidth": 0.8})
        if has_paper and pd.notna(row["paper"]):
            ax.bar(
                x + width,
                row["paper"],
                width,
                facecolor="none",
                edgecolor=colors[row["label"]],
                hatch="///",
                linewidth=1.0,
            )
    ax.set_xticks(np.arange(len(groups)), labels=[str(g) for g in groups])
    ax.set_xlim(-0.6, len(groups) - 0.4)
    handles: list[Any] = [Patch(color=colors[lab], label=str(lab)) for lab in labels]
    if has_paper:
        handles += [
            Patch(facecolor="grey", label="this book"),
            Patch(facecolor="none", edgecolor="grey", hatch="///", label="paper"),
        ]
    if isinstance(chance, Mapping):  # a segment over each group named: groups of different metrics
        spans = [(groups.index(g), v) for g, v in chance.items() if g in groups and v is not None and np.isfinite(v)]
        for i, level in spans:
            ax.hlines(level, i - 0.45, i + 0.45, zorder=2.5, **CHANCE_STYLE)
        drawn = bool(spans)
    else:
        drawn = chance is not None and bool(np.isfinite(chance))
        if chance is not None and drawn:
            ax.axhline(chance, zorder=2.5, **CHANCE_STYLE)
    if drawn:
        handles.append(Line2D([], [], label=CHANCE_LABEL, **CHANCE_STYLE))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if ylabel:
        ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title)
    return _finish(fig, path)


@_styled
def recipe_curve(
    candidates: dict[str, dict[str, float]],
    curves: dict[str, Sequence[tuple[float, float]]] | None = None,
    path: str | os.PathLike | None = None,
    metric: str = "shapes10_linear",
) -> Figure:
    """The laptop recipe search (``benchmarks/bench_recipe.py``): ``metric`` against training seconds.

    ``candidates`` maps a recipe name to its figures (``train_seconds``, ``metric``, ``samples_per_s``): one
    labelled point each. ``curves`` maps a recipe to ``(seconds, metric)`` points trained at several budgets:
    one line each.
    """
    if not candidates and not curves:
        raise ValueError("nothing to plot: no candidates and no curves")
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.subplots()
    for i, (name, curve) in enumerate(sorted((curves or {}).items())):
        xs, ys = zip(*sorted(curve))
        ax.plot(xs, [100 * y for y in ys], marker="o", color=f"C{i}", label=f"{name} (budgets)")
    for name, r in candidates.items():
        ax.scatter(r["train_seconds"], 100 * r[metric], color="k", s=14, zorder=3)
        ax.annotate(
            f"{name}\n{r['samples_per_s']:.0f}/s",
            (r["train_seconds"], 100 * r[metric]),
            fontsize=7,
            xytext=(4, 2),
            textcoords="offset points",
        )
    ax.set_xlabel("training seconds on this CPU")
    ax.set_ylabel(f"{metric.replace('_', ' ')} (%)")
    ax.set_title("Laptop recipe search: accuracy against training time")
    if curves:
        ax.legend(loc="lower right")
    return _finish(fig, path)


# --------------------------------------------------------------------------------------------------------------
# semantic consistency of augmentations


@_styled
def consistency_bars(
    table: pd.DataFrame,
    path: str | os.PathLike | None = None,
    title: str | None = "Captions still true after augmentation",
) -> Figure:
    """Grouped bars of ``vlp_lib.data.consistency.consistency_table``: for "caption fully true" and each fact,
    one bar per augmentation (rows of ``table``, in order) with its share in % written on top.

    ``table`` has one row per augmentation and columns ``true`` and the facts (shares in ``[0, 1]``); columns
    ``n`` and ``n_<fact>``, where present, put the number of captions behind each group under its name.
    """
    if table.empty or "true" not in table.columns:
        raise ValueError("table must have a row per augmentation and a 'true' column")
    groups = ["true"] + [c for c in table.columns if c not in ("true", "n") and not str(c).startswith("n_")]
    names = [str(i) for i in table.index]
    width = 0.8 / len(names)
    fig = Figure(figsize=(max(5.0, 1.2 + len(groups) * (0.4 + 0.3 * len(names))), 3.6), layout="constrained")
    ax = fig.subplots()
    ax.grid(axis="x", visible=False)
    for j, (name, row) in enumerate(table.iterrows()):
        xs = np.arange(len(groups)) - 0.4 + width * (j + 0.5)
        values = [100 * float(row[g]) for g in groups]
        bars = ax.bar(xs, values, width, color=f"C{j % 10}", label=str(name))
        ax.bar_label(bars, labels=[f"{v:.0f}" if np.isfinite(v) else "" for v in values], fontsize=7, padding=1)
    labels = []
    for g in groups:
        label = "caption\nfully true" if g == "true" else str(g)
        count = "n" if g == "true" else f"n_{g}"
        if count in table.columns:
            label += f"\n(n={int(table[count].iloc[0])})"
        labels.append(label)
    ax.set_xticks(np.arange(len(groups)), labels=labels)
    for tick in ax.get_xticklabels()[:1]:
        tick.set_fontweight("bold")
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, 110)
    ax.set_ylabel("captions still true (%)")
    ax.set_xlabel("what is checked (n: captions checked)")
    ax.legend(title="augmentation", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if title:
        ax.set_title(title)
    return _finish(fig, path)
