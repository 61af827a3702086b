"""ProtoCLIP (Chen et al.): prototype-level discrimination on top of CLIP, with episodic training.

Per episode (Section III-D), ``on_episode_start``:
  1. feature extraction: projected, L2-normalised image and text representations h^I, h^T of the
     episode's pairs with the training augmentation, in eval mode, without gradients;
  2. K-Means (faiss) on h^I, h^T (and the external teacher's features): prototypes C^I, C^T, C^E and
     each pair's assignment (Eq. 2);
  3. PBT (Eq. 7): the teacher's prototypes translated to within-modal centroids of the student;
then every batch of the episode is trained on (``loss``) with
  L = L_CLIP (Eq. 1) + L_Proto (Eq. 3-4, soft targets Eq. 5) [+ L_Proto^external (Eq. 8)]   (Eq. 6 / 9).

Where the paper is silent, the official code (megvii-research/protoclip, ``src/training/train.py``) decides:
  - the external-teacher term learns from one-hot targets (``teacher_temperature=-1``), whatever tau_y is;
  - InfoNCE-only warm-up episodes (``--infonce-warmup-epoch``, following PCL): L_CLIP alone, at weight 1
    even in the L_Proto-only ablation, since the prototypes of an untrained model carry nothing;
  - the locked-image phase (LiT, IV-A-2): once the image tower's learning rate reaches zero, L_CLIP alone
    at weight 1 tunes the text side (``w_proto = w_proto_external = 0``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vlp_lib import distributed
from vlp_lib.cluster import kmeans
from vlp_lib.config import check_positive_int
from vlp_lib.losses.clip import clip_loss
from vlp_lib.methods.args import MethodArgs
from vlp_lib.methods.base import Batch, Episode, Method, MethodContext
from vlp_lib.models import clamp_logit_scale_
from vlp_lib.papers.protoclip.loss import proto_loss
from vlp_lib.papers.protoclip.prototypes import pbt, soft_targets
from vlp_lib.papers.protoclip.teachers import Teacher, check_teacher, teacher_features


def projection_head(in_dim: int, hidden: int, out: int) -> nn.Sequential:
    """SwAV's 2-layer MLP (ProtoCLIP IV-A-1): Linear -> BatchNorm -> ReLU -> Linear."""
    return nn.Sequential(
        nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True), nn.Linear(hidden, out)
    )


@dataclass(frozen=True)
class ProtoCLIPArgs(MethodArgs):
    """ProtoCLIP's arguments in a run config (``method_kwargs``), with their defaults; ``ProtoCLIP`` describes them.
    ``external_teacher`` names the teacher whose features ``ProtoCLIP.arguments`` computes (``teachers``)."""

    method: ClassVar[str] = "ProtoCLIP"

    head_hidden: int = 512
    head_dim: int = 64
    k: int | None = None
    images_per_prototype: int = 10
    target_temperature: float = 0.0
    use_pbt: bool = True
    clip_weight: float = 1.0
    proto_weight: float = 1.0
    external_teacher: Teacher = "none"
    warmup_episodes: int = 0
    kmeans_iters: int = 20
    kmeans_init: Literal["kmeans++", "random"] = "kmeans++"
    extract_batch_size: int = 512

    def __post_init__(self) -> None:
        tau = self.target_temperature
        if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not math.isfinite(tau):
            raise ValueError(f"target_temperature must be a number (<= 0 for hardmax), got {tau!r}")
        for name in ("images_per_prototype", "head_hidden", "head_dim", "extract_batch_size"):
            check_positive_int(name, getattr(self, name))
        if self.k is not None:
            check_positive_int("k", self.k)
        if self.kmeans_init not in ("kmeans++", "random"):
            raise ValueError(f"kmeans_init must be 'kmeans++' or 'random', got {self.kmeans_init!r}")
        if int(self.kmeans_iters) < 0:
            raise ValueError(f"kmeans_iters must be >= 0, got {self.kmeans_iters!r}")
        if int(self.warmup_episodes) < 0:
            raise ValueError(f"warmup_episodes must be >= 0, got {self.warmup_episodes!r}")
        check_teacher(self.external_teacher)


