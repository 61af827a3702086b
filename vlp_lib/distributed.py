"""Data parallelism across processes: ``torchrun --nproc_per_node N -m vlp_lib.launch CONFIG.json``.

Every process (rank) builds the same data and the same seeded model, takes its contiguous share of each global
batch (``batch_size`` stays the global batch: the contrastive negatives and the learning-rate schedule are those of
one process with that batch), and the ranks keep one model with ``DistributedDataParallel`` (``wrap``): the trainer
wraps the model and the method together in one module whose forward is the method's loss (``train.Step``), so
DDP sees every forward, however a method calls the towers (``encode_image`` / ``encode_text`` directly). Contrastive losses gather the features of every rank with gradients (open_clip's
``ClipLoss`` with ``gather_with_grad`` and ``local_loss``: ``losses.clip``), so each rank's loss sees the global
batch's negatives. Only rank 0 writes checkpoints and results. Backend: NCCL on GPUs, gloo on CPUs.

Measured on this CPU (gloo, 2 processes, smoke CLIP run, 8 steps of global batch 32; ``tests/test_distributed.py``):
with ``vit-tiny`` the final loss differs from one process by 3e-8 and zero-shot, linear probe and retrieval are equal.
On CPUs, models with BatchNorm (the ``rn-*`` presets, RN50) normalise over each rank's share of the batch, as open_clip
does without ``--use-bn-sync``: not the one-process computation (``rn-tiny``: final loss 3.664 vs 3.646); on GPUs
``wrap`` makes it ``SyncBatchNorm``. Methods declare
whether their loss is right across processes (``Method.distributed``: CLIP, ProtoCLIP, PyramidCLIP). ProtoCLIP's episode
(``papers.protoclip.method``): every rank encodes its share of the episode, the features are gathered (``gather_rows``),
rank 0 runs K-Means (faiss; on a GPU when faiss sees one) and broadcasts prototypes and assignments (``broadcast``),
every rank computes PBT from the same gathered features, and the projection heads' BatchNorm runs on the global batch
(``gather_with_grad``); measured as CLIP (``vit-tiny``, 2 episodes of 64 pairs, K = 8): final loss 5.4609191 vs
5.4609196, the largest difference over the loss history 4e-6, L_Proto's 4e-6, equal zero-shot / probe / retrieval.
PyramidCLIP: each softened InfoNCE term scores this rank's rows against the gathered global batch
(``losses.soft.soft_info_nce``); its global + local view terms (``vit-tiny``): final loss within 2e-7, L_LT's history
within 1e-6. Augmentation and a method's extra views (``Batch.view``) are drawn for the whole global batch on every
rank, as in one process, and each rank keeps its share. DIME-FM (``papers.dimefm.loss``): each KL term scores this
rank's rows against the gathered global batch (the student's features with gradients, the teacher's cached features
read per rank and gathered without), the inter-batch pseudo texts read from the whole previous global batch; 2 gloo
processes vs 1 (``vit-tiny``, intra and inter): the loss history within 1.3e-6, L_vl 1.8e-6, L_p-vl 2.4e-7, L_udist
1.2e-7, equal metrics. iCLIP / UniCL (``papers.iclip``): the image-text pairs and the class images split unevenly
across ranks; their shares are gathered with gradients (``gather_uneven``, the counts by ``row_counts``) and each
rank's cross-entropy weighted by its share of the rows; measured at splits like 9|0 and 3|12: the loss history within
3.1e-6, every term within 2.1e-6, equal metrics. ICMLM and TP_* (``papers.icmlm``): per-image terms averaged over a
count that differs by rank (masked tokens, tagged images), reduced over the ranks (``share``), the masked positions
drawn for the global batch; the loss history within 7.2e-7. Dropout is drawn per rank (``train``), so a head with
dropout is not one process's computation, as in open_clip.

One process (no ``torchrun``) is world size 1, and nothing here does anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn


@dataclass(frozen=True)
class World:
    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def parallel(self) -> bool:
        return self.world_size > 1


def world() -> World:
    """This process's rank and the number of processes (``World()`` when not distributed)."""
    if dist.is_available() and dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size())
    return World()


