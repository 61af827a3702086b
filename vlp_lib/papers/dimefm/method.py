"""DIME-FM (Sun et al., ICCV 2023): a large frozen CLIP distilled into a small image encoder from unpaired data.

The official code (``sunxm2357/DIME-FM``, ``Training/``) trains only the student's image tower and its projection
(``train_amp.py`` optimises ``ImageCLIP(student_model)``); in ``utils.get_loss`` the student's text features *are*
the teacher's (``student_text_feat = teacher_text_feat``). So a run here trains a ``models.CompositeCLIP``: the
student's image tower + the teacher's frozen text tower, logits = 100 cos (``split_network.set_logit_scale``, not
learned), and the same composite is evaluated (zero-shot with the teacher's text tower) and stored.

Per step (``get_loss``; ``papers.dimefm.loss``): B images with their teacher image features, pre-extracted once from the
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
- The teacher is an ordinary CLIP run of this book (``DIMEFMArgs.teacher``: its ``RunConfig``), trained once
  and stored like any run, loaded frozen. Its features of each corpus are cached (``teachers.frozen_arrays``,
  keyed by the teacher's config hash, the corpus and the code fingerprint). Or, as the paper distils a teacher
  trained elsewhere, it is read from a checkpoint file (``teacher_checkpoint``; ``papers.dimefm.inputs``), the
  teacher's run config then naming only its architecture.
- The image corpus is the run's training images (``train_data``) or an image folder (``images``: the paper's
  image corpora carry no captions); the text corpus their own captions, a corpus spec, or a text file
  (``texts={"kind": "file", ...}``). With an image folder, "own" texts are the captions of ``train_data``: a text
  corpus apart from the images, never paired with them.

Data-parallel (``torchrun ... -m vlp_lib.launch``, ``vlp_lib.distributed``): each rank encodes its share of the
global batch and reads its rows' teacher features (side data, by its indices); every KL term scores the rank's rows
against the global batch, the teacher's features gathered without gradient and the student's with
(``papers.dimefm.loss``), and inter-batch pseudo texts are the whole previous global batch, read on every rank. Measured
on this CPU (``tests/test_distributed_dimefm.py``: 2 gloo processes vs 1, ``vit-tiny`` student and teacher, 8 steps of
global batch 32, lambda1 = 0.3, lambda2 = 0.5): own captions with intra-batch L_p-vl, final loss 1.33274482 vs
1.33274488, the largest difference over the loss history 1.3e-6 (L_vl 1.8e-6, L_p-vl 2.4e-7, L_udist 1.2e-7);
an NLP text corpus with inter-batch L_p-vl, final loss 1.49664558 vs 1.49664552, history 5.7e-7 (L_vl 7.7e-7,
L_p-vl 2.2e-7, L_udist 7e-8); zero-shot, linear probe and retrieval equal. One process is unchanged, bit for bit.
"""

from __future__ import annotations

import functools
import hashlib
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, cast

import numpy as np
import open_clip
import torch
from open_clip.modified_resnet import ModifiedResNet
from open_clip.transformer import VisionTransformer
from torch import nn

from vlp_lib import experiment, runs
from vlp_lib.cache import frozen_arrays
from vlp_lib.config import check_bool
from vlp_lib.data.corpora import build_corpus, check_corpus, constructed_parts
from vlp_lib.data.paired import PairedData, concat, tokenize_all
from vlp_lib.data.sampler import EpisodeSampler, Sampler
from vlp_lib.methods.args import MethodArgs
from vlp_lib.methods.base import Batch, Episode, Method, MethodContext, Trained
from vlp_lib.models import CompositeCLIP, count_parameters
from vlp_lib.papers.dimefm import inputs
from vlp_lib.papers.dimefm.loss import check_lambdas, dimefm_loss
from vlp_lib.run_config import RunConfig
from vlp_lib.runs import paper_of_module

PAPER = paper_of_module(__name__)  # whose fingerprint keys what this module caches

OWN = "own"  # texts: the image corpus' own captions
POLICIES = ("train", "reuse")  # teacher_policy: train the teacher run if it is not stored, or require it stored
PVL = ("intra", "inter")  # L_p-vl's pseudo texts: this batch's teacher image features, or the previous batch's


