"""iCLIP and UniCL across processes: two gloo processes under torchrun train the same global batches as one process.

A mixed batch holds its class images first, so its contiguous shares split the two sub-batches unevenly: at r = 0.375
and B = 24 rank 0 holds 9 class images and 3 pairs, rank 1 no class image and 12 pairs; at r = 0.625, 12 class images |
3 class images and 9 pairs. Compared with one process: the loss history, every logged term (the loss terms, the
temperatures, the gradient norm: DDP's average of the ranks' gradients is the one-process gradient), the final loss,
every suite metric and iCLIP's definition-prompt zero-shot (``papers.iclip.evaluations``). Measured (``-s`` prints
the largest differences): see ``TOLERANCE``."""

import math

import open_clip
import pytest
import torch
import torch.nn.functional as F

from vlp_lib import distributed, experiment
from vlp_lib.papers.iclip import evaluations
from vlp_lib.papers.iclip.loss import class_text_contrast, local_clip_loss

CLASS_DATA = {"n": 48, "seed": 5}
TASK_TEST = 20  # test images per task: one of them is 0.05 of an accuracy

TINY = dict(
    model="vit-tiny",
    train_size=96,
    batch_size=24,
    epochs=2,
    warmup_steps=1,
    task_train=40,
    task_test=TASK_TEST,
    retrieval_images=10,
    eval_tasks=["shapes10", "retrieval2"],
    context_length=32,
)
# r = 0.375: class rows 9 | 0, pairs 3 | 12 (L_cls on rank 0 only; pairs gathered from unequal shares)
ICLIP = dict(TINY, method_kwargs={"class_data": CLASS_DATA, "ratio": 0.375})
# r = 0.625: class rows 12 | 3, pairs 0 | 9; the batch's classes gathered, rank 1's alt-texts the negatives of every
# class image, L_cls's own temperature
ICLIP_OPTIONS = dict(
    TINY,
    method_kwargs={
        "class_data": CLASS_DATA,
        "ratio": 0.625,
        "class_set": "batch",
        "text_negatives": True,
        "temperature": "separate",
    },
)
UNICL = dict(TINY, method_kwargs={"class_data": CLASS_DATA, "ratio": 0.375})
# losses, logged terms (the gradient norm relative) and continuous metrics: the gathered logits are the same numbers,
# the ranks' sums and DDP's gradient average round in another order (measured at most 3e-6 over 8 steps: the module
# docstring of papers.iclip.method); accuracies and recalls move in steps of 1 / 20 or 1 / 10, so they are equal
TOLERANCE = 1e-5


def _largest(a: list[float], b: list[float]) -> float:
    assert len(a) == len(b) and a, (a, b)
    return max(abs(x - y) for x, y in zip(a, b))


CASES = {
    "iclip": ("iclip", ICLIP, {"loss_clip", "loss_cls"}),
    "options": ("iclip", ICLIP_OPTIONS, {"loss_clip", "loss_cls", "cls_logit_scale"}),
    "unicl": ("unicl", UNICL, {"loss_unicl"}),
}


def ddp_cases(tmp_path_factory):
    """Every case, for ``conftest.ddp_runs`` (one torchrun launch for every module's cases)."""
    return {name: (experiment.make_config("smoke", m, **kw), None) for name, (m, kw, _) in CASES.items()}


@pytest.fixture(scope="module")
def runs(ddp_runs):
    """Every case in one process and in 2 gloo processes."""
    return ddp_runs[__name__]


