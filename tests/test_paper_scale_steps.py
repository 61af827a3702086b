"""Issue 28, "the papers' sizes without a GPU" (the step tier, marker ``paper_scale``): one optimisation step of every
method of the book at the papers' models, RN50 (and ViT-B-32) at 224 px, on this CPU, through the trainer as
``experiment.run`` drives it, and the evaluation suite on a handful of 224 px images.

Each run is a chapter's own paper-scale config (``chapter.config(row, "paper", seed)``) with only its sizes shrunk
(``shrunk``): a batch of ``BATCH`` pairs (one step), a handful of evaluation images, and where a method has them a
small episode, few prototypes, few class images, a small detector world and world-LM corpus. Model, image size,
precision (bf16 autocast, the paper presets'), augmentation, heads and loss weights stay the paper scale's.
One exception, said where it is made: ProtoCLIP's first episode uses the prototypes (``warmup_episodes=0``) so that one
step covers the episode.

Timed with ``pytest -m paper_scale --durations=0`` (README, "Tests"): too slow for ``make test``; ``make test-paper``
runs it. Checkpoints of these runs (about 1 GB each) are deleted after every test.
"""

import math
import shutil
from typing import Any

import pytest
import torch

from vlp_lib import experiment
from vlp_lib.methods.base import Method
from vlp_lib.models import create_model, model_image_size
from vlp_lib.papers.dimefm.book import chapter as dimefm
from vlp_lib.papers.iclip.book import chapter as iclip
from vlp_lib.papers.icmlm.book import chapter as icmlm
from vlp_lib.papers.protoclip.book import chapter as protoclip
from vlp_lib.papers.pyramidclip.book import chapter as pyramidclip
from vlp_lib.paths import checkpoint_dir
from vlp_lib.run_config import RunConfig
from vlp_lib.train import TrainResult, train

pytestmark = pytest.mark.paper_scale

BATCH = 4  # pairs per step, and in the whole training set: one step
FEW = dict(task_train=12, task_test=8, retrieval_images=5)  # evaluation images per split
# every kind of evaluation the suite has: a classification task (zero-shot, linear, k-NN, clustering), the presence
# and objects probes (multi-label logistic and SVM), the relation probe and the second retrieval set (the first is
# always evaluated with a text tower)
EVAL_TASKS = ["shapes10", "presence", "objects", "relation", "retrieval2"]
SMALL_LM = {"captions": 256, "epochs": 1}  # the frozen world-LM's pretraining corpus; its architecture is the default


@pytest.fixture(autouse=True)
def _drop_checkpoints(_isolated_dirs):
    """A paper-scale checkpoint (model, method and AdamW state) is about 1 GB: none is kept after its test."""
    yield
    shutil.rmtree(checkpoint_dir(), ignore_errors=True)


def shrunk(config: RunConfig, **changes: Any) -> RunConfig:
    """The paper-scale run ``config`` at one step of ``BATCH`` pairs and a handful of evaluation images (``FEW``),
    with ``changes`` (record keys); its model and image size are checked unchanged unless ``changes`` names them."""
    small = config.replace(
        train_size=BATCH,
        batch_size=BATCH,
        episode_size=None if config.train.episode_size is None else BATCH,
        epochs=1,
        warmup_steps=1,
        **{**FEW, **changes},
    )
    assert small.scale == "paper" and small.train.precision == config.train.precision
    if "model" not in changes:
        assert (small.model, small.image_size) == (config.model, config.image_size)
    return small


def method_kwargs(config: RunConfig, **changes: Any) -> dict[str, Any]:
    """``config``'s method arguments (record form) with ``changes``."""
    return {**config.to_dict()["method_kwargs"], **changes}


def named_parameters(model: torch.nn.Module, method: Method) -> dict[str, torch.Tensor]:
    """Every trained parameter, named as the trainer's AdamW groups name them (``model.`` / ``method.``)."""
    named = [(f"model.{n}", p) for n, p in model.named_parameters()]
    named += [(f"method.{n}", p) for n, p in method.named_parameters()]
    return {name: p for name, p in named if p.requires_grad}


def one_step(config: RunConfig) -> tuple[torch.nn.Module, Method, TrainResult, dict[str, torch.Tensor]]:
    """``config`` trained as ``experiment.run`` trains it (``build_method``, the method's ``training_data``,
    ``train``) but without its checkpoint: the model, the method, the result and the parameters before the step."""
    data, _, model, method = experiment.build_method(config)
    data, sampler = method.training_data(data)
    before = {name: p.detach().clone() for name, p in named_parameters(model, method).items()}
    result = train(model, method, data, experiment.train_config(config, progress=False), sampler=sampler)
    return model, method, result, before


def moved(model: torch.nn.Module, method: Method, before: dict[str, torch.Tensor]) -> set[str]:
    """The parameters the step changed (zero-initialised residual branches, e.g. RN50's ``bn3``, leave the
    BatchNorms before them unchanged by the first step: not every parameter moves)."""
    return {name for name, p in named_parameters(model, method).items() if not torch.equal(before[name], p)}