def teacher_stored(teacher: RunConfig) -> bool:
    """Whether the teacher run is in the results store with the current code (``experiment.stored``)."""
    return experiment.stored(teacher) is not None


def read_teacher(teacher: Any) -> RunConfig:
    """``teacher`` (a ``RunConfig`` or its record form, ``RunConfig.to_dict``) as a ``RunConfig``: ``ValueError``
    naming ``teacher`` unless it is the config of a CLIP run, valid as ``experiment.make_config`` checks it (a
    record form is read back in full, so its key in the results store is that of the config ``make_config``
    returns)."""
    if isinstance(teacher, RunConfig):
        method = teacher.method
    elif isinstance(teacher, Mapping) and {"scale", "method", "seed"} <= set(teacher):
        method = teacher["method"]
    else:
        raise ValueError(f"teacher must be a run config (experiment.make_config(...)), got {teacher!r}")
    if method != "clip":
        raise ValueError(f"teacher must be a CLIP run (method 'clip'): DIME-FM distils a CLIP, got method {method!r}")
    if isinstance(teacher, RunConfig):
        return teacher
    try:
        return RunConfig.from_dict(teacher)
    except ValueError as err:
        raise ValueError(f"teacher: {err}") from None


def check_teacher_policy(teacher: RunConfig, policy: str, checkpoint: Any = None) -> None:
    """``ValueError`` naming ``teacher_policy`` if it is ``"reuse"`` and the teacher run is not stored (a teacher
    read from a ``checkpoint`` is never trained: nothing to check)."""
    if policy == "reuse" and checkpoint is None and not teacher_stored(teacher):
        raise ValueError(
            "teacher_policy 'reuse': the teacher run is not stored (with this code); train it first "
            "(experiment.run(teacher)) or use teacher_policy 'train'"
        )


@dataclass(frozen=True)
class DIMEFMArgs(MethodArgs):
    """DIME-FM's arguments in a run config (``method_kwargs``), with their defaults; ``DIMEFM`` describes the loss'
    ones. ``teacher`` (required) is the run config of the CLIP to distil (``experiment.make_config``; a record form
    is read back); ``teacher_policy`` "train" trains it if it is not stored, "reuse" requires it stored;
    ``teacher_checkpoint`` (a path, or its spec: ``inputs.checkpoint_spec``) reads the teacher's weights from a file
    instead, ``teacher`` then naming its architecture only; ``images`` (an image folder, or its spec:
    ``inputs.image_folder_spec``) is the image corpus instead of the run's training images; ``texts`` is "own" (the
    image corpus' captions; with ``images``, those of the run's training pairs, unpaired), a corpus spec
    (``data.corpora.check_corpus``) or a text file (``{"kind": "file", "path": ...}``: ``inputs.text_file_spec``).
    A path is checked (the file exists, loads, fits) and turned into its spec here, before any compute."""

    method: ClassVar[str] = "DIME-FM"

    teacher: RunConfig
    teacher_policy: Literal["train", "reuse"] = "train"
    texts: str | dict[str, Any] = OWN
    paired: bool = False
    lambda1: float = 0.3
    lambda2: float = 0.0
    pvl: Literal["intra", "inter"] = "intra"
    teacher_checkpoint: str | dict[str, Any] | None = None
    images: str | dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, kwargs: Mapping[str, Any] | None) -> DIMEFMArgs:
        """``MethodArgs.from_dict``, the teacher required and read first (``read_teacher``)."""
        if isinstance(kwargs, cls):
            return kwargs
        if kwargs is None or (isinstance(kwargs, Mapping) and "teacher" not in kwargs):
            raise ValueError("teacher is required: the run config of the CLIP to distil (experiment.make_config)")
        if isinstance(kwargs, Mapping):
            kwargs = {**kwargs, "teacher": read_teacher(kwargs["teacher"])}
        return super().from_dict(kwargs)

    def __post_init__(self) -> None:
        object.__setattr__(self, "teacher", read_teacher(self.teacher))  # a record form read back (frozen)
        if self.teacher_policy not in POLICIES:
            raise ValueError(f"teacher_policy must be one of {POLICIES}, got {self.teacher_policy!r}")
        check_lambdas(self.lambda1, self.lambda2)
        if self.pvl not in PVL:
            raise ValueError(f"pvl must be one of {PVL}, got {self.pvl!r}")
        if inputs.is_text_file(self.texts):
            texts = self.texts
            if set(texts) != set(inputs.TEXT_FILE_KEYS):  # a path to read: {"kind": "file", "path": ...}
                texts = inputs.text_file_spec(texts, "texts")
            object.__setattr__(self, "texts", inputs.check_spec("texts", texts, inputs.TEXT_FILE_KEYS))
        elif self.texts != OWN:
            try:
                check_corpus(self.texts)
            except ValueError as err:
                raise ValueError(f"texts must be {OWN!r}, a corpus spec or a text file: {err}") from None
        check_bool("paired", self.paired)
        if self.paired and self.texts != OWN:
            raise ValueError(
                f"paired=True pairs each image with its own caption: it needs texts={OWN!r}, got {self.texts!r}"
            )
        if self.teacher_checkpoint is not None:
            spec = self.teacher_checkpoint
            if isinstance(spec, str):
                spec = inputs.checkpoint_spec(spec, self.teacher)
            object.__setattr__(
                self, "teacher_checkpoint", inputs.check_spec("teacher_checkpoint", spec, inputs.CHECKPOINT_KEYS)
            )
        if self.images is not None:
            spec = inputs.image_folder_spec(self.images, "images") if isinstance(self.images, str) else self.images
            object.__setattr__(self, "images", inputs.check_spec("images", spec, inputs.FOLDER_KEYS))
            if self.paired:
                raise ValueError("paired=True pairs each image with its own caption: the images of a folder have none")


