"""The "world detector": this book's stand-in for PyramidCLIP's frozen VinVL Faster R-CNN (arXiv v1, §3.3, §4.1).

PyramidCLIP feeds its ROI relation branch ``R = {o_1..o_M}``, ``o_m = [o'_m ; z_m]``: a 2048-d ROI-pooled
feature of a frozen, pre-trained detector plus the box ``z_m = (x0, y0, x1, y1)`` normalised, for the ``M = 10``
most confident objects (§3.3, §4.1). Here (this book's stand-in: the world has no VinVL, so a frozen detector of
the world's objects takes its place):

- **Boxes** (``detect_boxes``): the world's ground-truth box of every object (1-3 per image), optionally
  jittered (``jitter``: Gaussian noise on each corner with sigma a fraction of the box's width / height), some
  missed (``miss_rate``), plus a false-positive box on the background / clutter (``false_positive_rate``).
  Every knob is seeded per image.
- **Features** (``CropNet``, ``load_detector``): a small CNN trained once, with supervision, on 16 x 16 crops of
  the objects of a training world with the detector's own seed (``DETECTOR_WORLD_SEED``, never a task or run
  seed), with one head for the shape and one for the colour (24 and 12 classes, read from ``vocab``). Its
  penultimate 64-d feature plus the 4 normalised box coordinates is each ROI's 68-d vector (2052-d in the
  paper). The crop is the *square* around the box (plus a margin), pooled with RoIAlign: unlike Faster R-CNN's
  warping ROI pooling it keeps the aspect ratio, without which square / rectangle cannot be told apart at 16 px.
- **The control** (``load_detector(trained=False)``): the same pipeline with a random-initialised, untrained
  CNN. The trained detector carries supervised shape / colour labels into the ROI branch, as VinVL carries its
  1,848 object classes; the control measures how much of a gain is that label information.
- ``roi_features`` turns a world (or images + boxes) into ``features float32 [N, max_rois, 68]`` and
  ``mask bool [N, max_rois]`` (True = a real ROI; padding rows are zeros), computed once per (world, detector,
  box knobs) and cached by ``vlp_lib.cache.frozen_arrays``. As the paper's detector runs on the original
  image, ROI features are computed once, unaugmented (our reading: the paper does not say whether the detector
  sees the augmented crop; §4.1 runs it once, offline).

The detector itself is cached by ``vlp_lib.cache.frozen_model``: trained once per config and code version
(about 24k crops, a few epochs: seconds on two cores).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torchvision.ops import roi_align

from vlp_lib.cache import frozen_arrays, frozen_model
from vlp_lib.data import vocab
from vlp_lib.data.tasks import TASK_SEED_BASE
from vlp_lib.data.world import MAX_OVERLAP, SIZE_FRACTIONS, generate
from vlp_lib.runs import paper_of_module

PAPER = paper_of_module(__name__)  # whose fingerprint keys what this module caches

# The detector's own worlds: training crops from DETECTOR_WORLD_SEED, held-out crops from DETECTOR_WORLD_SEED + 1.
# Below TASK_SEED_BASE (so never an evaluation image) and far above the run seeds (0, 1, 2, ...).
DETECTOR_WORLD_SEED = 700_000_000
CROP_SIZE = 16
CROP_MARGIN = 0.1  # the square crop's side is max(w, h) * (1 + 2 * CROP_MARGIN)
FEATURE_DIM = 64
BOX_DIM = 4
ROI_DIM = FEATURE_DIM + BOX_DIM  # 68, the paper's 2048 + 4 = 2052
# False-positive boxes: this many candidate positions per image; the free one with the most pixel variance is kept.
FP_CANDIDATES = 32

_MEAN, _STD = 0.5, 0.25  # fixed input normalisation of crops in [0, 1]


# --- validation -----------------------------------------------------------------------------------------------


def _check_int(name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_float(name: str, value: Any, low: float, high: float, high_open: bool = False) -> float:
    ok = (
        not isinstance(value, bool)
        and isinstance(value, (int, float, np.integer, np.floating))
        and np.isfinite(value)
        and low <= float(value)
        and (float(value) < high if high_open else float(value) <= high)
    )
    if not ok:
        raise ValueError(f"{name} must be a number in [{low}, {high}{')' if high_open else ']'}, got {value!r}")
    return float(value)


def _check_images_boxes(images: Any, boxes: Any) -> tuple[np.ndarray, list[np.ndarray]]:
    if not isinstance(images, np.ndarray) or images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
        raise ValueError(
            f"images must be a uint8 array [N, H, W, 3], got "
            f"{getattr(images, 'dtype', type(images).__name__)} {getattr(images, 'shape', '')}"
        )
    if boxes is None or isinstance(boxes, (str, bytes)) or len(boxes) != len(images):
        raise ValueError(
            f"boxes must be a sequence of {len(images)} arrays [m_i, 4] (one per image), "
            f"got {None if boxes is None else len(boxes)}"
        )
    out = []
    for i, b in enumerate(boxes):
        b = np.asarray(b, np.float32)
        if b.ndim != 2 or b.shape[1] != 4 or not np.isfinite(b).all():
            raise ValueError(f"boxes[{i}] must be a finite array [m, 4] (x0, y0, x1, y1), got shape {b.shape}")
        out.append(b)
    return images, out


# --- crops and the crop CNN -------------------------------------------------------------------------------------


def square_boxes(boxes: np.ndarray, margin: float = CROP_MARGIN) -> np.ndarray:
    """The square around each box ``[k, 4]``, side ``max(w, h) * (1 + 2 * margin)``, same centre."""
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
    half = np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]) * (0.5 + margin)
    return np.stack([cx - half, cy - half, cx + half, cy + half], 1)


def crop_rois(
    images: np.ndarray,
    boxes: Sequence[np.ndarray],
    size: int = CROP_SIZE,
    margin: float = CROP_MARGIN,
    chunk: int = 2048,
) -> torch.Tensor:
    """The square crop of every box, RoIAlign-pooled to ``size x size``: float32 ``[K, 3, size, size]`` in
    [0, 1], image by image and box by box (``K = sum(len(b) for b in boxes)``). Outside the image is black."""
    images, boxes = _check_images_boxes(images, boxes)
    size = _check_int("size", size)
    margin = _check_float("margin", margin, 0.0, 1.0)
    out = []
    for start in range(0, len(images), chunk):
        stop = min(start + chunk, len(images))
        counts = [len(b) for b in boxes[start:stop]]
        if not sum(counts):
            continue
        x = torch.from_numpy(np.array(images[start:stop])).permute(0, 3, 1, 2).float().div_(255)
        owner = np.repeat(np.arange(stop - start), counts).astype(np.float32)
        rois = np.concatenate([owner[:, None], square_boxes(np.concatenate(boxes[start:stop]), margin)], 1)
        out.append(
            roi_align(x, torch.from_numpy(rois), output_size=size, spatial_scale=1.0, sampling_ratio=2, aligned=True)
        )
    return torch.cat(out) if out else torch.zeros(0, 3, size, size)


class CropNet(nn.Module):
    """A small CNN over 16 x 16 object crops: three 3x3 conv stages (16 -> 8 -> 4), a 64-d feature (the
    penultimate layer, PyramidCLIP's ``o'_m``, §3.3), and linear heads for shape and colour."""

    def __init__(
        self,
        n_shapes: int = len(vocab.SHAPES),
        n_colours: int = len(vocab.COLOURS),
        width: int = 16,
        feature_dim: int = FEATURE_DIM,
        crop_size: int = CROP_SIZE,
    ):
        super().__init__()

        def conv(cin: int, cout: int) -> list[nn.Module]:
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

        self.body = nn.Sequential(
            *conv(3, width),
            nn.MaxPool2d(2),
            *conv(width, 2 * width),
            *conv(2 * width, 2 * width),
            nn.MaxPool2d(2),
            nn.Flatten(),
        )
        self.embed = nn.Sequential(nn.Linear(2 * width * (crop_size // 4) ** 2, feature_dim), nn.ReLU(inplace=True))
        self.shape_head = nn.Linear(feature_dim, n_shapes)
        self.colour_head = nn.Linear(feature_dim, n_colours)

    def features(self, crops: torch.Tensor) -> torch.Tensor:
        """The 64-d penultimate feature of crops ``[K, 3, 16, 16]`` in [0, 1]."""
        return self.embed(self.body((crops - _MEAN) / _STD))

    def forward(self, crops: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Shape and colour logits."""
        h = self.features(crops)
        return self.shape_head(h), self.colour_head(h)


