"""Tests of vlp_lib.papers.dimefm.loss: DIME-FM's distillation KL and its L_vl, L_p-vl, L_udist terms."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from vlp_lib.papers.dimefm.loss import dimefm_loss, kl_distill, pvl_loss, scaled_logits, udist_loss, vl_loss


def feats(n: int, d: int = 8, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Unnormalised random features: the losses normalise themselves."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, d, generator=g, dtype=torch.float64) * 2.0).to(dtype)


def kl_reference(t: torch.Tensor, s: torch.Tensor, temperature: float) -> torch.Tensor:
    """(1/B) sum_i sum_j p_ij (log p_ij - log q_ij), written out in float64."""
    t, s = t.double() / temperature, s.double() / temperature
    log_p = t - t.logsumexp(1, keepdim=True)
    log_q = s - s.logsumexp(1, keepdim=True)
    return (log_p.exp() * (log_p - log_q)).sum() / len(t)


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a, b = a.double(), b.double()
    return 100.0 * (a / a.norm(dim=1, keepdim=True)) @ (b / b.norm(dim=1, keepdim=True)).T


# --------------------------------------------------------------------------------------------------------------
# scaled logits and the KL


def test_scaled_logits_are_cosines_times_100():
    a, b = feats(5, seed=1), feats(7, seed=2)
    got = scaled_logits(a, b)
    assert got.shape == (5, 7)
    assert torch.allclose(got.double(), cosine(a, b), atol=1e-4, rtol=0)
    # invariant to the feature norms, bounded by the scale, self-similarity = the scale
    assert torch.allclose(scaled_logits(3.0 * a, 0.1 * b), got, atol=1e-4, rtol=0)
    assert got.abs().max() <= 100.0 + 1e-4
    assert torch.allclose(scaled_logits(a, a).diagonal(), torch.full((5,), 100.0), atol=1e-4, rtol=0)
    assert torch.allclose(scaled_logits(b, a), got.T, atol=1e-5, rtol=0)
    assert torch.allclose(scaled_logits(a, b, scale=1.0), got / 100.0, atol=1e-6, rtol=0)


@pytest.mark.parametrize("temperature", [1.0, 3.0, 7.0])
def test_kl_distill_is_kldivloss_batchmean(temperature):
    g = torch.Generator().manual_seed(3)
    t, s = 20.0 * torch.randn(5, 7, generator=g), 20.0 * torch.randn(5, 7, generator=g)
    expected = torch.nn.KLDivLoss(reduction="batchmean")(
        F.log_softmax(s / temperature, 1), F.softmax(t / temperature, 1)
    )
    got = kl_distill(t, s, temperature)
    assert torch.allclose(got, expected, atol=1e-6, rtol=1e-6)
    assert torch.allclose(got.double(), kl_reference(t, s, temperature), atol=1e-5, rtol=1e-5)
    assert got > 0
    # batchmean: the mean over rows of the per-row KL, not over all B * C entries
    per_row = torch.stack([kl_reference(t[i : i + 1], s[i : i + 1], temperature) for i in range(5)])
    assert torch.allclose(got.double(), per_row.mean(), atol=1e-5, rtol=1e-5)


def test_kl_distill_hand_computed():
    ln3 = math.log(3.0)
    teacher = torch.tensor([[0.0, ln3], [0.0, 0.0]], dtype=torch.float64)
    student = torch.tensor([[0.0, 0.0], [ln3, 0.0]], dtype=torch.float64)
    # row 1: p = (1/4, 3/4), q = (1/2, 1/2); row 2: p = (1/2, 1/2), q = (3/4, 1/4)
    row1 = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)
    row2 = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    assert math.isclose(kl_distill(teacher, student, 1.0).item(), (row1 + row2) / 2, rel_tol=1e-12)
    # the temperature divides the logits, nothing else: no T^2 factor
    assert math.isclose(kl_distill(2.0 * teacher, 2.0 * student, 2.0).item(), (row1 + row2) / 2, rel_tol=1e-12)
    # per row, batchmean averages; and the teacher is the target: swapping the roles in row 1 gives KL(q || p)
    assert math.isclose(kl_distill(teacher[:1], student[:1], 1.0).item(), row1, rel_tol=1e-12)
    swapped = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert math.isclose(kl_distill(student[:1], teacher[:1], 1.0).item(), swapped, rel_tol=1e-12)
    assert not math.isclose(swapped, row1, rel_tol=1e-2)


def test_kl_distill_is_finite_when_teacher_probabilities_underflow():
    # antipodal features at scale 100: a logit gap of 200, exp(-200) is 0 in float32
    e = torch.eye(4)
    texts = torch.cat([e[:2], -e[:2]])
    teacher_logits = scaled_logits(e[:2], texts)  # rows (100, 0, -100, 0) and (0, 100, 0, -100)
    student_logits = scaled_logits(e[:2] + e[[1, 0]], texts)  # both rows (70.7, 70.7, -70.7, -70.7)
    assert (F.softmax(teacher_logits, 1) == 0).any() and (F.softmax(student_logits, 1) == 0).any()
    got = kl_distill(teacher_logits, student_logits, 1.0)
    # the teacher is one-hot to float32 precision, the student splits evenly between two texts: KL = ln 2
    assert torch.isfinite(got)
    assert math.isclose(got.item(), math.log(2.0), abs_tol=1e-5)
    assert torch.allclose(got.double(), kl_reference(teacher_logits, student_logits, 1.0), atol=1e-5, rtol=0)


def test_temperature_rescales_logits_and_softens_without_a_t_squared_factor():
    g = torch.Generator().manual_seed(4)
    t = 50.0 * torch.randn(6, 9, generator=g, dtype=torch.float64)
    s = 50.0 * torch.randn(6, 9, generator=g, dtype=torch.float64)
    for temperature in (1.0, 3.0, 7.0):
        assert torch.allclose(
            kl_distill(t, s, temperature), kl_distill(t / temperature, s / temperature, 1.0), atol=1e-12, rtol=1e-10
        )
    # both distributions tend to uniform as T grows, and KL to 0 like 1/T^2: T^2 KL -> 1/2 mean_i Var_j(t_ij - s_ij)
    # (second-order expansion). With a T^2 factor the loss would tend to that constant instead of to 0.
    limit = 0.5 * (t - s).var(dim=1, unbiased=False).mean()
    values = {T: kl_distill(t, s, T) for T in (1.0, 3.0, 7.0, 1e4, 1e5)}
    assert math.isclose((1e5**2 * values[1e5]).item(), limit.item(), rel_tol=1e-2)
    assert math.isclose((values[1e4] / values[1e5]).item(), 100.0, rel_tol=5e-2)
    assert values[1e4] < values[7.0] < values[3.0] < values[1.0]
    # the teacher target is softer at higher T: its entropy grows with T
    entropy = [-(F.softmax(t / T, 1) * F.log_softmax(t / T, 1)).sum(1).mean().item() for T in (1.0, 3.0, 7.0)]
    assert entropy[0] < entropy[1] < entropy[2]


# --------------------------------------------------------------------------------------------------------------
# the three terms


def test_losses_are_zero_when_the_student_equals_the_teacher():
    t_img, t_txt = feats(6, seed=5), feats(9, seed=6)
    other = feats(6, seed=7)
    for student in (t_img.clone(), 2.5 * t_img):  # only directions matter: scaling the student changes nothing
        assert vl_loss(t_img, student, t_txt).abs() < 1e-5
        assert pvl_loss(t_img, student).abs() < 1e-5
        assert pvl_loss(t_img, student, pseudo_texts=feats(5, seed=8)).abs() < 1e-5
        assert udist_loss(t_img, student).abs() < 1e-5
        out = dimefm_loss(t_img, student, t_txt, lambda1=0.3, lambda2=1.0)
        assert all(v.abs() < 1e-5 for v in out.values())
    # and positive when it differs
    assert vl_loss(t_img, other, t_txt) > 0.01
    assert pvl_loss(t_img, other) > 0.01
    assert udist_loss(t_img, other) > 0.01


def test_terms_match_the_written_out_formulas_on_unpaired_batches():
    # 6 images, 9 texts: no pairing, no square logit matrix
    t_img, s_img, t_txt = feats(6, seed=9), feats(6, seed=10), feats(9, seed=11)
    a_t, a_s = cosine(t_img, t_txt), cosine(s_img, t_txt)
    assert a_t.shape == (6, 9)
    expected_vl = kl_reference(a_t, a_s, 1.0) + kl_reference(a_t.T, a_s.T, 1.0)
    got_vl = vl_loss(t_img, s_img, t_txt)
    assert torch.isfinite(got_vl)
    assert torch.allclose(got_vl.double(), expected_vl, atol=1e-3, rtol=1e-4)
    g = cosine(t_img, t_img)
    assert torch.allclose(
        pvl_loss(t_img, s_img).double(), 2 * kl_reference(g, cosine(s_img, t_img), 3.0), atol=1e-4, rtol=1e-4
    )
    assert torch.allclose(
        udist_loss(t_img, s_img).double(), 2 * kl_reference(g, cosine(s_img, s_img), 7.0), atol=1e-4, rtol=1e-4
    )
    # the defaults are the code's temperatures
    assert torch.allclose(pvl_loss(t_img, s_img), pvl_loss(t_img, s_img, temperature=3.0))
    assert not torch.allclose(pvl_loss(t_img, s_img), pvl_loss(t_img, s_img, temperature=1.0), rtol=1e-3)


def test_vl_loss_assumes_no_pairing():
    t_img, s_img, t_txt = feats(6, seed=12), feats(6, seed=13), feats(9, seed=14)
    base = vl_loss(t_img, s_img, t_txt)
    # reordering the text batch changes nothing (rows/columns are permuted consistently)
    perm_txt = torch.randperm(9, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(vl_loss(t_img, s_img, t_txt[perm_txt]), base, atol=1e-5, rtol=1e-5)
    # nor does reordering the images together with their teacher features
    perm_img = torch.tensor([3, 0, 5, 1, 4, 2])
    assert torch.allclose(vl_loss(t_img[perm_img], s_img[perm_img], t_txt), base, atol=1e-5, rtol=1e-5)
    # but a student feature matched to the wrong teacher image is a different loss
    assert not torch.allclose(vl_loss(t_img, s_img[perm_img], t_txt), base, atol=1e-3, rtol=1e-3)
    # text batches of any size, even a single sentence
    assert torch.isfinite(vl_loss(t_img, s_img, t_txt[:1]))


def test_intra_batch_target_peaks_on_the_own_teacher_image():
    t_img = feats(8, seed=15)
    target = F.softmax(scaled_logits(t_img, t_img) / 3.0, 1)
    assert torch.equal(target.argmax(1), torch.arange(8))
    assert torch.allclose(scaled_logits(t_img, t_img).diagonal() / 3.0, torch.full((8,), 100 / 3), atol=1e-4)
    # a student that retrieves its own teacher image best (student = teacher + small noise) beats one that does not
    close = t_img + 0.05 * feats(8, seed=16)
    shuffled = t_img[torch.tensor([1, 2, 3, 4, 5, 6, 7, 0])]
    assert pvl_loss(t_img, close) < pvl_loss(t_img, shuffled)


def test_intra_and_inter_batch_pvl():
    t_img, s_img = feats(6, seed=17), feats(6, seed=18)
    intra = pvl_loss(t_img, s_img)
    # passing the batch's own teacher features is the intra-batch loss
    assert torch.allclose(pvl_loss(t_img, s_img, pseudo_texts=t_img.clone()), intra, atol=1e-6, rtol=1e-6)
    previous = feats(6, seed=19)  # the previous step's teacher image batch
    inter = pvl_loss(t_img, s_img, pseudo_texts=previous)
    assert torch.isfinite(inter) and inter > 0
    assert not torch.allclose(inter, intra, atol=1e-3, rtol=1e-3)
    expected = 2 * kl_reference(cosine(t_img, previous), cosine(s_img, previous), 3.0)
    assert torch.allclose(inter.double(), expected, atol=1e-4, rtol=1e-4)
    # any number of pseudo texts
    assert torch.isfinite(pvl_loss(t_img, s_img, pseudo_texts=feats(11, seed=20)))


def test_gradients_reach_the_student_only():
    t_img = feats(6, seed=21).requires_grad_()
    t_txt = feats(9, seed=22).requires_grad_()
    pseudo = feats(6, seed=23).requires_grad_()
    s_img = feats(6, seed=24).requires_grad_()
    out = dimefm_loss(t_img, s_img, t_txt, lambda1=0.3, lambda2=1.0, pseudo_texts=pseudo)
    out["loss"].backward()
    assert s_img.grad is not None and torch.isfinite(s_img.grad).all() and s_img.grad.abs().sum() > 0
    assert t_img.grad is None and t_txt.grad is None and pseudo.grad is None
    # each term alone sends gradient to the student; the norm-only direction gets none (cosine logits)
    for loss in (vl_loss(t_img, s_img, t_txt), pvl_loss(t_img, s_img), udist_loss(t_img, s_img)):
        s_img.grad = None
        loss.backward()
        assert s_img.grad.abs().sum() > 0
        radial = (s_img.grad * F.normalize(s_img.detach(), dim=1)).sum(1)
        assert radial.abs().max() < 1e-5 * s_img.grad.norm(dim=1).max() + 1e-7
    assert t_img.grad is None and t_txt.grad is None


# --------------------------------------------------------------------------------------------------------------
# the total loss


def test_lambda_weighting():
    t_img, s_img, t_txt = feats(6, seed=25), feats(6, seed=26), feats(9, seed=27)
    vl, pvl, ud = vl_loss(t_img, s_img, t_txt), pvl_loss(t_img, s_img), udist_loss(t_img, s_img)
    out = dimefm_loss(t_img, s_img, t_txt, lambda1=0.0)
    assert set(out) == {"loss", "vl", "pvl", "udist"}
    assert torch.allclose(out["loss"], vl) and torch.allclose(out["vl"], vl)
    assert out["pvl"] == 0 and out["udist"] == 0  # skipped, reported as 0
    out = dimefm_loss(t_img, s_img, t_txt, lambda1=1.0)
    assert torch.allclose(out["loss"], pvl) and out["vl"] == 0
    out = dimefm_loss(t_img, s_img, t_txt)  # the code's 0.7 / 0.3 / 0
    assert torch.allclose(out["loss"], 0.7 * vl + 0.3 * pvl, atol=1e-5, rtol=1e-6)
    assert torch.allclose(out["vl"], vl) and torch.allclose(out["pvl"], pvl) and out["udist"] == 0
    out = dimefm_loss(t_img, s_img, t_txt, lambda1=0.3, lambda2=2.0)
    assert torch.allclose(out["udist"], ud)
    assert torch.allclose(out["loss"], 0.7 * vl + 0.3 * pvl + 2.0 * ud, atol=1e-5, rtol=1e-6)
    # temperatures and pseudo texts are passed through to the terms
    previous = feats(6, seed=28)
    out = dimefm_loss(t_img, s_img, t_txt, lambda1=0.5, lambda2=1.0, pseudo_texts=previous, temperatures=(2, 4, 5))
    assert torch.allclose(out["vl"], vl_loss(t_img, s_img, t_txt, 2.0))
    assert torch.allclose(out["pvl"], pvl_loss(t_img, s_img, 4.0, pseudo_texts=previous))
    assert torch.allclose(out["udist"], udist_loss(t_img, s_img, 5.0))


def _bad_cases():
    t_img, s_img, t_txt = feats(6), feats(6, seed=1), feats(9, seed=2)
    return [
        (lambda: dimefm_loss(t_img, s_img, t_txt, lambda1=-0.1), "lambda1"),
        (lambda: dimefm_loss(t_img, s_img, t_txt, lambda1=1.5), "lambda1"),
        (lambda: dimefm_loss(t_img, s_img, t_txt, lambda1=float("nan")), "lambda1"),
        (lambda: dimefm_loss(t_img, s_img, t_txt, lambda2=-1.0), "lambda2"),
        (lambda: dimefm_loss(t_img, s_img, t_txt, temperatures=(1.0, 0.0, 7.0)), "temperatures"),
        (lambda: dimefm_loss(t_img, s_img, t_txt, temperatures=(1.0, 3.0)), "temperatures"),
        (lambda: dimefm_loss(t_img, s_img, feats(9, d=5)), "teacher_text"),
        (lambda: dimefm_loss(t_img, feats(5), t_txt), "student_image"),
        (lambda: dimefm_loss(t_img, s_img, t_txt, pseudo_texts=feats(6, d=4)), "pseudo_texts"),
        (lambda: vl_loss(t_img, s_img, t_txt, temperature=0.0), "temperature"),
        (lambda: vl_loss(t_img, s_img, feats(9, d=3)), "teacher_text"),
        (lambda: vl_loss(t_img[0], s_img[0], t_txt), "teacher_image"),
        (lambda: pvl_loss(t_img, s_img, temperature=-3.0), "temperature"),
        (lambda: pvl_loss(t_img, s_img, pseudo_texts=feats(6, d=3)), "pseudo_texts"),
        (lambda: udist_loss(t_img, feats(6, d=4)), "student_image"),
        (lambda: udist_loss(t_img, s_img, temperature=float("inf")), "temperature"),
        (lambda: kl_distill(t_img, s_img, 0.0), "temperature"),
        (lambda: kl_distill(t_img, s_img[:, :5], 1.0), "student_logits"),
        (lambda: kl_distill(t_img[0], s_img[0], 1.0), "teacher_logits"),
        (lambda: scaled_logits(t_img, t_txt, scale=0.0), "scale"),
        (lambda: scaled_logits(t_img, feats(3, d=5)), "b"),
    ]


@pytest.mark.parametrize("call, name", [pytest.param(c, n, id=f"{i}-{n}") for i, (c, n) in enumerate(_bad_cases())])
def test_bad_inputs_raise_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()