def at_width(tower: nn.Module, width: int) -> nn.Module:
    """The image ``tower`` (in place) with an output projection into ``width`` dimensions: DIME-FM's student embeds
    into its teacher's width, since its image features are scored against the teacher's text tower (the official
    config sets the student's ``EMBED_DIM`` to the teacher's, 768 for ViT-L/14). The paper-scale RN50 student
    (1,024-d in open_clip's config) of a ViT-B-32 teacher (512-d) gets a new 2,048 -> 512 attention-pool output
    (``attnpool.c_proj``), a ViT a new ``proj`` [width, 512]; the rest of the tower is as built. The new layer takes
    open_clip's initialisation of that layer (``ModifiedResNet.init_parameters``, ``VisionTransformer.__init__``),
    drawn from torch's generator, which ``models.create_model`` has just seeded with the run's seed: the same seed,
    the same student. When the widths agree (every smoke and laptop run) the tower is returned untouched and nothing
    is drawn. ``ValueError`` for a tower of another kind (open_clip's timm or attention-pooled ViT towers)."""
    width = int(width)
    if tower.output_dim == width:
        return tower
    if isinstance(tower, ModifiedResNet):
        pool = tower.attnpool
        projection = nn.Linear(pool.c_proj.in_features, width)
        nn.init.normal_(projection.weight, std=pool.c_proj.in_features**-0.5)
        pool.c_proj = projection
    elif isinstance(tower, VisionTransformer) and tower.attn_pool is None and tower.proj is not None:
        pooled = tower.proj.shape[0]
        tower.proj = nn.Parameter(pooled**-0.5 * torch.randn(pooled, width))
    else:
        raise ValueError(
            f"model: cannot fit a {type(tower).__name__} image tower to the teacher's width {width} "
            f"(its own is {tower.output_dim}): DIME-FM's students are open_clip ResNets or ViTs"
        )
    tower.output_dim = width
    return tower


def embed_width(model: str) -> int:
    """The joint embedding width of preset ``model`` (its open_clip config's ``embed_dim``): a teacher's text width."""
    return int(open_clip.get_model_config(model)["embed_dim"])


