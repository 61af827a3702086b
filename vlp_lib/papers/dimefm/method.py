"""DIME-FM (Sun et al., ICCV 2023): a large frozen CLIP distilled into a small image encoder from unpaired data.

The official code (``sunxm2357/DIME-FM``, ``Training/``) trains only the student's image tower and its projection
(``train_amp.py`` optimises ``ImageCLIP(student_model)``); in ``utils.get_loss`` the student's text features *are*
the teacher's (``student_text_feat = teacher_text_feat``). So a run here trains a ``models.CompositeCLIP``: the
student's image tower + the teacher's frozen text tower, logits = 100 cos (``split_network.set_logit_scale``, not
learned), and the same composite is evaluated (zero-shot with the teacher's text tower) and stored.

Per step (``get_loss``; ``losses.dimefm``): B images with their teacher image features, pre-extracted once from the
unaugmented images (Supp A.1), the student's features of the augmented images, and B teacher text features of an
independent text batch:

    L = (1 - lambda1) L_vl + lambda1 L_p-vl + lambda2 L_udist        (the code's 0.7 / 0.3 / 0: lambda1 = 0.3)

at temperatures 1 / 3 / 7, Supp A.1's effective scales mu = 100 / 33.3 / 14.3 (not loss weights).

- Texts and images are **unpaired** (two ``DataLoader``s in the code, the text one restarting when exhausted):
  the text corpus is joined to the image corpus (``paired.concat``) and an ``EpisodeSampler(paired=False)``
  draws each side from its own pool. Supp D (Tab. 2) compares this with paired loading (``paired=True``: each
  image with its own caption); an epoch is a pass over the image corpus (``Sampler.size``).
- L_p-vl's pseudo texts are the teacher image features of the same batch ("intra", the code's) or, Supp G's
  "inter-batch" variant, of another batch: here the episode's previous batch (the last one for the first), a
  pure function of the episode's order, so a resumed run is exact.
- The teacher is an ordinary CLIP run of this book (``method_kwargs["teacher"]``: its full config), trained once
  and stored like any run, loaded frozen. Its features of each corpus are cached (``teachers.frozen_arrays``,
  keyed by the teacher's config hash, the corpus and the code fingerprint).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import numpy as np
import open_clip
import torch
from torch import nn

from vlp_lib import experiment, runs
from vlp_lib.cache import frozen_arrays
from vlp_lib.config import check_bool
from vlp_lib.data.corpora import build_corpus, check_corpus, constructed_parts
from vlp_lib.data.paired import PairedData, concat, tokenize_all
from vlp_lib.data.sampler import EpisodeSampler, Sampler
from vlp_lib.methods.base import Batch, Episode, Method, MethodContext, Trained
from vlp_lib.models import CompositeCLIP, count_parameters
from vlp_lib.papers.dimefm.loss import check_lambdas, dimefm_loss
from vlp_lib.runs import paper_of_module

PAPER = paper_of_module(__name__)  # whose fingerprint keys what this module caches

OWN = "own"  # texts: the image corpus' own captions
POLICIES = ("train", "reuse")  # teacher_policy: train the teacher run if it is not stored, or require it stored
PVL = ("intra", "inter")  # L_p-vl's pseudo texts: this batch's teacher image features, or the previous batch's


def teacher_stored(teacher: dict[str, Any]) -> bool:
    """Whether the teacher run is in the results store with the current code (``experiment.stored``)."""
    return experiment.stored(teacher) is not None


def check_teacher(teacher: Any, policy: Any = "train") -> dict[str, Any]:
    """``ValueError`` naming ``teacher`` unless it is the full config of a CLIP run (``experiment.make_config``'s
    output, unchanged by making it again: its hash is the stored run's key), or ``teacher_policy`` if it is not
    one of ``POLICIES`` or is ``"reuse"`` and the teacher run is not stored."""
    if not isinstance(teacher, dict) or not {"scale", "method", "seed"} <= set(teacher):
        raise ValueError(f"teacher must be a run config (experiment.make_config(...)), got {teacher!r}")
    if teacher["method"] != "clip":
        raise ValueError(
            f"teacher must be a CLIP run (method 'clip'): DIME-FM distils a CLIP, got method {teacher['method']!r}"
        )
    rest = {k: v for k, v in teacher.items() if k not in ("scale", "method", "seed")}
    try:
        remade = experiment.make_config(teacher["scale"], teacher["method"], teacher["seed"], **rest)
    except ValueError as err:
        raise ValueError(f"teacher: {err}") from None
    if remade != teacher:
        changed = sorted(k for k in remade if remade[k] != teacher.get(k))
        raise ValueError(f"teacher must be a config as experiment.make_config returns it; these keys differ: {changed}")
    if policy not in POLICIES:
        raise ValueError(f"teacher_policy must be one of {POLICIES}, got {policy!r}")
    if policy == "reuse" and not teacher_stored(teacher):
        raise ValueError(
            "teacher_policy 'reuse': the teacher run is not stored (with this code); train it first "
            "(experiment.run(teacher)) or use teacher_policy 'train'"
        )
    return teacher


def image_tower_size(model: str, image_size: int) -> tuple[int, int]:
    """(parameters, embedding width) of preset ``model``'s image tower at ``image_size``, read from a tower built
    on the meta device (no memory, no initialisation): a config check before any compute."""
    cfg = open_clip.get_model_config(model)
    vision = {**cfg["vision_cfg"], "image_size": image_size}
    with torch.device("meta"):
        tower = open_clip.model._build_vision_tower(cfg["embed_dim"], vision)
    return count_parameters(tower), int(tower.output_dim)


def image_corpus_key(config: dict[str, Any], data: PairedData) -> dict[str, Any]:
    """What fixes a run's image corpus (its own training world and any ``world_mix``, or CSV), for the
    teacher-feature cache, with a digest of the corpus' captions: features cached for other data (a config key
    this list forgot, a CSV edited in place) are never read back."""
    keys = ("train_data", "train_size", "world_seed", "world_knobs", "world_mix", "image_size")
    digest = hashlib.sha256("\n".join(data.captions).encode()).hexdigest()[:16]
    return {**{k: config.get(k) for k in keys}, "captions_sha256": digest}


class DIMEFM(Method):
    """DIME-FM's distillation (``losses.dimefm.dimefm_loss``) of the teacher into the composite's image tower.

    Args:
        lambda1: weight of L_p-vl, L_vl gets 1 - lambda1 (Supp G sweeps [0, 1]; 1 "totally replaces" L_vl and
            collapses); the code's default 0.3.
        lambda2: weight of L_udist (Supp G: 0 to 5); the code's default 0 (``--use_udist_loss`` off).
        pvl: "intra" (the code's, kept by Supp G) or "inter" (pseudo texts from the episode's previous batch).
        paired: with the image corpus' own captions, each image with its own caption (Supp D's paired loading)
            instead of an independent text order.
        text_data: the text corpus (captions, tokens, ``extra["teacher_text"]``) joined to the image corpus by
            ``training_data``; ``None``: the own captions, whose teacher features are in the image data.

    Side data (``Method.arguments`` builds it): ``teacher_image`` [N, D] per image and ``teacher_text`` [N, D] per
    text, the teacher's (unnormalised) features; the losses normalise.
    """

    name = "dimefm"
    required_extras = ("teacher_image", "teacher_text")
    ARGUMENTS = ("teacher", "teacher_policy", "texts", "paired", "lambda1", "lambda2", "pvl")

    def __init__(
        self,
        lambda1: float = 0.3,
        lambda2: float = 0.0,
        pvl: str = "intra",
        paired: bool = False,
        text_data: PairedData | None = None,
    ) -> None:
        super().__init__()
        if pvl not in PVL:
            raise ValueError(f"pvl must be one of {PVL}, got {pvl!r}")
        self.lambda1, self.lambda2, self.pvl, self.paired = float(lambda1), float(lambda2), pvl, paired
        self.text_data = text_data
        self._episode_images: np.ndarray | None = None  # the episode's image order, for inter-batch L_p-vl

    @classmethod
    def check_kwargs(cls, kwargs: dict, episode_size: int) -> None:
        unknown = set(kwargs) - set(cls.ARGUMENTS)
        if unknown:
            raise ValueError(f"method_kwargs: unknown DIME-FM argument(s) {sorted(unknown)}; known: {cls.ARGUMENTS}")
        if "teacher" not in kwargs:
            raise ValueError("teacher is required: the run config of the CLIP to distil (experiment.make_config)")
        check_lambdas(kwargs.get("lambda1", 0.3), kwargs.get("lambda2", 0.0))
        if kwargs.get("pvl", "intra") not in PVL:
            raise ValueError(f"pvl must be one of {PVL}, got {kwargs['pvl']!r}")
        texts, paired = kwargs.get("texts", OWN), kwargs.get("paired", False)
        if texts != OWN:
            try:
                check_corpus(texts)
            except ValueError as err:
                raise ValueError(f"texts must be {OWN!r} or a corpus spec: {err}") from None
        check_bool("paired", paired)
        if paired and texts != OWN:
            raise ValueError(
                f"paired=True pairs each image with its own caption: it needs texts={OWN!r}, got {texts!r}"
            )
        check_teacher(kwargs["teacher"], kwargs.get("teacher_policy", "train"))

    @classmethod
    def check_config(cls, config: dict[str, Any]) -> None:
        """The student (``model`` at ``image_size``) must not be larger than the teacher in the image tower and must
        embed into its width (the composite pairs it with the teacher's text tower); both tokenise to one
        ``context_length``; a constructed corpus has at most ``train_size`` query images."""
        teacher = config["method_kwargs"]["teacher"]
        student_params, student_dim = image_tower_size(config["model"], config["image_size"])
        teacher_params, teacher_dim = image_tower_size(teacher["model"], teacher["image_size"])
        if student_params > teacher_params:
            raise ValueError(
                f"model: a student larger than the teacher: {config['model']}'s image tower has "
                f"{student_params:,} parameters, the teacher {teacher['model']}'s {teacher_params:,}"
            )
        if student_dim != teacher_dim:
            raise ValueError(
                f"model: the student {config['model']} embeds images into {student_dim} dimensions, the "
                f"teacher {teacher['model']} into {teacher_dim}: the student must embed into the "
                f"teacher's width (its text tower is the teacher's)"
            )
        if config["context_length"] != teacher["context_length"]:
            raise ValueError(
                f"context_length ({config['context_length']}) must be the teacher's "
                f"({teacher['context_length']}): the student's texts go through the teacher's text tower"
            )
        texts = config["method_kwargs"].get("texts", OWN)
        for spec in constructed_parts(texts):
            if spec["queries"] > config["train_size"]:
                raise ValueError(
                    f"texts: a constructed corpus of {spec['queries']} queries needs as many images; "
                    f"the image corpus has train_size = {config['train_size']}"
                )

    @classmethod
    def wrap_model(cls, model: nn.Module, kwargs: dict[str, Any], trained: Trained) -> nn.Module:
        """The student's image tower + the frozen teacher's text tower at logit scale 100 (``CompositeCLIP``): what
        ``get_loss`` trains (``student_text_feat = teacher_text_feat``) and the zero-shot model of the official
        evaluation (``clip_vit_img_only.py``: the student's image encoder, CLIP-L/14's text encoder)."""
        check_teacher(kwargs["teacher"], kwargs.get("teacher_policy", "train"))  # "reuse": stored, or refused
        teacher, _ = trained(kwargs["teacher"])
        return CompositeCLIP(model, teacher)

    @classmethod
    def arguments(cls, kwargs: dict[str, Any], context: MethodContext) -> dict[str, Any]:
        """The teacher's features, computed once per run (cached on disk): ``data.extra["teacher_image"]`` of the
        unaugmented images (Supp A.1: teacher features are pre-extracted, the teacher sees no augmentation) and
        ``teacher_text`` of the own captions, or the text corpus as ``text_data``."""
        from vlp_lib.eval import (  # late: eval is heavy and imports the models
            encode_images,
            encode_texts,
        )

        kwargs = dict(kwargs)
        teacher_config, texts = kwargs.pop("teacher"), kwargs.pop("texts", OWN)
        kwargs.pop("teacher_policy", None)
        teacher, tokenizer = context.trained(teacher_config)
        data = context.data
        key = {"teacher": runs.config_hash(teacher_config), "images": image_corpus_key(context.config, data)}
        image_features = frozen_arrays(
            "dimefm-teacher-images", key, lambda: {"features": encode_images(teacher, data.images)}, paper=PAPER
        )["features"]
        data.extra["teacher_image"] = torch.from_numpy(np.asarray(image_features, np.float32))

        def encode(sentences: list[str]) -> torch.Tensor:
            return encode_texts(teacher, tokenizer, list(sentences))

        if texts == OWN:
            stored = frozen_arrays(
                "dimefm-teacher-texts", {**key, "texts": OWN}, lambda: {"features": encode(data.captions)}, paper=PAPER
            )
            data.extra["teacher_text"] = torch.from_numpy(np.asarray(stored["features"], np.float32))
            kwargs["text_data"] = None
            return kwargs

        def build() -> dict[str, Any]:
            sentences = build_corpus(texts, query_features=data.extra["teacher_image"], encode=encode)
            return {"features": encode(sentences), "texts": sentences}

        # the constructed corpus depends on the image corpus (its queries); the others on the spec alone
        text_key = {**key, "texts": texts} if constructed_parts(texts) else {"teacher": key["teacher"], "texts": texts}
        stored = frozen_arrays("dimefm-teacher-texts", text_key, build, paper=PAPER)
        sentences = list(stored["texts"])
        kwargs["text_data"] = PairedData(
            images=np.zeros((len(sentences), *data.images.shape[1:]), np.uint8),  # never read: the pools keep apart
            captions=sentences,
            tokens=tokenize_all(context.tokenizer, sentences),
            extra={"teacher_text": torch.from_numpy(np.asarray(stored["features"], np.float32))},
        )
        return kwargs

    def training_data(self, data: PairedData) -> tuple[PairedData, Sampler | None]:
        """Own captions: the image corpus itself, texts in their own order (or paired). A text corpus: joined to
        the images (``paired.concat``; each side gets zeros for the other side's features, never read) and drawn
        from its own pool, restarting when exhausted, as the code's text loader."""
        if self.text_data is None:
            return data, EpisodeSampler(paired=self.paired)
        dim = data.extra["teacher_image"].shape[1]
        images = replace(data, extra={**data.extra, "teacher_text": torch.zeros(len(data), dim)})
        texts = replace(
            self.text_data, extra={**self.text_data.extra, "teacher_image": torch.zeros(len(self.text_data), dim)}
        )
        merged, pools = concat({"images": images, "texts": texts})
        return merged, EpisodeSampler(paired=False, images=pools["images"], texts=pools["texts"])

    def on_episode_start(self, model: nn.Module, episode: Episode) -> None:
        self._episode_images = episode.indices

    def pseudo_texts(self, batch: Batch) -> torch.Tensor:
        """Inter-batch L_p-vl (Supp G): the teacher image features of the episode's previous batch (positions
        b - 1; the episode's last batch for its first), gathered from the data like any side data."""
        assert self._episode_images is not None  # set by on_episode_start
        assert batch.data is not None  # training batches gather their side data from it
        size = len(batch.indices)
        n_batches = len(self._episode_images) // size
        previous = (int(batch.positions[0]) // size - 1) % n_batches
        rows = self._episode_images[previous * size : (previous + 1) * size]
        return batch.data.gather("teacher_image", rows).to(batch.images.device)

    def loss(self, model: Any, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:  # open_clip CLIP (duck-typed)
        student = model.encode_image(batch.images).float()  # the teacher's features are float32
        pseudo = self.pseudo_texts(batch) if self.pvl == "inter" and self.lambda1 > 0 else None
        out = dimefm_loss(
            batch.side("teacher_image"),
            student,
            batch.side("teacher_text", of="text"),
            self.lambda1,
            self.lambda2,
            pseudo_texts=pseudo,
        )
        logs = {f"loss_{term}": float(out[term].detach()) for term in ("vl", "pvl", "udist")}
        return out["loss"], logs

    def after_step(self, model: nn.Module) -> None:
        """Nothing: the logit scale is fixed at 100 (``set_logit_scale``), there is no temperature to clamp."""
