"""This machine's speed for a ProtoCLIP plan, measured in seconds before any run (``calibrate_rates``), and the
wall time of one run from it (``run_seconds``): the Fig. 6 ablation prints its time estimate from them before it
trains anything (``book.ablation.estimate_seconds``). Nothing here is stored: the rates are timings of a few steps
of the real code, kept for the process.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import TYPE_CHECKING, cast

import numpy as np
import torch

from vlp_lib.cluster import kmeans, kmeanspp_init
from vlp_lib.config import check_positive_int
from vlp_lib.data import tasks as task_lib
from vlp_lib.data.paired import PairedData, from_world
from vlp_lib.data.training import make_tokenizer
from vlp_lib.data.world import generate
from vlp_lib.methods import create_method
from vlp_lib.models import create_model
from vlp_lib.papers.protoclip.method import ProtoCLIPArgs
from vlp_lib.papers.protoclip.teachers import check_teacher
from vlp_lib.sentence_encoder import PCA_DIM
from vlp_lib.suite import evaluate_suite
from vlp_lib.train import TrainConfig, train

if TYPE_CHECKING:  # the run config imports the method registry, which imports this paper's method
    from vlp_lib.run_config import RunConfig

CALIBRATION_KMEANS_POINTS = 8_192
CALIBRATION_IMAGES = 256  # rendered for the calibration (paper-scale 224 px images render slowly)
_CALIBRATIONS: dict[str, dict[str, float]] = {}


def calibrate_rates(config: RunConfig, steps: int = 8, evaluation: bool = True) -> dict[str, float]:
    """This machine's rates for the run ``config`` (an ``experiment.make_config`` config), measured in a few seconds
    and cached per process, for ``estimate_seconds``:

    - ``world_images_per_s``: rendering ``CALIBRATION_IMAGES`` images of the run's world (one process, times the
      two workers ``generate`` uses for a large world);
    - ``train``: samples/s of ``steps`` training steps of the run's model and method with its augmentation
      (``train.train`` on ``steps x batch_size`` pairs, those images repeated, as one episode, after a one-step
      warm-up call);
    - ``extract`` (ProtoCLIP): samples/s of that episode's feature extraction (``ProtoCLIP.extract``, timed by
      the method itself);
    - ``kmeans_products_per_s`` / ``kmeans_seeding_products_per_s`` (ProtoCLIP): point x centroid x dimension
      products per second of one Lloyd iteration (10 iterations of ``cluster.kmeans``) / of the k-means++ seeding
      (``cluster.kmeanspp_init``; ``inf`` for faiss's random seeding), on random unit vectors at the run's
      episode size (at most ``CALIBRATION_KMEANS_POINTS`` points, as many points per prototype as the run) and
      its ``head_dim``;
    - ``eval_s``: one ``evaluate_suite`` of the calibration model at the run's evaluation settings (an untrained
      model's probes converge in about as many iterations as a trained one's). The task sets are generated and
      cached first, untimed, as the first real run would otherwise do. 0 with ``evaluation=False``.
    """
    steps = check_positive_int("steps", steps)
    key_fields: tuple[str, ...] = (
        "model",
        "image_size",
        "batch_size",
        "context_length",
        "method",
        "method_kwargs",
        "augmentation",
        "precision",
        "device",
        "world_knobs",
        "world_seed",
        "train_size",
        "episode_size",
        "lr",
    )
    if evaluation:
        key_fields += ("scale", "eval_tasks", "task_train", "task_test", "retrieval_images")
    record = config.to_dict()
    key = json.dumps([{k: record.get(k) for k in key_fields}, steps, evaluation], sort_keys=True, default=str)
    if key in _CALIBRATIONS:
        return dict(_CALIBRATIONS[key])

    batch = int(config.train.batch_size)
    n = steps * batch
    rendered = min(n, CALIBRATION_IMAGES)
    t0 = time.perf_counter()
    world = generate(
        rendered,
        seed=config.world_seed,
        image_size=config.image_size,
        workers=1,
        progress=False,
        cache=False,
        **config.world_knobs,
    )
    rates = {"world_images_per_s": rendered / (time.perf_counter() - t0) * max(1, min(2, os.cpu_count() or 1))}
    tokenizer = make_tokenizer(config)
    pairs = from_world(world, tokenizer)
    tile = np.arange(n) % rendered  # the images repeat: a step's time does not depend on what they show
    data = PairedData(pairs.images[tile], [pairs.captions[i] for i in tile], pairs.tokens[torch.as_tensor(tile)])
    model = create_model(
        config.model,
        tokenizer.vocab_size,
        tokenizer.context_length,
        image_size=config.image_size,
        seed=config.seed,
    )
    kwargs = config.method_args.kwargs()
    teacher = check_teacher(kwargs.pop("external_teacher", "none"))
    proto = config.method == "protoclip"
    if proto:
        kwargs.update(embed_dim=int(model.text_projection.shape[1]), warmup_episodes=0)  # cluster at once
        if kwargs.get("k"):
            kwargs["k"] = min(kwargs["k"], batch)
        if teacher != "none":  # the teacher's features are cached once per world; only their K-Means costs time
            e = np.random.default_rng(0).standard_normal((n, PCA_DIM)).astype(np.float32)
            kwargs["external_features"] = e / np.linalg.norm(e, axis=1, keepdims=True)
    method = create_method(config.method, **kwargs)

    def train_cfg(epochs: float, episode: int | None) -> TrainConfig:
        return TrainConfig(
            epochs=epochs,
            batch_size=batch,
            episode_size=episode,
            lr=config.train.lr,
            warmup_steps=1,
            augmentation=config.train.augmentation,
            precision=config.train.precision,
            device=config.train.device,
            progress=False,
        )

    train(model, method, data, train_cfg(batch / n, batch))  # warm-up: one step, allocations and kernels
    timed = train(model, method, data, train_cfg(1.0, None))  # one episode of ``steps`` steps
    rates["train"] = n / timed.timings["training"]
    if proto:
        rates["extract"] = n / timed.timings["feature_extraction"]
        args = cast(ProtoCLIPArgs, config.method_args)
        episode = config.episode_size
        points = min(episode, CALIBRATION_KMEANS_POINTS)
        k = args.k or max(1, episode // args.images_per_prototype)
        k = max(1, min(points, round(k * points / episode)))
        d = int(args.head_dim)
        x = np.random.default_rng(0).standard_normal((points, d)).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        products = float(points) * k * d
        kmeans(x[: max(k, 2)], max(1, k // 10), niter=1, seed=0, init="random")  # warm-up: threads, allocations
        iters = 10
        t0 = time.perf_counter()
        kmeans(x, k, niter=iters, seed=0, init="random")  # Lloyd's iterations (random seeding costs nothing)
        rates["kmeans_products_per_s"] = products * iters / max(time.perf_counter() - t0, 1e-9)
        if args.kmeans_init == "kmeans++":
            t0 = time.perf_counter()
            kmeanspp_init(x, k, seed=0)
            rates["kmeans_seeding_products_per_s"] = products / max(time.perf_counter() - t0, 1e-9)
        else:
            rates["kmeans_seeding_products_per_s"] = math.inf
    rates["eval_s"] = 0.0
    if evaluation:
        ev = config.eval
        for name in ev.tasks:  # generated and cached once, untimed: the runs will find them cached
            for split, size in (("train", ev.task_train), ("test", ev.task_test)):
                task_lib.load_task(name, split, n=size, scale=ev.scale)
        task_lib.load_retrieval(n_images=ev.retrieval_images, scale=ev.scale)
        t0 = time.perf_counter()
        evaluate_suite(model, tokenizer, ev)
        rates["eval_s"] = time.perf_counter() - t0
    _CALIBRATIONS[key] = rates
    return dict(rates)


def run_seconds(config: RunConfig, rates: dict[str, float]) -> float:
    """Wall time of one run from ``rates`` (``calibrate_rates``): its training steps, and for ProtoCLIP, every
    clustering episode's feature extraction and K-Means (image, text and the teacher's, seeding plus
    ``kmeans_iters`` Lloyd iterations of N x K x d products), plus one evaluation."""
    n, e, batch = config.train_size, config.episode_size, config.train.batch_size
    episodes = max(1, round(config.train.epochs * n / e))
    seconds = episodes * (e // batch) * batch / rates["train"] + rates["eval_s"]
    if config.method != "protoclip":
        return seconds
    kw = cast(ProtoCLIPArgs, config.method_args)
    clustering = max(0, episodes - int(kw.warmup_episodes)) if kw.proto_weight else 0
    k = kw.k or max(1, e // kw.images_per_prototype)
    dims = 2 * int(kw.head_dim) + (PCA_DIM if kw.external_teacher != "none" else 0)
    products = float(e) * k * dims
    per_episode = (
        e / rates["extract"]
        + products * int(kw.kmeans_iters) / rates["kmeans_products_per_s"]
        + products / rates["kmeans_seeding_products_per_s"]
    )
    return seconds + clustering * per_episode