def init_from_env() -> World:
    """Join the process group ``torchrun`` describes (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` ...): NCCL when CUDA
    is available, gloo otherwise; each rank on GPU ``LOCAL_RANK``. Without ``WORLD_SIZE`` > 1: one process."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or (dist.is_available() and dist.is_initialized()):
        return world()
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend)
    return world()


def check_batch(batch_size: int) -> None:
    """``ValueError`` naming ``batch_size`` unless every rank gets the same share of it."""
    w = world()
    if batch_size % w.world_size:
        raise ValueError(f"batch_size ({batch_size}) must be divisible by the number of processes ({w.world_size})")


def bounds(n: int, rank: int | None = None) -> tuple[int, int]:
    """This rank's (or ``rank``'s) contiguous share ``[start, stop)`` of ``n`` rows: ``n // world_size`` each when
    they divide, otherwise sizes differing by at most one (all ``n`` rows in one process)."""
    w = world()
    rank = w.rank if rank is None else rank
    return rank * n // w.world_size, (rank + 1) * n // w.world_size


def shard(rows: Any) -> Any:
    """This rank's contiguous share of a global batch's rows (all of them in one process)."""
    if not world().parallel:
        return rows
    start, stop = bounds(len(rows))
    return rows[start:stop]


def gather_rows(rows: torch.Tensor, n: int) -> torch.Tensor:
    """The ``n`` rows whose shares (``shard``) the ranks hold, in order, on every rank; no gradient. Shares may
    differ in size by one: each is padded to the largest for ``all_gather`` and cut back."""
    w = world()
    if not w.parallel:
        return rows
    size = -(-n // w.world_size)
    padded = rows.new_zeros((size, *rows.shape[1:]))
    padded[: len(rows)] = rows
    parts = [torch.empty_like(padded) for _ in range(w.world_size)]
    dist.all_gather(parts, padded.contiguous())
    shares = [bounds(n, r) for r in range(w.world_size)]
    return torch.cat([part[: stop - start] for part, (start, stop) in zip(parts, shares)])


def gather_with_grad(rows: torch.Tensor) -> torch.Tensor:
    """Every rank's equal share of a batch, concatenated in rank order, with gradients flowing back to each rank's
    own rows (``torch.distributed.nn.all_gather``, as open_clip's ``gather_features``): a batch-global computation
    (a BatchNorm over the whole batch) done on every rank, of which each keeps its share, is the one-process one."""
    if not world().parallel:
        return rows
    import torch.distributed.nn as dist_nn

    return torch.cat(dist_nn.all_gather(rows.contiguous()))


def broadcast(value: Any) -> Any:
    """Rank 0's ``value`` (any picklable object: numpy arrays, tensors on the CPU) on every rank."""
    if not world().parallel:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def wrap(module: nn.Module) -> nn.Module:
    """``module`` under ``DistributedDataParallel`` across processes (``module`` itself in one). DDP broadcasts
    rank 0's parameters and buffers at construction and averages gradients in buckets while backward runs
    (overlapped with it on GPUs): with each rank's loss a mean over its share, the result is the gradient of
    the global batch's mean loss. ``find_unused_parameters``: a method may leave parameters out of some steps
    (ProtoCLIP's heads in its warm-up episodes). On GPUs every BatchNorm becomes ``nn.SyncBatchNorm`` (open_clip's
    ``--use-bn-sync``: the ``rn`` towers normalise over the global batch); it runs on GPUs only, so on CPUs they
    normalise over each rank's share."""
    if not world().parallel:
        return module
    from torch.nn.parallel import DistributedDataParallel

    if next(module.parameters()).is_cuda:
        module = nn.SyncBatchNorm.convert_sync_batchnorm(module)  # same parameters and buffers, new modules
    return DistributedDataParallel(module, find_unused_parameters=True)


def mean(values: dict[str, float]) -> dict[str, float]:
    """The mean over ranks of each logged scalar (the global batch's loss and loss terms), one ``all_reduce``."""
    w = world()
    if not w.parallel:
        return values
    t = torch.tensor([float(v) for v in values.values()], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return {key: float(v) / w.world_size for key, v in zip(values, t.tolist())}


def barrier() -> None:
    if world().parallel:
        dist.barrier()


def share(count: int | torch.Tensor) -> float:
    """The factor turning a mean over this rank's ``count`` items into this rank's share of the global batch's
    mean, when the ranks hold different numbers of items (ICMLM's masked tokens, the images with a tag):
    ``count * world_size / global count``, the global count by one ``all_reduce`` (no gradient; on ``count``'s
    device when it is a tensor, so NCCL reduces it on its GPU). With each rank's loss ``mean * share(count)``,
    i.e. (the sum over its items) / (global count) x world_size, the mean over ranks (DDP's gradient average,
    ``mean`` of the logged terms) is the mean over every item of the global batch. 0.0 when no rank has an item;
    exactly 1.0 in one process and whenever every rank has as many items (the loss is then unchanged, bit for bit)."""
    w = world()
    if not w.parallel:
        return 1.0
    local = torch.as_tensor(count).detach().to(torch.float64).reshape(1).clone()
    total = local.clone()
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return float(local) * w.world_size / float(total) if float(total) else 0.0


def row_counts(counts: list[int], device: torch.device | str = "cpu") -> list[list[int]]:
    """Every rank's ``counts`` (as many on every rank: e.g. how many rows of each kind its share of a batch holds),
    in rank order, by one ``all_gather`` on ``device`` (that of the ranks' tensors: CUDA under NCCL). One process:
    ``[counts]``."""
    w = world()
    if not w.parallel:
        return [list(counts)]
    mine = torch.tensor(counts, dtype=torch.long, device=device)
    parts = [torch.empty_like(mine) for _ in range(w.world_size)]
    dist.all_gather(parts, mine)
    return [part.tolist() for part in parts]


def gather_uneven(rows: torch.Tensor, counts: list[int]) -> torch.Tensor:
    """Every rank's ``rows``, rank ``r`` holding ``counts[r]`` of them (``row_counts``; any number, none included),
    concatenated in rank order on every rank, with gradients flowing back to each rank's own rows as
    ``gather_with_grad`` (a tensor without gradients gathers without). A sub-batch whose shares differ in size from
    rank to rank (iCLIP's image-text pairs beside its class images): each share is padded to the largest for the
    ``all_gather`` and cut back. A collective: every rank calls it, also one that holds no rows. One process:
    ``rows``."""
    w = world()
    if not w.parallel:
        return rows
    if len(rows) != counts[w.rank]:
        raise ValueError(f"rank {w.rank} holds {len(rows)} rows, counts says {counts[w.rank]}")
    import torch.distributed.nn as dist_nn

    size = max(max(counts), 1)  # all_gather of empty tensors is not portable
    padded = torch.cat([rows, rows.new_zeros((size - len(rows), *rows.shape[1:]))])
    return torch.cat([part[:n] for part, n in zip(dist_nn.all_gather(padded), counts)])