@functools.lru_cache(maxsize=256)
def image_tower_size(model: str, image_size: int, width: int | None = None) -> int:
    """Parameters of preset ``model``'s image tower at ``image_size``, projecting into ``width`` dimensions
    (``at_width``; ``None``: its own), read from a tower built on the meta device (no memory, no initialisation):
    a config check before any compute (``ValueError`` from ``at_width`` for a tower it cannot fit). Once per
    process for each tower: every DIME-FM config checks its student against its teacher (31 ms a tower, 552 towers
    when the scorecard judges the chapter's claims)."""
    cfg = open_clip.get_model_config(model)
    vision = {**cfg["vision_cfg"], "image_size": image_size}
    with torch.device("meta"):
        tower = open_clip.model._build_vision_tower(cfg["embed_dim"], vision)
        if width is not None:
            at_width(tower, width)
    return count_parameters(tower)


# the teachers read from checkpoints, one per ``trained`` (one per run, as ``experiment.trained_runs`` loads a teacher
# run once for ``wrap_model`` and ``arguments``); weak keys: gone with the run's ``trained``
_CHECKPOINT_TEACHERS: weakref.WeakKeyDictionary[Any, tuple[nn.Module, Any]] = weakref.WeakKeyDictionary()


def teacher_of(args: DIMEFMArgs, trained: Trained) -> tuple[nn.Module, Any]:
    """The frozen teacher (eval mode) and its tokenizer: the stored teacher run (``trained(args.teacher)``, trained
    first if not stored) or the weights of ``args.teacher_checkpoint`` in the teacher's architecture
    (``inputs.load_teacher``), read once per ``trained``."""
    if args.teacher_checkpoint is None:
        return trained(args.teacher)
    if trained not in _CHECKPOINT_TEACHERS:
        _CHECKPOINT_TEACHERS[trained] = inputs.load_teacher(
            cast(Mapping[str, Any], args.teacher_checkpoint), args.teacher
        )
    return _CHECKPOINT_TEACHERS[trained]


def teacher_key(args: DIMEFMArgs) -> Any:
    """What fixes the teacher in the keys of its cached features: its config's hash, and the checkpoint's digest
    when its weights come from a file."""
    key = runs.config_hash(args.teacher.to_dict())
    if args.teacher_checkpoint is None:
        return key
    return {"config": key, "checkpoint": cast(dict, args.teacher_checkpoint)["sha256"]}


def image_corpus_key(config: RunConfig, data: PairedData) -> dict[str, Any]:
    """What fixes a run's image corpus (its own training world and any ``world_mix``, or CSV), for the
    teacher-feature cache, with a digest of the corpus' captions: features cached for other data (a config key
    this list forgot, a CSV edited in place) are never read back."""
    keys = ("train_data", "train_size", "world_seed", "world_knobs", "world_mix", "image_size")
    digest = hashlib.sha256("\n".join(data.captions).encode()).hexdigest()[:16]
    record = config.to_dict()
    return {**{k: record.get(k) for k in keys}, "captions_sha256": digest}