def _crop_set(n_images: int, seed: int, image_size: int) -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    """Every object's crop in the first ``n_images`` of world ``seed``, with its shape and colour ids."""
    w = generate(n_images, seed, image_size, progress=False)
    objects = np.concatenate(w.objects)
    return crop_rois(w.images, w.boxes), objects[:, 0], objects[:, 1]


@torch.no_grad()
def _embed(net: CropNet, crops: torch.Tensor, batch: int = 4096) -> torch.Tensor:
    net.eval()
    return (
        torch.cat([net.features(crops[i : i + batch]) for i in range(0, len(crops), batch)])
        if len(crops)
        else torch.zeros(0, net.shape_head.in_features)
    )


@torch.no_grad()
def _head_accuracy(net: CropNet, crops: torch.Tensor, shapes: np.ndarray, colours: np.ndarray) -> tuple[float, float]:
    h = _embed(net, crops)
    return (
        float((net.shape_head(h).argmax(1).numpy() == shapes).mean()),
        float((net.colour_head(h).argmax(1).numpy() == colours).mean()),
    )


def _probe_accuracy(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray) -> float:
    """Held-out accuracy of a logistic-regression probe on standardised features (trained and random CNN alike)."""
    from sklearn.linear_model import LogisticRegression

    mu, sd = train_x.mean(0), train_x.std(0) + 1e-6
    clf = LogisticRegression(max_iter=300).fit((train_x - mu) / sd, train_y)
    return float(clf.score((test_x - mu) / sd, test_y))


