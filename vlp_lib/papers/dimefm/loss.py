"""DIME-FM's distillation losses (Sun et al., ICCV 2023), transcribed from the official training code.

The main paper's equations were not available to us (only its supplement), so every function here
follows ``sunxm2357/DIME-FM`` ``Training/utils/utils.py`` (``get_loss``, ``compute_kl_loss``) and
``Training/utils/split_network.py`` (``set_logit_scale``). A step sees B student images with their frozen,
pre-extracted teacher image features and an *unpaired* batch of teacher text features (the student's text tower
*is* the teacher's, so ``student_text_feat = teacher_text_feat``). All logits are cosine similarities times a
**fixed** scale of 100 (``scaled_logits``), and every term is the same row-wise distillation KL (``kl_distill``)
between a teacher and a student logit matrix:

- ``vl_loss`` (L_vl, T = 1): image->text plus text->image KL on (teacher image, teacher text) vs (student image,
  teacher text) logits;
- ``pvl_loss`` (L_p-vl, T = 3): teacher image features of a batch stand in for texts ("pseudo texts"), one
  direction times 2;
- ``udist_loss`` (L_udist, T = 7): the student's image-image similarities distil the teacher's, one direction
  times 2; it preserves the uni-modal geometry.

``dimefm_loss`` weighs them as L = (1 - lambda1) L_vl + lambda1 L_p-vl + lambda2 L_udist, the form of the
supplement's "Eq. 6" as inferred in the chapter spec (Supp G sweeps lambda1 from 0 to 1, where L_p-vl "totally
replaces" L_vl); the code's weights 0.7 / 0.3 / 0 are lambda1 = 0.3, lambda2 = 0.

Supp A.1's "mu^vl = 100, mu^p-vl = 33.3, mu^udist = 14.3" are the effective logit scales 100 / T for the code's
temperatures T = 1, 3, 7, not loss weights. ``compute_kl_loss`` has **no T^2 factor** (Hinton et al.'s KD
multiplies by T^2 to keep gradient magnitudes comparable across temperatures), so at large T a term shrinks
like 1 / T^2; neither do we rescale.

Across processes (``vlp_lib.distributed``) every KL row is a sample of the global batch and its columns are the whole
global batch, as in one process: each rank passes its share of the batch, the terms gather the teacher's features
without gradient and the student's with (``gather_with_grad``), and each rank distils its own rows only (L_vl: its
images against every text and its texts against every image), so each rank's KL is the mean over its rows, the ranks'
mean is the one-process loss, and DDP's gradient average is its gradient. Pseudo texts are passed whole (the same on
every rank). In one process nothing is gathered and the numbers are bit for bit those of before. Measured on this CPU
(``tests/test_distributed_dimefm.py``: a fixed batch of 16 images and 24 texts on 2 gloo ranks): L_vl and L_p-vl
equal to one process, L_udist within 2.4e-7, the total (~110 on these random features) within one float32 rounding
(7.6e-6), the student's gradients within 1e-6 (of up to 12).
"""

from __future__ import annotations

import math
from numbers import Real

import torch
import torch.nn.functional as F

from vlp_lib import distributed

# split_network.set_logit_scale: create_logits(x1, x2, logit_scale=100), fixed, not learned
LOGIT_SCALE = 100.0
# opts.py defaults t_vl, t_pvl, t_udist (Supp A.1: mu = 100 / T = 100, 33.3, 14.3)
TEMPERATURES = (1.0, 3.0, 7.0)