class ProtoCLIP(Method):
    """ProtoCLIP as a method of the one trainer.

    Args:
        embed_dim: the CLIP model's representation size d_z (input of the projection heads).
        head_hidden, head_dim: projection head sizes (paper: 2048 hidden, d_h = 128 out).
        k: number of prototypes per K-Means; ``None`` derives it as episode size / ``images_per_prototype``.
        images_per_prototype: the paper's default is 10 (K = 20,000 for 200,000 pairs, Fig. 6 (c)).
        target_temperature: tau_y of Eq. 5; <= 0 gives one-hot targets ("hardmax", Fig. 6 (b)).
        use_pbt: Prototype Back Translation (Eq. 7); without it the student is classified against the
            teacher's prototypes directly (Eq. 3 as written), which needs image and text spaces aligned.
        clip_weight / proto_weight: 1 or 0 to ablate L_CLIP or L_Proto (Table X; Fig. 6 (a) drops L_CLIP).
        external_features: the external teacher's (PCA-reduced) features of every training pair, or None.
        warmup_episodes: episodes trained with L_CLIP only before prototypes are used (the official
            ``--infonce-warmup-epoch``). Table I's "40 warm-up episodes" is the learning-rate warm-up.
        kmeans_iters: 20 in the paper; 0 keeps the seeding ("w/o K-Means", Table III).
        kmeans_init: "kmeans++" (this book's default, see ``vlp_lib.cluster.kmeans``) or "random" (faiss's).
    """

    name = "protoclip"
    # across processes: each rank extracts its share of the episode, the features are gathered, rank 0 clusters
    # and broadcasts prototypes and assignments; the heads' BatchNorm sees the global batch (``project``)
    distributed = True
    Args: ClassVar[type[MethodArgs]] = ProtoCLIPArgs

    def __init__(
        self,
        embed_dim: int = 128,
        head_hidden: int = ProtoCLIPArgs.head_hidden,
        head_dim: int = ProtoCLIPArgs.head_dim,
        k: int | None = ProtoCLIPArgs.k,
        images_per_prototype: int = ProtoCLIPArgs.images_per_prototype,
        target_temperature: float = ProtoCLIPArgs.target_temperature,
        use_pbt: bool = ProtoCLIPArgs.use_pbt,
        clip_weight: float = ProtoCLIPArgs.clip_weight,
        proto_weight: float = ProtoCLIPArgs.proto_weight,
        external_features: np.ndarray | None = None,
        warmup_episodes: int = ProtoCLIPArgs.warmup_episodes,
        kmeans_iters: int = ProtoCLIPArgs.kmeans_iters,
        kmeans_init: str = ProtoCLIPArgs.kmeans_init,
        extract_batch_size: int = ProtoCLIPArgs.extract_batch_size,
    ) -> None:
        super().__init__()
        self.image_head = projection_head(embed_dim, head_hidden, head_dim)
        self.text_head = projection_head(embed_dim, head_hidden, head_dim)
        self.proto_logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))  # tau_Proto, learnable (III-A)
        self.k = k
        self.images_per_prototype = images_per_prototype
        self.target_temperature = float(target_temperature)
        self.use_pbt = use_pbt
        self.clip_weight = clip_weight
        self.proto_weight = proto_weight
        self.external = None if external_features is None else torch.as_tensor(np.asarray(external_features)).float()
        self.warmup_episodes = warmup_episodes
        self.kmeans_iters = kmeans_iters
        self.kmeans_init = kmeans_init
        self.extract_batch_size = extract_batch_size
        self.state: dict[str, torch.Tensor] | None = None  # this episode's prototypes and assignments

    @classmethod
    def arguments(cls, args: MethodArgs, context: MethodContext) -> dict[str, Any]:
        """``args`` plus the model's representation size and, for ``external_teacher``, the teacher's features
        of the training captions (Eq. 8: MiniLM standing in for RoBERTa, or the CLIP baseline's text encoder)."""
        kwargs = args.kwargs()
        teacher = check_teacher(kwargs.pop("external_teacher"))
        kwargs["embed_dim"] = int(cast(torch.Tensor, context.model.text_projection).shape[1])  # open_clip CLIP's
        if teacher != "none":
            kwargs["external_features"] = teacher_features(
                teacher, context.config, context.data.captions, context.trained
            )
        return kwargs

    @classmethod
    def check_args(cls, args: MethodArgs, episode_size: int) -> None:
        """What the episode bounds: ``k`` at most the episode, ``images_per_prototype`` leaving a prototype."""
        a = cast(ProtoCLIPArgs, args)
        if a.k is not None:
            if a.k > episode_size:
                raise ValueError(f"k ({a.k}) is larger than the episode ({episode_size} pairs)")
        elif episode_size // a.images_per_prototype < 1:
            raise ValueError(
                f"images_per_prototype ({a.images_per_prototype}) leaves no prototype "
                f"in an episode of {episode_size} pairs"
            )

    def n_prototypes(self, episode_size: int) -> int:
        return self.k if self.k is not None else max(1, episode_size // self.images_per_prototype)

    def project(self, model: Any, images: torch.Tensor, texts: torch.Tensor):  # model: open_clip CLIP (duck-typed)
        """(z^I, z^T) unnormalised representations and (h^I, h^T) = normalised g(z) projections.

        Across processes, in training, the heads run on the whole global batch (every rank's z gathered with
        gradients) and each rank keeps its rows: their BatchNorm then normalises over the batch one process
        would see (``nn.SyncBatchNorm`` does this only on GPUs)."""
        z_i = model.encode_image(images)
        z_t = model.encode_text(texts)
        if self.training and distributed.world().parallel:
            all_i, all_t = distributed.gather_with_grad(z_i.float()), distributed.gather_with_grad(z_t.float())
            rows = slice(*distributed.bounds(len(all_i)))
            h_i, h_t = self.image_head(all_i)[rows], self.text_head(all_t)[rows]
        else:
            h_i, h_t = self.image_head(z_i.float()), self.text_head(z_t.float())
        return z_i, z_t, F.normalize(h_i, dim=-1), F.normalize(h_t, dim=-1)

    @torch.no_grad()
    def extract(self, model: nn.Module, episode: Episode) -> tuple[torch.Tensor, torch.Tensor]:
        """Step 1: h^I, h^T of the whole episode, with the training augmentation, in eval mode (III-D).

        Across processes every rank draws the augmentation of each whole chunk (the episode's stream stays one
        process's), encodes its share of it, and the shares are gathered: every rank ends with all features."""
        was_training = model.training, self.training
        model.eval()
        self.eval()
        h_i, h_t = [], []
        idx = episode.indices
        for a in range(0, len(idx), self.extract_batch_size):
            b = idx[a : a + self.extract_batch_size]
            images = distributed.shard(episode.load_images(b, True))
            texts = distributed.shard(episode.data.tokens[b]).to(images.device)
            # Episode.autocast is typed Callable[[], object]: it returns a context manager (torch.autocast)
            with cast(Any, episode.autocast()):
                _, _, hi, ht = self.project(model, images, texts)
            h_i.append(distributed.gather_rows(hi.float(), len(b)))
            h_t.append(distributed.gather_rows(ht.float(), len(b)))
        model.train(was_training[0])
        self.train(was_training[1])
        return torch.cat(h_i), torch.cat(h_t)

    def cluster(self, h_i: torch.Tensor, h_t: torch.Tensor, indices: np.ndarray, k: int, seed: int) -> tuple:
        """Step 2: K-Means (Eq. 2) of h^I, h^T and the external features: ((C^I, y^I), (C^T, y^T), (C^E, y^E) or
        None). Across processes rank 0 clusters and the others receive its prototypes and assignments."""
        if not distributed.world().is_main:
            return distributed.broadcast(None)
        c_i = kmeans(h_i.cpu().numpy(), k, niter=self.kmeans_iters, seed=seed, init=self.kmeans_init)
        c_t = kmeans(h_t.cpu().numpy(), k, niter=self.kmeans_iters, seed=seed + 1, init=self.kmeans_init)
        ext = None
        if self.external is not None:
            e = self.external[torch.as_tensor(indices)].numpy()
            ext = kmeans(e, k, niter=self.kmeans_iters, seed=seed + 2, init=self.kmeans_init)
        return distributed.broadcast((c_i, c_t, ext))

    def on_episode_start(self, model: nn.Module, episode: Episode) -> None:
        if episode.number < self.warmup_episodes or self.proto_weight == 0 or episode.image_locked:
            self.state = None
            return
        k = self.n_prototypes(len(episode.indices))
        t0 = time.perf_counter()
        h_i, h_t = self.extract(model, episode)
        t1 = time.perf_counter()
        (c_i, y_i), (c_t, y_t), ext = self.cluster(h_i, h_t, episode.indices, k, seed=1_000 * episode.number)
        t2 = time.perf_counter()
        dev = h_i.device
        y_i_t, y_t_t = torch.as_tensor(y_i, device=dev), torch.as_tensor(y_t, device=dev)
        state = {
            # image student, text teacher: targets from C^T (Eq. 5), classifier C^T or its PBT (Eq. 7)
            "teacher_t": torch.as_tensor(c_t, device=dev),
            "labels_t": y_t_t,
            "classifier_i": pbt(h_i, y_t_t, k) if self.use_pbt else torch.as_tensor(c_t, device=dev),
            # text student, image teacher
            "teacher_i": torch.as_tensor(c_i, device=dev),
            "labels_i": y_i_t,
            "classifier_t": pbt(h_t, y_i_t, k) if self.use_pbt else torch.as_tensor(c_i, device=dev),
        }
        if ext is not None:
            # the external space has another dimension: PBT is the only way to use it (III-C-2)
            y_e = torch.as_tensor(ext[1], device=dev)
            state.update(
                {
                    "teacher_e": torch.as_tensor(ext[0], device=dev),
                    "labels_e": y_e,
                    "classifier_e_i": pbt(h_i, y_e, k),
                    "classifier_e_t": pbt(h_t, y_e, k),
                }
            )
        self.state = state
        t3 = time.perf_counter()
        episode.timings.update({"feature_extraction": t1 - t0, "kmeans": t2 - t1, "pbt": t3 - t2})

    def loss(self, model: Any, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:  # open_clip CLIP (duck-typed)
        z_i, z_t, h_i, h_t = self.project(model, batch.images, batch.texts)
        z_i, z_t = F.normalize(z_i, dim=-1), F.normalize(z_t, dim=-1)
        logs: dict[str, float] = {}
        total = torch.zeros((), device=h_i.device)
        prototypes = self.state is not None and not batch.image_locked
        clip_weight = self.clip_weight if prototypes else 1.0  # warm-up episodes and LiT: L_CLIP alone
        if clip_weight:
            l_clip = clip_loss(z_i, z_t, model.logit_scale.exp())
            total = total + clip_weight * l_clip
            logs["loss_clip"] = l_clip.item()
        if prototypes:
            s, pos = self.state, torch.as_tensor(batch.positions, device=h_i.device)
            assert s is not None  # prototypes implies a state
            scale = self.proto_logit_scale.exp()
            tau = self.target_temperature
            y_t = soft_targets(s["teacher_t"], s["labels_t"][pos], tau)
            y_i = soft_targets(s["teacher_i"], s["labels_i"][pos], tau)
            # Eq. 4: image-to-text and text-to-image terms, averaged
            l_proto = (
                proto_loss(h_i, s["classifier_i"], y_t, scale) + proto_loss(h_t, s["classifier_t"], y_i, scale)
            ) / 2
            total = total + self.proto_weight * l_proto
            logs["loss_proto"] = l_proto.item()
            if "teacher_e" in s:
                # one-hot targets, as the official code (teacher_temperature=-1 for the external term)
                y_e = soft_targets(s["teacher_e"], s["labels_e"][pos], 0.0)
                # Eq. 8: both student spaces learn from the external teacher's prototypes
                l_ext = (
                    proto_loss(h_i, s["classifier_e_i"], y_e, scale) + proto_loss(h_t, s["classifier_e_t"], y_e, scale)
                ) / 2
                total = total + self.proto_weight * l_ext
                logs["loss_external"] = l_ext.item()
        logs["logit_scale"] = model.logit_scale.exp().item()
        logs["proto_logit_scale"] = self.proto_logit_scale.exp().item()
        return total, logs

    def after_step(self, model: Any) -> None:  # model: open_clip CLIP (duck-typed)
        clamp_logit_scale_(model.logit_scale)
        clamp_logit_scale_(self.proto_logit_scale)
