"""ProtoCLIP's prototypes as targets: soft targets (Eq. 5) and Prototype Back Translation (Eq. 7).

One episode (Sec. III-D) clusters both modalities with ``vlp_lib.cluster.kmeans``; the prototypes of one modality
supervise the other through soft targets (Eq. 5) and, with PBT, through within-modal centroids (Eq. 7). The loss
that uses them is ``vlp_lib.papers.protoclip.loss``. As in the paper and the authors' code
(megvii-research/protoclip), Eq. 5 takes dot products of faiss's raw centroids (no normalisation in the text or
the code) and Eq. 7 is a plain mean of the student features.
"""

from __future__ import annotations

import numbers
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F

from vlp_lib.cluster import ArrayLike, check_int, labels_tensor

# --------------------------------------------------------------------------------------------------------------
# soft targets (ProtoCLIP Eq. 5)


def _temperature(temperature: Any) -> float:
    if isinstance(temperature, (torch.Tensor, np.ndarray)) and temperature.ndim == 0:
        temperature = temperature.item()  # a learnable or logged 0-d temperature
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or np.isnan(cast(float, temperature)):
        raise ValueError(f"temperature must be a real number, got {temperature!r}")
    return float(temperature)


def soft_targets(centroids: ArrayLike, labels: ArrayLike, temperature: float) -> ArrayLike:
    """ProtoCLIP Eq. 5: ``y_i = softmax(C c_{labels[i]} / tau_y)``, returned as ``[N, k]``.

    Row i is the target distribution for a sample whose teacher cluster is ``labels[i]``: the softmax over the
    dot products between its prototype and all ``k`` teacher prototypes ``centroids`` ``[k, d]``. Centroids
    are used as given, not re-normalised: Eq. 5 is a plain dot product and the authors' code feeds it faiss's
    raw centroids of L2-normalised features (norms slightly below 1). ``temperature <= 0`` gives the one-hot
    targets of earlier clustering methods (the "hardmax" bar of Fig. 6(b); the code's ``teacher_temperature=-1``);
    the paper's best is tau_y = 0.01 (Sec. IV-D-2).

    Torch in, torch out (same dtype and device); numpy in, numpy out. The result is N x k, so call it per
    batch (N = batch size), as training does, not for a whole episode.
    """
    tau = _temperature(temperature)
    is_torch = isinstance(centroids, torch.Tensor)
    c = centroids if is_torch else torch.from_numpy(np.asarray(centroids))
    if c.ndim != 2:
        raise ValueError(f"centroids must be 2-D [k, d], got shape {tuple(c.shape)}")
    if not c.is_floating_point():
        c = c.float()
    y = labels_tensor(labels, len(labels), len(c), "labels", "labels", c.device)
    if tau <= 0:
        out = F.one_hot(y, len(c)).to(c.dtype)
    else:
        out = torch.softmax(c[y] @ c.T / tau, dim=1)
    return out if is_torch else out.numpy()


# --------------------------------------------------------------------------------------------------------------
# Prototype Back Translation (ProtoCLIP Eq. 7)


def pbt(student_feats: ArrayLike, teacher_labels: ArrayLike, k: int) -> ArrayLike:
    """ProtoCLIP Eq. 7, Prototype Back Translation: ``[k, d]`` within-modal centroids of the teacher's clusters.

    Row j is the mean of the ``student_feats`` ``[N, d]`` whose teacher cluster ``teacher_labels[i]`` is j,
    i.e. c^T_{PBT->I, j} = 1/|I_j| sum_{i in I_j} h^I_i with image features as the student and text clusters as
    the teacher; clusters no sample is assigned to give zero rows, as in the authors' code. The centroids are
    not normalised: Eq. 7 is a plain mean and so is the code (the features themselves are L2-normalised, so
    the norms are <= 1). They replace the teacher prototypes C^T in Eq. 3 (and C^external in Eq. 8).

    One ``index_add_`` and one ``bincount`` instead of the code's loop over clusters. Torch in, torch out (same
    dtype and device; sums accumulate in float32 for half-precision input); numpy in, numpy out.
    """
    k = check_int(k, "k", 1)
    is_torch = isinstance(student_feats, torch.Tensor)
    h = student_feats if is_torch else torch.from_numpy(np.asarray(student_feats))
    if h.ndim != 2:
        raise ValueError(f"student_feats must be 2-D [N, d], got shape {tuple(h.shape)}")
    y = labels_tensor(teacher_labels, len(h), k, "teacher_labels", "student_feats", h.device)
    acc_dtype = h.dtype if h.dtype == torch.float64 else torch.float32
    sums = torch.zeros(k, h.shape[1], dtype=acc_dtype, device=h.device).index_add_(0, y, h.to(acc_dtype))
    counts = torch.bincount(y, minlength=k).clamp_min_(1).to(acc_dtype)
    out = (sums / counts[:, None]).to(h.dtype if h.is_floating_point() else acc_dtype)
    return out if is_torch else out.numpy()