def _is_number(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def _check_positive(value: float, name: str) -> float:
    if not _is_number(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_lambdas(lambda1: float, lambda2: float) -> None:
    """``ValueError`` naming ``lambda1`` (the L_p-vl weight, in [0, 1]) or ``lambda2`` (the L_udist weight, finite
    and >= 0): the loss checks them at every call, the DIME-FM method once before any compute."""
    if not _is_number(lambda1) or not 0.0 <= lambda1 <= 1.0:
        raise ValueError(f"lambda1 must lie in [0, 1], got {lambda1!r}")
    if not _is_number(lambda2) or lambda2 < 0:
        raise ValueError(f"lambda2 must be a finite number >= 0, got {lambda2!r}")


def _check_features(x: torch.Tensor, name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must be 2-D [N, D] with N, D > 0, got shape {tuple(x.shape)}")


def _check_same_dim(x: torch.Tensor, name: str, ref: torch.Tensor, ref_name: str) -> None:
    if x.shape[1] != ref.shape[1]:
        raise ValueError(f"{name} has feature dimension {x.shape[1]} but {ref_name} has {ref.shape[1]}")


def _check_student(teacher_image: torch.Tensor, student_image: torch.Tensor) -> None:
    _check_features(teacher_image, "teacher_image")
    _check_features(student_image, "student_image")
    if student_image.shape != teacher_image.shape:
        raise ValueError(
            f"student_image must have the shape of teacher_image {tuple(teacher_image.shape)} (the same images), "
            f"got {tuple(student_image.shape)}"
        )


def _all_rows(features: torch.Tensor) -> torch.Tensor:
    """Every rank's equal share of a batch's (teacher) features in rank order, without gradient: the columns a
    rank's rows are scored against (``distributed.gather_rows``; ``features`` itself in one process)."""
    return distributed.gather_rows(features.detach(), len(features) * distributed.world().world_size)


def _own_rows(n: int) -> slice:
    """This rank's rows of a gathered batch of ``n`` (all of them in one process)."""
    return slice(*distributed.bounds(n))


def scaled_logits(a: torch.Tensor, b: torch.Tensor, scale: float = LOGIT_SCALE) -> torch.Tensor:
    """Cosine logits ``scale * a_hat @ b_hat.T``, ``[N, M]`` for ``a`` ``[N, D]`` and ``b`` ``[M, D]``.

    ``split_network.set_logit_scale``'s ``create_logits``: both sides L2-normalised, then multiplied by a fixed
    ``logit_scale = 100`` (the learned CLIP scale is commented out there). Its second output, ``logits_per_x2``,
    is ``scaled_logits(b, a)``, the transpose.
    """
    _check_features(a, "a")
    _check_features(b, "b")
    _check_same_dim(b, "b", a, "a")
    scale = _check_positive(scale, "scale")
    return scale * F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T


def kl_distill(teacher_logits: torch.Tensor, student_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Row-wise distillation KL: ``KLDivLoss(reduction="batchmean")(log_softmax(s / T, 1), softmax(t / T, 1))``.

    ``utils.compute_kl_loss``: ``(1/B) sum_i sum_j p^t_ij (log p^t_ij - log p^s_ij)`` with ``p^t = softmax(t / T)``
    the target (teacher) and ``p^s = softmax(s / T)`` the student, B the number of rows. There is **no T^2
    factor**. The teacher side is detached (it is a constant of the step: pre-extracted features in the code).
    Diagonals are not masked. Teacher probabilities that underflow to 0 (logit gaps of ~100 / T) add exactly 0.
    """
    temperature = _check_positive(temperature, "temperature")
    if teacher_logits.ndim != 2:
        raise ValueError(f"teacher_logits must be 2-D [B, C], got shape {tuple(teacher_logits.shape)}")
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(
            f"student_logits must have the shape of teacher_logits {tuple(teacher_logits.shape)}, "
            f"got {tuple(student_logits.shape)}"
        )
    target = F.softmax(teacher_logits.detach() / temperature, dim=1)
    log_input = F.log_softmax(student_logits / temperature, dim=1)
    return F.kl_div(log_input, target, reduction="batchmean")


def vl_loss(
    teacher_image: torch.Tensor,
    student_image: torch.Tensor,
    teacher_text: torch.Tensor,
    temperature: float = TEMPERATURES[0],
) -> torch.Tensor:
    """L_vl: image->text plus text->image distillation of the teacher's vision-language scores.

    ``get_loss``: ``KL_T(100 t_img t_txt^T, 100 s_img t_txt^T) + KL_T(100 t_txt t_img^T, 100 t_txt s_img^T)``,
    T = ``t_vl`` = 1 (effective scale mu^vl = 100, Supp A.1). The student's texts are the teacher's
    (``student_text_feat = teacher_text_feat``). Images ``[B, D]`` and texts ``[M, D]`` are independent, unpaired
    batches, possibly of different sizes: the loss matches whole score distributions, no diagonal is assumed.
    Teacher features get no gradient.
    """
    temperature = _check_positive(temperature, "temperature")
    _check_student(teacher_image, student_image)
    _check_features(teacher_text, "teacher_text")
    _check_same_dim(teacher_text, "teacher_text", teacher_image, "teacher_image")
    # across processes each rank distils its own rows of both directions: its images against every text (a row
    # block of the global batch's [B, M] logits) and its texts against every image (a column block); the whole
    # matrix is formed from the gathered features (the student's with gradients), as many products as the two
    # blocks at 2 ranks, and in one process the blocks are the whole matrices: the computation as before
    all_t_img, all_t_txt = _all_rows(teacher_image), _all_rows(teacher_text)
    teacher_i2t = scaled_logits(all_t_img, all_t_txt)
    student_i2t = scaled_logits(distributed.gather_with_grad(student_image), all_t_txt)
    images, texts = _own_rows(len(all_t_img)), _own_rows(len(all_t_txt))
    image_to_text = kl_distill(teacher_i2t[images], student_i2t[images], temperature)
    text_to_image = kl_distill(teacher_i2t[:, texts].T, student_i2t[:, texts].T, temperature)
    return image_to_text + text_to_image


def pvl_loss(
    teacher_image: torch.Tensor,
    student_image: torch.Tensor,
    temperature: float = TEMPERATURES[1],
    pseudo_texts: torch.Tensor | None = None,
) -> torch.Tensor:
    """L_p-vl: pseudo vision-language score distillation, ``2 * KL_T(100 t_img u^T, 100 s_img u^T)``.

    ``get_loss`` with ``--use_pvl_loss``: the teacher's image features serve as pseudo text features u, T =
    ``t_pvl`` = 3 (mu^p-vl = 100 / 3 = 33.3, Supp A.1); one direction only, times 2 to match the two directions of
    L_vl. ``pseudo_texts=None`` is the code's and the paper's kept "intra-batch" version: u = ``teacher_image`` of
    the same batch. Then the target's diagonal is the teacher's self-similarity (the maximal logit 100 / T =
    33.3), so each target row peaks on its own teacher image feature: the student feature is taught to retrieve
    its own teacher image among the batch's. Pass another batch's teacher image features ``[M, D]`` as
    ``pseudo_texts`` for the "inter-batch" version of Supp G (the chapter uses the previous step's batch); there
    no target row has a self-similarity peak. Teacher features and pseudo texts get no gradient.
    """
    temperature = _check_positive(temperature, "temperature")
    _check_student(teacher_image, student_image)
    t_img = teacher_image.detach()
    if pseudo_texts is None:
        u = _all_rows(t_img)  # across processes: this rank's rows against the whole batch's teacher features
    else:
        _check_features(pseudo_texts, "pseudo_texts")
        _check_same_dim(pseudo_texts, "pseudo_texts", teacher_image, "teacher_image")
        u = pseudo_texts.detach()
    return 2.0 * kl_distill(scaled_logits(t_img, u), scaled_logits(student_image, u), temperature)


def udist_loss(
    teacher_image: torch.Tensor,
    student_image: torch.Tensor,
    temperature: float = TEMPERATURES[2],
) -> torch.Tensor:
    """L_udist: uni-modal distance preservation, ``2 * KL_T(100 t_img t_img^T, 100 s_img s_img^T)``.

    ``get_loss`` with ``--use_udist_loss``: the student's image-image similarity rows distil the teacher's,
    T = ``t_udist`` = 7 (mu^udist = 100 / 7 = 14.3, Supp A.1), one direction times 2. Both diagonals are the
    self-similarities (100 / T), so the rows match in their off-diagonal shape: the geometry of the teacher's
    image space. The student side appears twice and gets gradient through both; the teacher none.
    """
    temperature = _check_positive(temperature, "temperature")
    _check_student(teacher_image, student_image)
    t_img = teacher_image.detach()
    # across processes: this rank's rows against the whole batch, the student's columns gathered with gradients
    teacher = scaled_logits(t_img, _all_rows(t_img))
    student = scaled_logits(student_image, distributed.gather_with_grad(student_image))
    return 2.0 * kl_distill(teacher, student, temperature)


def dimefm_loss(
    teacher_image: torch.Tensor,
    student_image: torch.Tensor,
    teacher_text: torch.Tensor,
    lambda1: float = 0.3,
    lambda2: float = 0.0,
    pseudo_texts: torch.Tensor | None = None,
    temperatures: tuple[float, float, float] = TEMPERATURES,
) -> dict[str, torch.Tensor]:
    """DIME-FM's total loss ``{"loss", "vl", "pvl", "udist"}``: loss = (1 - lambda1) vl + lambda1 pvl + lambda2 udist.

    The weighting is the supplement's "Eq. 6" as inferred in the chapter spec (2.2, ambiguity 1); the code's
    ``loss = w_vl * vl + w_pvl * pvl + w_udist * udist`` with defaults 0.7 / 0.3 / 0 is lambda1 = 0.3,
    lambda2 = 0. ``temperatures`` are (T_vl, T_pvl, T_udist), the code's (1, 3, 7). ``pseudo_texts`` selects the
    inter-batch L_p-vl (see ``pvl_loss``). A term with weight 0 is not computed (the code's ``use_*_loss`` flags)
    and is reported as a zero tensor, not as its value. All parameters are checked before any compute.

    Across processes the features are this rank's share of the global batch (``pseudo_texts`` excepted: whole, the
    same on every rank) and every term is this rank's rows' mean against the gathered global batch (the module's
    docstring): the ranks' mean of each returned value is the one-process one; a 2-rank DIME-FM run reproduces the
    one-process run's loss history within 1.3e-6 (``papers.dimefm.method``).
    """
    check_lambdas(lambda1, lambda2)
    try:
        t_vl, t_pvl, t_udist = temperatures
    except (TypeError, ValueError):
        raise ValueError(f"temperatures must be three numbers (T_vl, T_pvl, T_udist), got {temperatures!r}") from None
    for value in (t_vl, t_pvl, t_udist):
        if not _is_number(value) or value <= 0:
            raise ValueError(f"temperatures must be positive finite numbers, got {temperatures!r}")
    _check_student(teacher_image, student_image)
    _check_features(teacher_text, "teacher_text")
    _check_same_dim(teacher_text, "teacher_text", teacher_image, "teacher_image")
    if pseudo_texts is not None:
        _check_features(pseudo_texts, "pseudo_texts")
        _check_same_dim(pseudo_texts, "pseudo_texts", teacher_image, "teacher_image")

    zero = student_image.new_zeros(())
    w_vl, w_pvl, w_udist = 1.0 - float(lambda1), float(lambda1), float(lambda2)
    vl = vl_loss(teacher_image, student_image, teacher_text, t_vl) if w_vl > 0 else zero
    pvl = pvl_loss(teacher_image, student_image, t_pvl, pseudo_texts) if w_pvl > 0 else zero
    udist = udist_loss(teacher_image, student_image, t_udist) if w_udist > 0 else zero
    loss = w_vl * vl + w_pvl * pvl + w_udist * udist
    return {"loss": loss, "vl": vl, "pvl": pvl, "udist": udist}