def check_step(result: TrainResult, terms: tuple[str, ...] = ()) -> dict[str, float]:
    """One step, its loss, gradient norm and logged ``terms`` finite: the step's log."""
    assert len(result.history) == 1
    log = result.history[0]
    assert math.isfinite(log["loss"]) and math.isfinite(log["grad_norm"]) and log["grad_norm"] > 0
    for term in terms:
        assert math.isfinite(log[term]), term
    return log


def check_trained(changed: set[str], *prefixes: str) -> None:
    """At least one parameter under each of ``prefixes`` changed."""
    for prefix in prefixes:
        assert any(name.startswith(prefix) for name in changed), f"nothing under {prefix} changed"


def check_metrics(metrics: dict[str, float]) -> None:
    """Accuracies, recalls and mAPs in [0, 1], ARI / AMI in [-1, 1], the modality gap finite and >= 0."""
    for key, value in metrics.items():
        assert math.isfinite(value), key
        last = key.rsplit("/", 1)[-1]
        if last in ("ari", "ami"):
            assert -1 <= value <= 1, key
        elif last == "modality_gap":
            assert value >= 0, key
        elif "/" in key:
            assert 0 <= value <= 1, key


@pytest.mark.filterwarnings("ignore:Label not .* is present in all training examples")  # 12 images, 24 shapes
def test_clip_runs_and_evaluates_at_paper_scale():
    """The baseline notebook's paper-scale run (RN50, 224 px, bf16 autocast) end to end: one step, every kind of
    evaluation on a handful of 224 px images, the record, the checkpoint read back."""
    config = shrunk(experiment.make_config("paper", "clip", 0), eval_tasks=EVAL_TASKS)
    assert (config.model, config.image_size, config.train.precision) == ("RN50", 224, "bf16")
    record = experiment.run(config, progress=False)
    assert len(record["history"]) == 1 and math.isfinite(record["metrics"]["final_loss"])
    metrics = {k: v for k, v in record["metrics"].items() if "/" in k}
    check_metrics(metrics)
    for key in ("shapes10/zeroshot_top1", "shapes10/linear", "shapes10/ari", "presence/map", "objects/map"):
        assert key in metrics
    assert {"relation/linear", "retrieval/mean_recall", "retrieval2/mean_recall", "retrieval/modality_gap"} <= set(
        metrics
    )
    model, tokenizer = experiment.load_trained(record)
    fresh = create_model("RN50", tokenizer.vocab_size, tokenizer.context_length, image_size=224, seed=0)
    assert model_image_size(model) == 224
    for name in ("visual.attnpool.c_proj.weight", "text_projection"):  # the trained weights, not a fresh init
        assert not torch.equal(model.state_dict()[name], fresh.state_dict()[name]), name


def test_clip_step_with_vit_b_32():
    config = shrunk(experiment.make_config("paper", "clip", 0, model="ViT-B-32"), model="ViT-B-32")
    model, method, result, before = one_step(config)
    check_step(result, ("loss_clip",))
    assert model_image_size(model) == 224
    check_trained(
        moved(model, method, before), "model.visual.transformer", "model.visual.proj", "model.text_projection"
    )


def test_protoclip_episode_and_step_at_paper_scale():
    """Table IV's ProtoCLIP (the final recipe: soft targets, PBT, the MiniLM teacher, ProtoCLIP augmentation, heads
    2,048 -> 128): the episode's feature extraction, faiss K-Means of the episode into 2 prototypes and PBT, then
    the step with all three terms."""
    paper = protoclip.config(protoclip.find_row(protoclip.TABLE4, "ProtoCLIP", 0.5), "paper", 0)
    config = shrunk(paper, method_kwargs=method_kwargs(paper, images_per_prototype=2, warmup_episodes=0))
    assert config.train.augmentation == "protoclip" and config.method_args.external_teacher == "minilm"
    model, method, result, before = one_step(config)
    check_step(result, ("loss_clip", "loss_proto", "loss_external"))
    assert method.image_head[0].out_features == 2_048 and method.image_head[-1].out_features == 128
    assert all(result.timings[stage] > 0 for stage in ("feature_extraction", "kmeans", "pbt"))
    assert method.state is not None and method.state["classifier_i"].shape == (2, 128) and "teacher_e" in method.state
    check_trained(
        moved(model, method, before),
        "model.visual.layer4",
        "model.transformer",
        "method.image_head",
        "method.text_head",
        "method.proto_logit_scale",
    )


def test_pyramidclip_step_at_paper_scale():
    """Table 6's full PyramidCLIP (Eq. 6, every term, alpha = 0.2): the local view, the summaries, and the ROI
    sequence of the world detector (trained on its smallest world) through RN50's attention pool."""
    paper = pyramidclip.config(pyramidclip.PYRAMID, "paper", 0)
    config = shrunk(paper, method_kwargs=method_kwargs(paper, detector_images=50))
    model, method, result, before = one_step(config)
    check_step(result, ("loss_gs", "loss_lt", "loss_rs", "loss_rt"))
    check_trained(moved(model, method, before), "model.visual.attnpool", "model.transformer", "method.roi.proj_pre")