@pytest.mark.parametrize("case", list(CASES))
def test_two_processes_match_one(runs, case, monkeypatch, ddp_report):
    method, overrides, logged = CASES[case]
    one, two, stored = runs[case].one, runs[case].two, runs[case].stored
    monkeypatch.setenv("VLP_RESULTS_DIR", str(runs[case].folder / "one" / "results"))
    one_prompts = evaluations.prompt_zero_shot(one)
    monkeypatch.setenv("VLP_RESULTS_DIR", str(runs[case].folder / "two" / "results"))
    assert stored["metrics"] == two  # rank 0 wrote the record
    ddp_report(f"{method} {overrides['method_kwargs']}", one, stored)

    history = {h["step"]: h for h in one["history"]}
    assert [h["step"] for h in stored["history"]] == list(history) and len(history) == 8
    terms = set().union(*(h.keys() for h in one["history"])) - {"step", "episode", "lr", "image_lr"}
    assert terms == {"loss", "grad_norm", "logit_scale", *logged}
    assert all(set(h) == set(history[h["step"]]) for h in stored["history"])
    diffs = {}
    for term in sorted(terms):  # every logged term, at every step: the ranks' mean is the one-process value
        ones = [history[h["step"]][term] for h in stored["history"]]
        twos = [h[term] for h in stored["history"]]
        scale = max(1.0, max(abs(x) for x in ones)) if term == "grad_norm" else 1.0  # relative for the norm
        diffs[term] = _largest(ones, twos) / scale
    diffs["final_loss"] = abs(two["final_loss"] - one["metrics"]["final_loss"])

    metrics = {key for key in one["metrics"] if key not in ("train_samples_per_s", "final_loss")}
    assert metrics == set(two) - {"train_samples_per_s", "final_loss"}
    metric_diffs = {key: abs(two[key] - one["metrics"][key]) for key in sorted(metrics)}
    two_prompts = evaluations.prompt_zero_shot(stored)
    for key in one_prompts:
        metric_diffs[f"definition_prompts/{key}"] = abs(two_prompts[key] - one_prompts[key])
    print(
        f"\n{method} {overrides['method_kwargs']}: final loss {one['metrics']['final_loss']!r} (1) vs "
        f"{two['final_loss']!r} (2); largest differences {diffs}; metrics differing: "
        f"{ {k: d for k, d in metric_diffs.items() if d} }; definition prompts {one_prompts} vs {two_prompts}"
    )

    for term, diff in diffs.items():
        assert diff <= TOLERANCE, (term, diff)
    # metrics: within one test image (accuracies) or one retrieval query's recall, as tests/test_distributed.py: a
    # 1e-6 difference in the weights can move one borderline prediction; distances within the loss tolerance
    for key, diff in metric_diffs.items():
        allowed = TOLERANCE if "gap" in key else max(1 / TASK_TEST, 0.02) + 1e-9
        assert diff <= allowed and math.isfinite(diff), (key, diff)


@pytest.mark.parametrize("split", [(3, 12), (0, 9), (12, 0), (6, 6)])
def test_rank_shares_average_to_the_global_loss(monkeypatch, split):
    """Each rank's term is its rows' mean weighted by n W / N: the mean over two ranks of their terms, and of their
    gradients, is the one-process loss and gradient, whatever the split (none of a kind included)."""
    gen = torch.Generator().manual_seed(0)
    n = sum(split)
    images = F.normalize(torch.randn(n, 16, generator=gen), dim=-1).requires_grad_()
    texts = F.normalize(torch.randn(n, 16, generator=gen), dim=-1).requires_grad_()
    classes = F.normalize(torch.randn(5, 16, generator=gen), dim=-1)
    labels = torch.randint(0, 5, (n,), generator=gen)
    scale = torch.tensor(14.0)

    def both(parts):
        return [
            local_clip_loss(images[a:b], texts[a:b], images, texts, a, scale)
            + class_text_contrast(images[a:b], classes, labels[a:b], scale, n)
            for a, b in parts
        ]

    (one,) = both([(0, n)])  # one process: open_clip's ClipLoss and the cross-entropy themselves, bit for bit
    assert torch.equal(
        one, open_clip.ClipLoss()(images, texts, scale) + F.cross_entropy(scale * images @ classes.T, labels)
    )
    grads = torch.autograd.grad(one, (images, texts))
    monkeypatch.setattr(distributed, "world", lambda: distributed.World(0, 2))
    shares = both([(0, split[0]), (split[0], n)])
    mean = sum(shares) / 2
    torch.testing.assert_close(mean, one, rtol=0, atol=1e-6)
    for got, want in zip(torch.autograd.grad(mean, (images, texts)), grads):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


def test_uneven_gathering_is_nothing_in_one_process():
    rows = torch.arange(6.0).reshape(3, 2)
    assert distributed.row_counts([3, 0]) == [[3, 0]] and distributed.gather_uneven(rows, [3]) is rows