def _train(
    net: CropNet,
    crops: torch.Tensor,
    shapes: np.ndarray,
    colours: np.ndarray,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
) -> list[float]:
    """Adam on the sum of the two heads' cross-entropies, cosine learning rate; returns each epoch's mean loss."""
    gen = torch.Generator().manual_seed(seed)
    ys, yc = torch.from_numpy(shapes), torch.from_numpy(colours)
    steps = epochs * -(-len(crops) // batch_size)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + np.cos(np.pi * min(s, steps) / steps)))
    losses = []
    net.train()
    for _ in range(epochs):
        order, total = torch.randperm(len(crops), generator=gen), 0.0
        for i in range(0, len(crops), batch_size):
            idx = order[i : i + batch_size]
            s_logits, c_logits = net(crops[idx])
            loss = F.cross_entropy(s_logits, ys[idx]) + F.cross_entropy(c_logits, yc[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        losses.append(round(total / len(crops), 4))
    net.eval()
    return losses


# --- the detector -----------------------------------------------------------------------------------------------


@dataclass
class Detector:
    """A frozen crop CNN (``net``), the config that made it (the cache key of its ROI features) and ``info``:
    held-out accuracies, crop counts, training time and loss."""

    net: CropNet = field(repr=False)
    config: dict[str, Any]
    info: dict[str, Any]

    @property
    def trained(self) -> bool:
        return bool(self.config["trained"])

    @property
    def accuracy(self) -> dict[str, float | None]:
        """Held-out crop accuracy: the heads' (``shape``, ``colour``; None for the untrained control) and a
        linear probe's on the 64-d feature (``probe_shape``, ``probe_colour``), with the chance levels."""
        i = self.info
        return dict(
            shape=i["shape_accuracy"],
            colour=i["colour_accuracy"],
            probe_shape=i["probe_shape_accuracy"],
            probe_colour=i["probe_colour_accuracy"],
            chance_shape=i["chance_shape"],
            chance_colour=i["chance_colour"],
        )

    def describe(self) -> str:
        """One sentence for the book: what the stand-in is and how good it is."""
        i, a = self.info, self.accuracy
        probe = (
            f"a linear probe on its 64-d feature reaches {a['probe_shape']:.1%} / {a['probe_colour']:.1%}"
            if a["probe_shape"] is not None
            else ""
        )
        if self.trained:
            return (
                f"World detector: a {sum(p.numel() for p in self.net.parameters()):,}-parameter CNN trained "
                f"for {self.config['epochs']} epochs on {i['n_train_crops']:,} 16x16 object crops of its own world "
                f"(seed {self.config['world_seed']}) in {i['train_seconds']:.1f} s; on {i['n_test_crops']:,} "
                f"held-out crops it names the shape {a['shape']:.1%} and the colour {a['colour']:.1%} of the time "
                f"(chance {a['chance_shape']:.1%} / {a['chance_colour']:.1%})" + (f"; {probe}." if probe else ".")
            )
        return f"Control detector: the same CNN, random-initialised (seed {self.config['seed']}) and untrained" + (
            f"; {probe} (chance {a['chance_shape']:.1%} / {a['chance_colour']:.1%})." if probe else "."
        )

    @torch.no_grad()
    def embed(self, crops: torch.Tensor) -> torch.Tensor:
        """64-d features of crops ``[K, 3, 16, 16]`` in [0, 1] (``crop_rois``)."""
        return _embed(self.net, crops)


def detector_config(
    trained: bool = True,
    *,
    seed: int = 0,
    train_images: int = 12_000,
    test_images: int = 2_000,
    epochs: int = 3,
    batch_size: int = 256,
    lr: float = 3e-3,
    width: int = 16,
    probe: bool = True,
    world_seed: int = DETECTOR_WORLD_SEED,
    image_size: int = 32,
) -> dict[str, Any]:
    """The validated config of a detector (``load_detector``'s arguments); ``ValueError`` naming a bad one."""
    if not isinstance(trained, (bool, np.bool_)):
        raise ValueError(f"trained must be a bool, got {trained!r}")
    if not isinstance(probe, (bool, np.bool_)):
        raise ValueError(f"probe must be a bool, got {probe!r}")
    world_seed = _check_int("world_seed", world_seed, 0)
    if world_seed + 1 >= TASK_SEED_BASE:
        raise ValueError(
            f"world_seed must be below TASK_SEED_BASE - 1 = {TASK_SEED_BASE - 1} (the detector never "
            f"sees a task image), got {world_seed}"
        )
    config = dict(
        trained=bool(trained),
        seed=_check_int("seed", seed, 0),
        width=_check_int("width", width),
        feature_dim=FEATURE_DIM,
        crop_size=CROP_SIZE,
        crop_margin=CROP_MARGIN,
        n_shapes=len(vocab.SHAPES),
        n_colours=len(vocab.COLOURS),
        world_seed=world_seed,
        image_size=_check_int("image_size", image_size, 8),
        train_images=_check_int("train_images", train_images),
        test_images=_check_int("test_images", test_images),
        probe=bool(probe),
    )
    if trained:
        config.update(
            epochs=_check_int("epochs", epochs),
            batch_size=_check_int("batch_size", batch_size),
            lr=_check_float("lr", lr, 0.0, 1.0),
        )
        if config["lr"] == 0.0:
            raise ValueError("lr must be > 0")
    return config


def load_detector(trained: bool = True, *, verbose: bool = True, **kwargs: Any) -> Detector:
    """The world detector (``trained=True``) or its untrained control, built once and cached (``frozen_model``).

    Keyword arguments (``detector_config``): ``seed`` (initialisation and data order), ``train_images`` /
    ``test_images`` (images of the detector's training / held-out worlds, seeds ``world_seed`` and
    ``world_seed + 1``; about 2 objects, so 2 crops, per image), ``epochs``, ``batch_size``, ``lr``, ``width``
    (of the CNN), ``probe`` (also fit a linear probe of shape and colour on the 64-d feature, for both
    detectors), ``image_size`` of those worlds.

    The trained detector prints its held-out crop accuracy when it is built; ``Detector.accuracy`` and
    ``Detector.describe()`` report it later.

    Raises:
        ValueError naming the parameter, before anything is generated or trained.
    """
    config = detector_config(trained, **kwargs)

    def architecture() -> CropNet:
        torch.manual_seed(config["seed"])
        return CropNet(
            config["n_shapes"], config["n_colours"], config["width"], config["feature_dim"], config["crop_size"]
        )

    def train(net: CropNet) -> dict[str, Any]:
        info: dict[str, Any] = dict(
            n_train_crops=0,
            n_test_crops=0,
            chance_shape=1 / config["n_shapes"],
            chance_colour=1 / config["n_colours"],
            shape_accuracy=None,
            colour_accuracy=None,
            probe_shape_accuracy=None,
            probe_colour_accuracy=None,
            train_seconds=0.0,
            losses=[],
        )
        if not (config["trained"] or config["probe"]):  # the bare random control needs no data
            return info
        train_set = _crop_set(config["train_images"], config["world_seed"], config["image_size"])
        test_set = _crop_set(config["test_images"], config["world_seed"] + 1, config["image_size"])
        info.update(n_train_crops=len(train_set[0]), n_test_crops=len(test_set[0]))
        if config["trained"]:
            start = time.perf_counter()
            info["losses"] = _train(
                net, *train_set, config["epochs"], config["batch_size"], config["lr"], config["seed"]
            )
            info["train_seconds"] = round(time.perf_counter() - start, 2)
            info["shape_accuracy"], info["colour_accuracy"] = _head_accuracy(net, *test_set)
        net.eval()
        if config["probe"]:
            n = min(len(train_set[0]), 5000)  # a subset keeps the probe to about a second
            tr, te = _embed(net, train_set[0][:n]).numpy(), _embed(net, test_set[0]).numpy()
            info["probe_shape_accuracy"] = _probe_accuracy(tr, train_set[1][:n], te, test_set[1])
            info["probe_colour_accuracy"] = _probe_accuracy(tr, train_set[2][:n], te, test_set[2])
        if verbose:
            print(f"[detector] {Detector(net, config, info).describe()}", flush=True)
        return info

    name = "world-detector" if config["trained"] else "world-detector-random"
    # frozen_model builds with ``architecture`` and trains with ``train``: the module is a CropNet
    train_module = cast("Callable[[nn.Module], dict[str, Any]]", train)
    net, info = frozen_model(name, config, architecture, train_module, verbose=verbose, paper=PAPER)
    return Detector(net=cast(CropNet, net), config=config, info=info)


# --- boxes ------------------------------------------------------------------------------------------------------


def _overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection of each box of ``a [k, 4]`` with each of ``b [l, 4]``, as a fraction of the smaller box's
    area: ``[k, l]`` (the world's own overlap measure, ``MAX_OVERLAP``)."""
    a, b = np.asarray(a, np.float32).reshape(-1, 1, 4), np.asarray(b, np.float32).reshape(1, -1, 4)
    iw = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    ih = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    return iw * ih / np.maximum(np.minimum(area_a, area_b), 1e-6)


def _false_positive(image: np.ndarray, true: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A square box of the world's smallest object size on the background: among ``FP_CANDIDATES`` random
    positions, those overlapping no true box by more than the world's ``MAX_OVERLAP``, the one whose pixels vary
    most (what a detector fires on: clutter strokes, texture). Dense scenes may leave no such spot (about 30% of
    3-object scenes at 32 px): then the least-overlapping candidate."""
    h, w = image.shape[:2]
    side = SIZE_FRACTIONS[0] * min(h, w)
    x0, y0 = rng.uniform(0, w - side, FP_CANDIDATES), rng.uniform(0, h - side, FP_CANDIDATES)
    cands = np.stack([x0, y0, x0 + side, y0 + side], 1).astype(np.float32)
    worst = _overlap(cands, true).max(1) if len(true) else np.zeros(FP_CANDIDATES, np.float32)
    ok = worst <= MAX_OVERLAP
    if not ok.any():
        return cands[int(worst.argmin())]
    score = [
        image[int(c[1]) : int(np.ceil(c[3])), int(c[0]) : int(np.ceil(c[2]))].std() if k else -1.0
        for c, k in zip(cands, ok)
    ]
    return cands[int(np.argmax(score))]


def _box_knobs(jitter: Any, miss_rate: Any, false_positive_rate: Any, seed: Any) -> dict[str, Any]:
    """``detect_boxes``'s noise knobs, validated (``ValueError`` naming a bad one)."""
    return dict(
        jitter=_check_float("jitter", jitter, 0.0, 1.0),
        miss_rate=_check_float("miss_rate", miss_rate, 0.0, 1.0, high_open=True),
        false_positive_rate=_check_float("false_positive_rate", false_positive_rate, 0.0, 1.0),
        seed=_check_int("seed", seed, 0),
    )


def detect_boxes(
    images: np.ndarray,
    boxes: Sequence[np.ndarray],
    *,
    jitter: float = 0.0,
    miss_rate: float = 0.0,
    false_positive_rate: float = 0.0,
    seed: int = 0,
) -> list[np.ndarray]:
    """The stand-in detector's boxes: the ground-truth ``boxes`` with noise (module docstring).

    Per image ``i``, with its own generator ``default_rng([seed, i])`` (so a world's prefix gets the same boxes):

    - ``jitter`` (>= 0, at most 1): each of ``x0, x1`` moves by ``N(0, (jitter * w)^2)`` and each of ``y0, y1``
      by ``N(0, (jitter * h)^2)`` (``w, h`` the true box's size); the box is then clipped to the image and
      kept at least 1 px wide and high.
    - ``miss_rate`` in [0, 1): each object is missed independently with this probability, except that an image
      whose every object was missed keeps its first (primary, largest) one: every image has at least one ROI.
    - ``false_positive_rate`` in [0, 1]: with this probability the image gets one false-positive box, a square
      of the smallest object size on its background (``_false_positive``), after the true ones.

    Returns:
        One float32 array ``[m'_i, 4]`` per image, true detections first (in the world's object order), then
        the false positive; ``roi_features`` keeps the first ``max_rois``, so false positives go first.

    Raises:
        ValueError naming the parameter, before any box is drawn.
    """
    images, boxes = _check_images_boxes(images, boxes)
    jitter, miss_rate, false_positive_rate, seed = _box_knobs(jitter, miss_rate, false_positive_rate, seed).values()
    if jitter == miss_rate == false_positive_rate == 0.0:
        return [b.copy() for b in boxes]
    h, w = images.shape[1:3]
    out = []
    for i, true in enumerate(boxes):
        rng = np.random.default_rng([seed, i])
        det = true.copy()
        if jitter and len(det):
            size = np.concatenate([det[:, 2:] - det[:, :2]] * 2, 1)  # (w, h, w, h)
            det = det + rng.normal(0.0, 1.0, det.shape).astype(np.float32) * jitter * size
            det[:, [0, 2]] = np.clip(det[:, [0, 2]], 0, w)
            det[:, [1, 3]] = np.clip(det[:, [1, 3]], 0, h)
            lo, hi = np.minimum(det[:, :2], det[:, 2:]), np.maximum(det[:, :2], det[:, 2:])
            centre, half = (lo + hi) / 2, np.maximum((hi - lo) / 2, 0.5)
            centre = np.clip(centre, half, np.array([w, h], np.float32) - half)
            det = np.concatenate([centre - half, centre + half], 1).astype(np.float32)
        if miss_rate and len(det):
            keep = rng.random(len(det)) >= miss_rate
            keep[0] |= not keep.any()
            det = det[keep]
        if false_positive_rate and rng.random() < false_positive_rate:
            det = np.concatenate([det, _false_positive(images[i], true, rng)[None]])
        out.append(det.astype(np.float32))
    return out


# --- ROI features -----------------------------------------------------------------------------------------------


def _content_hash(images: np.ndarray, boxes: Sequence[np.ndarray]) -> str:
    """A hash of the pixels and boxes: the ROI features' cache key (a world of 10k 32 px images: ~50 ms)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr(images.shape).encode())
    for start in range(0, len(images), 8192):
        h.update(np.ascontiguousarray(images[start : start + 8192]).data)
    h.update(np.asarray([len(b) for b in boxes], np.int64).tobytes())
    h.update(np.concatenate(boxes).astype(np.float32).tobytes() if len(boxes) else b"")
    return h.hexdigest()


def roi_features(
    source: Any,
    detector: Detector,
    *,
    boxes: Sequence[np.ndarray] | None = None,
    max_rois: int = 3,
    jitter: float = 0.0,
    miss_rate: float = 0.0,
    false_positive_rate: float = 0.0,
    noise_seed: int = 0,
    cache: bool = True,
    verbose: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """PyramidCLIP's ROI sequence ``R`` (§3.3) for every image: ``[o'_m ; z_m]`` per detected object.

    Args:
        source: a ``World`` (its ``images`` and ``boxes``) or a uint8 array ``[N, H, W, 3]`` with ``boxes``.
        detector: ``load_detector(...)`` (trained or the random control).
        boxes: ground-truth boxes per image ``[m_i, 4]`` in pixels, only with an array ``source``.
        max_rois: ROI slots per image (the paper's M = 10; the world has at most 3 objects).
        jitter, miss_rate, false_positive_rate, noise_seed: box noise (``detect_boxes``; ``noise_seed`` is its
            ``seed``).
        cache: store / load the result with ``teachers.frozen_arrays`` (keyed by the detector's config, a hash
            of the pixels and boxes, and these knobs).

    Returns:
        ``features`` float32 ``[N, max_rois, 68]``: the detector's 64-d crop feature, then the box
        ``(x0 / W, y0 / H, x1 / W, y1 / H)``; padding rows are zeros. ``mask`` bool ``[N, max_rois]``: True for a
        real ROI (every image has at least one).

    Raises:
        ValueError naming the parameter, before anything is computed.
    """
    if boxes is None and hasattr(source, "images") and hasattr(source, "boxes"):
        images, boxes = source.images, source.boxes
    elif boxes is not None and hasattr(source, "boxes"):
        raise ValueError("boxes must be None when source is a World (its own boxes are used)")
    else:
        images = source
    images, boxes = _check_images_boxes(images, boxes)
    if not isinstance(detector, Detector):
        raise ValueError(f"detector must be a Detector (load_detector), got {type(detector).__name__}")
    max_rois = _check_int("max_rois", max_rois)
    try:
        knobs = _box_knobs(jitter, miss_rate, false_positive_rate, noise_seed)
    except ValueError as err:  # the knob is called noise_seed here
        raise ValueError(str(err).replace("seed must", "noise_seed must", 1)) from None

    def build() -> dict[str, np.ndarray]:
        detections = [d[:max_rois] for d in detect_boxes(images, boxes, **knobs)]
        crops = crop_rois(images, detections, detector.config["crop_size"], detector.config["crop_margin"])
        feats = detector.embed(crops).numpy()
        h, w = images.shape[1:3]
        z = np.concatenate(detections) / np.array([w, h, w, h], np.float32) if len(feats) else np.zeros((0, 4))
        counts = np.array([len(d) for d in detections])
        mask = np.arange(max_rois)[None, :] < counts[:, None]
        out = np.zeros((len(images), max_rois, ROI_DIM), np.float32)
        out[mask] = np.concatenate([feats, z], 1)
        return dict(features=out, mask=mask)

    if not cache:
        result = build()
    else:
        config = dict(detector=detector.config, data=_content_hash(images, boxes), max_rois=max_rois, **knobs)
        result = frozen_arrays("roi-features", config, build, verbose=verbose, paper=PAPER)
    return result["features"], result["mask"]