def test_dimefm_teacher_run_and_student_step_at_paper_scale():
    """The chapter's paper-scale teacher (ViT-B-32 CLIP) trained one step and stored, then a step of its student
    (the chapter's ``STUDENT`` row: RN50, its 2,048 -> 1,024 attention-pool output refitted to the teacher's 512
    dimensions, ``at_width``) with every term (L_vl, L_p-vl, L_udist)."""
    teacher = shrunk(dimefm.config(dimefm.TEACHER, "paper", dimefm.TEACHER_SEED), eval_tasks=["shapes10"])
    assert (teacher.model, teacher.image_size) == ("ViT-B-32", 224)
    paper = dimefm.config(dimefm.STUDENT, "paper", 0)
    kwargs = method_kwargs(paper, teacher=teacher.to_dict(), lambda2=0.5)  # every term, L_udist included
    config = shrunk(paper, eval_tasks=["shapes10"], method_kwargs=kwargs)
    assert (config.model, config.image_size) == ("RN50", 224)
    model, method, result, before = one_step(config)  # trains and stores the teacher first
    assert experiment.stored(teacher) is not None
    assert model.visual.output_dim == model.embed_dim == 512
    check_step(result, ("loss_vl", "loss_pvl", "loss_udist"))
    changed = moved(model, method, before)
    check_trained(changed, "model.visual.layer4", "model.visual.attnpool.c_proj")
    assert all(name.startswith("model.visual.") for name in changed)  # the teacher's text tower is frozen


@pytest.mark.parametrize("row", [iclip.ICLIP, iclip.UNICL], ids=["iclip", "unicl"])
def test_class_mixing_step_at_paper_scale(row):
    """iCLIP and UniCL at r = 0.5: two class-only images (rendered at 224 px) and two pairs in the batch."""
    paper = iclip.config(row, "paper", 0)
    class_data = {**paper.method_args.class_data, "n": BATCH}
    config = shrunk(paper, method_kwargs=method_kwargs(paper, class_data=class_data))
    model, method, result, before = one_step(config)
    check_step(result, ("loss_clip", "loss_cls") if row.method == "iclip" else ("loss_unicl",))
    check_trained(moved(model, method, before), "model.visual.layer4", "model.transformer")


@pytest.mark.parametrize("row", [icmlm.TP_LABEL, icmlm.TP_CLUSTER], ids=["tp_label", "tp_cluster"])
def test_tag_prediction_step_at_paper_scale(row):
    """TP_Label (the 24 shapes) and TP_Cluster (MiniLM caption clusters; 2 of them in 4 captions) on RN50's 7x7
    map."""
    paper = icmlm.config(row, "paper", 0)
    changes = {"method_kwargs": method_kwargs(paper, k=2)} if row.label_set == "cluster" else {}
    model, method, result, before = one_step(shrunk(paper, **changes))
    check_step(result, ("loss_tp",))
    assert model.map_shape() == (2_048, 7, 7)
    check_trained(moved(model, method, before), "model.visual.layer4", "method.classifier")


def test_tp_postag_run_then_icmlm_from_it_at_paper_scale():
    """TP_Postag run end to end (image-only: the probes of the suite, no zero-shot), then ICMLM_tfm starting from
    its stored checkpoint (Supp F.1), one step with its frozen world-LM."""
    tp = shrunk(icmlm.config(icmlm.TP_POSTAG, "paper", 0), eval_tasks=["shapes10", "objects"])
    record = experiment.run(tp, progress=False)
    metrics = {k: v for k, v in record["metrics"].items() if "/" in k}
    check_metrics(metrics)
    assert {"shapes10/linear", "shapes10/knn", "objects/map"} <= set(metrics)
    assert not any("zeroshot" in k or k.startswith("retrieval") for k in metrics)
    start, _ = experiment.load_trained(record)

    paper = icmlm.config(icmlm.TFM, "paper", 0)
    config = shrunk(paper, method_kwargs=method_kwargs(paper, init=tp.to_dict(), lm=SMALL_LM))
    model, method, result, before = one_step(config)
    for name, value in start.visual.state_dict().items():  # the step started from the TP_Postag run
        if f"model.visual.{name}" in before:
            assert torch.equal(before[f"model.visual.{name}"], value), name
    check_step(result, ("loss_mlm", "loss_tp"))
    check_trained(moved(model, method, before), "model.visual.layer4", "method.project", "method.head")


def test_icmlm_att_fc_step_at_paper_scale():
    """ICMLM_att-fc (2 layers, 4 heads) from a fresh RN50."""
    paper = icmlm.config(icmlm.ATT_FC_BIG, "paper", 0)
    config = shrunk(paper, method_kwargs=method_kwargs(paper, init=None, lm=SMALL_LM))
    model, method, result, before = one_step(config)
    check_step(result, ("loss_mlm",))
    check_trained(
        moved(model, method, before), "model.visual.layer4", "method.project", "method.head", "method.decoder"
    )