class DIMEFM(Method):
    """DIME-FM's distillation (``papers.dimefm.loss.dimefm_loss``) of the teacher into the composite's image tower.

    Args:
        lambda1: weight of L_p-vl, L_vl gets 1 - lambda1 (Supp G sweeps [0, 1]; 1 "totally replaces" L_vl and
            collapses); the code's default 0.3.
        lambda2: weight of L_udist (Supp G: 0 to 5); the code's default 0 (``--use_udist_loss`` off).
        pvl: "intra" (the code's, kept by Supp G) or "inter" (pseudo texts from the episode's previous batch).
        paired: with the image corpus' own captions, each image with its own caption (Supp D's paired loading)
            instead of an independent text order.
        text_data: the text corpus (captions, tokens, ``extra["teacher_text"]``) joined to the image corpus by
            ``training_data``; ``None``: the own captions, whose teacher features are in the image data.
        image_data: the image corpus (images, ``extra["teacher_image"]``) when it is not the run's training pairs
            (an image folder); ``None``: the training pairs.

    Side data (``Method.arguments`` builds it): ``teacher_image`` [N, D] per image and ``teacher_text`` [N, D] per
    text, the teacher's (unnormalised) features; the losses normalise.
    """

    name = "dimefm"
    # across processes every KL term scores this rank's rows against the global batch: the teacher's image and text
    # features (side data read by the rank's indices) gathered without gradient, the student's image features with
    # (``papers.dimefm.loss``); inter-batch pseudo texts are the whole previous global batch, read on every rank
    distributed = True
    required_extras = ("teacher_image", "teacher_text")
    Args: ClassVar[type[MethodArgs]] = DIMEFMArgs

    def __init__(
        self,
        lambda1: float = DIMEFMArgs.lambda1,
        lambda2: float = DIMEFMArgs.lambda2,
        pvl: str = DIMEFMArgs.pvl,
        paired: bool = DIMEFMArgs.paired,
        text_data: PairedData | None = None,
        image_data: PairedData | None = None,
    ) -> None:
        super().__init__()
        if pvl not in PVL:
            raise ValueError(f"pvl must be one of {PVL}, got {pvl!r}")
        self.lambda1, self.lambda2, self.pvl, self.paired = float(lambda1), float(lambda2), pvl, paired
        self.text_data = text_data
        self.image_data = image_data
        self._episode_images: np.ndarray | None = None  # the episode's image order, for inter-batch L_p-vl
        self._batch_size = 0  # the episode's global batch size (a rank holds a share of each batch)

    @classmethod
    def check_args(cls, args: MethodArgs, episode_size: int) -> None:
        """``teacher_policy`` "reuse": the teacher run must be stored (``DIMEFMArgs`` checks the rest)."""
        a = cast(DIMEFMArgs, args)
        check_teacher_policy(a.teacher, a.teacher_policy, a.teacher_checkpoint)

    @classmethod
    def check_config(cls, config: RunConfig) -> None:
        """The student (``model`` at ``image_size``, projecting into the teacher's width: ``at_width``) must not be
        larger than the teacher in the image tower; both tokenise to one ``context_length``; a constructed corpus
        has at most ``train_size`` query images."""
        args = cast(DIMEFMArgs, config.method_args)
        teacher = args.teacher
        student_params = image_tower_size(config.model, config.image_size, embed_width(teacher.model))
        teacher_params = image_tower_size(teacher.model, teacher.image_size)
        if student_params > teacher_params:
            raise ValueError(
                f"model: a student larger than the teacher: {config.model}'s image tower has "
                f"{student_params:,} parameters, the teacher {teacher.model}'s {teacher_params:,}"
            )
        if config.context_length != teacher.context_length:
            raise ValueError(
                f"context_length ({config.context_length}) must be the teacher's "
                f"({teacher.context_length}): the student's texts go through the teacher's text tower"
            )
        images = config.train_size if args.images is None else int(cast(dict, args.images)["images"])
        for spec in constructed_parts(args.texts):
            if spec["queries"] > images:
                raise ValueError(
                    f"texts: a constructed corpus of {spec['queries']} queries needs as many images; "
                    f"the image corpus has {images} (train_size = {config.train_size})"
                )
        if args.images is not None and images < config.train.batch_size:
            raise ValueError(
                f"images: the folder holds {images} images, fewer than a batch (batch_size = "
                f"{config.train.batch_size}): an epoch is a pass over the image corpus"
            )

    @classmethod
    def wrap_model(cls, model: nn.Module, args: MethodArgs, trained: Trained) -> nn.Module:
        """The student's image tower, projecting into the teacher's width (``at_width``), + the frozen teacher's
        text tower at logit scale 100 (``CompositeCLIP``): what
        ``get_loss`` trains (``student_text_feat = teacher_text_feat``) and the zero-shot model of the official
        evaluation (``clip_vit_img_only.py``: the student's image encoder, CLIP-L/14's text encoder)."""
        a = cast(DIMEFMArgs, args)
        check_teacher_policy(a.teacher, a.teacher_policy, a.teacher_checkpoint)  # "reuse": stored, or refused
        # before the teacher is loaded (or trained, which seeds torch's generator anew): a new projection is drawn
        # from the generator the student's own build seeded
        at_width(model.visual, embed_width(a.teacher.model))
        teacher, _ = teacher_of(a, trained)
        return CompositeCLIP(model, teacher)

    @classmethod
    def arguments(cls, args: MethodArgs, context: MethodContext) -> dict[str, Any]:
        """The teacher's features, computed once per run (cached on disk): ``data.extra["teacher_image"]`` of the
        unaugmented images (Supp A.1: teacher features are pre-extracted, the teacher sees no augmentation) and
        ``teacher_text`` of the own captions, or the text corpus as ``text_data``. With an image folder
        (``images``) the image corpus is the folder's images (``image_data``) and the own captions, those of the
        training pairs, are a text corpus apart (``text_data``)."""
        from vlp_lib.eval import (  # late: eval is heavy and imports the models
            encode_images,
            encode_texts,
        )

        a = cast(DIMEFMArgs, args)
        texts = a.texts
        # the loss' arguments (lambda1, lambda2, pvl, paired); the teacher and the corpora become side data
        inputs_only = ("teacher", "teacher_policy", "texts", "teacher_checkpoint", "images")
        kwargs = {k: v for k, v in a.kwargs().items() if k not in inputs_only}
        teacher, tokenizer = teacher_of(a, context.trained)
        pairs = context.data  # the run's training pairs: the image corpus, or (with a folder) the own captions
        key = {"teacher": teacher_key(a), "images": image_corpus_key(context.config, pairs)}
        data, image_key = pairs, key
        if a.images is not None:
            folder = inputs.folder_images(cast(Mapping[str, Any], a.images), context.config.image_size, "images")
            data = PairedData(folder, [""] * len(folder), tokenize_all(context.tokenizer, [""] * len(folder)))
            image_key = {**key, "images": {"folder": a.images, "image_size": context.config.image_size}}
        image_features = frozen_arrays(
            "dimefm-teacher-images", image_key, lambda: {"features": encode_images(teacher, data.images)}, paper=PAPER
        )["features"]
        data.extra["teacher_image"] = torch.from_numpy(np.asarray(image_features, np.float32))
        kwargs["image_data"] = None if a.images is None else data

        def encode(sentences: list[str]) -> torch.Tensor:
            return encode_texts(teacher, tokenizer, list(sentences))

        if texts == OWN:
            stored = frozen_arrays(
                "dimefm-teacher-texts", {**key, "texts": OWN}, lambda: {"features": encode(pairs.captions)}, paper=PAPER
            )
            own_features = torch.from_numpy(np.asarray(stored["features"], np.float32))
            if a.images is None:
                data.extra["teacher_text"] = own_features
                kwargs["text_data"] = None
                return kwargs
            kwargs["text_data"] = PairedData(
                images=np.zeros((len(pairs), *data.images.shape[1:]), np.uint8),  # never read: the pools keep apart
                captions=list(pairs.captions),
                tokens=pairs.tokens,
                extra={"teacher_text": own_features},
            )
            return kwargs
        assert isinstance(texts, dict)  # not "own": a corpus spec or a text file (DIMEFMArgs checks it)

        def build() -> dict[str, Any]:
            if inputs.is_text_file(texts):
                sentences = inputs.read_text_file(texts, "texts")
            else:
                sentences = build_corpus(texts, query_features=data.extra["teacher_image"], encode=encode)
            return {"features": encode(sentences), "texts": sentences}

        # the constructed corpus depends on the image corpus (its queries); the others on the spec alone
        text_key = (
            {**image_key, "texts": texts} if constructed_parts(texts) else {"teacher": key["teacher"], "texts": texts}
        )
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
        from its own pool, restarting when exhausted, as the code's text loader. The images are ``data`` (the
        run's training pairs) or, when the method has them, ``image_data`` (an image folder)."""
        if self.image_data is not None:
            data = self.image_data
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
        self._episode_images, self._batch_size = episode.indices, episode.batch_size

    def pseudo_texts(self, batch: Batch) -> torch.Tensor:
        """Inter-batch L_p-vl (Supp G): the teacher image features of the episode's previous batch (positions
        b - 1; the episode's last batch for its first), gathered from the data like any side data. Across
        processes every rank reads the whole previous global batch (every rank holds the data): the same pseudo
        texts on every rank, as in one process, with no communication."""
        assert self._episode_images is not None  # set by on_episode_start
        assert batch.data is not None  # training batches gather their side data from it
        size = self._batch_size  # the global batch: this rank's positions lie inside batch b of it
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
