"""The world-LM: ICMLM's frozen BERT_base, in the world (this book's stand-in).

ICMLM (Sariyildiz et al.) encodes the masked caption with a pretrained BERT_base that stays frozen while the
visual backbone and the fusion head train (Supp F.1: "we freeze the pretrained BERT_base model"). No pretrained
model knows the world's words, so the book pretrains its own: a small transformer masked language model over the
world's word tokenizer (2 layers, width 128, 4 heads: ``DEFAULTS``), trained with BERT's recipe (15% of the word
tokens chosen; of those 80% replaced by ``[MASK]``, 10% by a random word, 10% kept) on the captions of a world
seed no training world uses (text only: ``corpora.caption_corpus``), then frozen with its MLM head. It is built
once per config and cached (``teachers.frozen_model``, keyed by the config and the code fingerprint).

Its token embeddings hold one id more than the tokenizer: ``mask_id = tokenizer.vocab_size`` is ``[MASK]``, which
no caption contains. ``masked_token_accuracy`` measures it alone on masked captions: the "BERT_base alone" proxy
of Supp Tab. 2's caption (25.7% top-1 on COCO).

The architecture is BERT's shape at a small size (learned positions, GELU, an MLM head of dense + GELU + LayerNorm
+ decoder tied to the token embeddings) with pre-LayerNorm blocks, which train stably in the minute the book gives
them (BERT is post-LN); that choice is ours.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vlp_lib.cache import frozen_model
from vlp_lib.config import check_number
from vlp_lib.data.corpora import caption_corpus
from vlp_lib.data.paired import tokenize_all
from vlp_lib.data.tokenizer import DEFAULT_CONTEXT_LENGTH, world_tokenizer
from vlp_lib.data.world import check_knobs
from vlp_lib.runs import paper_of_module

PAPER = paper_of_module(__name__)  # whose fingerprint keys what this module caches

FROZEN_NAME = "world-lm"
# The default world-LM: the spec's 2 layers, width 128, 4 heads, pretrained on 50,000 captions of world seed 90,001
# (no run of the book trains on it) with the world's noise but no alt-text junk and no mismatch (BERT's text is
# prose, not web alt-text). Measured on the 2-core CPU (unloaded): 3 epochs = 1,172 steps of 128 in 52 s, MLM loss
# 4.2 -> 1.30, masked-token top-1 29% on the 50 most frequent tags of 2,000 held-out clean captions. An MLP ratio of
# 2 and no dropout: at ratio 4 with dropout 0.1 a step took 2.5x longer, and a minute's pretraining sees each caption
# three times, too few to overfit.
DEFAULTS: dict[str, Any] = dict(
    layers=2,
    width=128,
    heads=4,
    mlp_ratio=2,
    dropout=0.0,
    mask_rate=0.15,
    captions=50_000,
    world_seed=90_001,
    world_knobs=dict(junk_rate=0.0, mismatch_rate=0.0),
    context_length=DEFAULT_CONTEXT_LENGTH,
    epochs=3,
    batch_size=128,
    lr=2e-3,
    warmup_steps=50,
    seed=0,
)
_INTS = ("layers", "width", "heads", "mlp_ratio", "captions", "context_length", "batch_size")


def check_config(config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The full world-LM config: ``DEFAULTS`` with ``config``'s entries on top, checked. ``ValueError`` naming the
    entry (e.g. ``mask_rate`` outside (0, 1), ``heads`` not dividing ``width``) before anything is built."""
    config = dict(config or {})
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"world-LM config: unknown entries {unknown}; known: {sorted(DEFAULTS)}")
    out = {**DEFAULTS, **config}
    for name in _INTS:
        value = out[name]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        out[name] = int(value)
    if out["context_length"] < 3:
        raise ValueError(f"context_length must be >= 3 (<sot>, a word, <eot>), got {out['context_length']}")
    if out["width"] % out["heads"]:
        raise ValueError(f"heads ({out['heads']}) must divide width ({out['width']})")
    rate = check_number("mask_rate", out["mask_rate"])
    if not 0.0 < rate < 1.0:
        raise ValueError(f"mask_rate must be in (0, 1), got {out['mask_rate']!r}")
    dropout = check_number("dropout", out["dropout"])
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {out['dropout']!r}")
    if not check_number("epochs", out["epochs"]) > 0:
        raise ValueError(f"epochs must be positive, got {out['epochs']!r}")
    if not check_number("lr", out["lr"]) > 0:
        raise ValueError(f"lr must be positive, got {out['lr']!r}")
    warmup = out["warmup_steps"]
    if isinstance(warmup, bool) or not isinstance(warmup, (int, np.integer)) or warmup < 0:
        raise ValueError(f"warmup_steps must be an integer >= 0, got {warmup!r}")
    seed = out["seed"]
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    out.update(
        mask_rate=rate,
        dropout=dropout,
        epochs=float(out["epochs"]),
        lr=float(out["lr"]),
        warmup_steps=int(warmup),
        seed=int(seed),
        world_seed=int(out["world_seed"]),
    )
    out["world_knobs"] = {
        k: v for k, v in check_knobs(**dict(out["world_knobs"] or {})).items() if k in (out["world_knobs"] or {})
    }
    return out


class WorldLM(nn.Module):
    """A BERT-shaped masked language model over the world tokenizer's ids, plus ``[MASK]`` = ``vocab_size``.

    ``forward(tokens)`` gives the contextual token states ``[B, T, width]`` (ICMLM's W_i), ``mlm_logits(states)``
    the MLM head's logits over the tokenizer's ``vocab_size`` words (never ``[MASK]``)."""

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        width: int = 128,
        layers: int = 2,
        heads: int = 4,
        mlp_ratio: int = 4,
        dropout: float = 0.1,
        pad_id: int = 0,
    ):
        super().__init__()
        self.vocab_size, self.context_length, self.width, self.pad_id = vocab_size, context_length, width, pad_id
        self.mask_id = vocab_size
        self.token_embedding = nn.Embedding(vocab_size + 1, width)
        self.positional_embedding = nn.Parameter(torch.randn(context_length, width) * 0.02)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(
            width, heads, mlp_ratio * width, dropout, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.ln_final = nn.LayerNorm(width)
        # BERT's MLM head: transform, then a decoder tied to the input embeddings, with its own bias
        self.transform = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width))
        self.decoder_bias = nn.Parameter(torch.zeros(vocab_size))
        nn.init.normal_(self.token_embedding.weight, std=0.02)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.shape[1] > self.context_length:
            raise ValueError(f"tokens have {tokens.shape[1]} positions, the world-LM {self.context_length}")
        x = self.token_embedding(tokens) + self.positional_embedding[: tokens.shape[1]]
        x = self.encoder(self.dropout(x), src_key_padding_mask=tokens == self.pad_id)
        return self.ln_final(x)

    def mlm_logits(self, states: torch.Tensor) -> torch.Tensor:
        """The MLM head on token states ``[..., width]``: logits over the ``vocab_size`` words."""
        return self.transform(states) @ self.token_embedding.weight[: self.vocab_size].T + self.decoder_bias

    def masked_logits(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, vocab_size]`` of the token at ``positions[b]`` of each masked caption ``tokens[b]``."""
        states = self(tokens)
        return self.mlm_logits(states[torch.arange(len(tokens), device=tokens.device), positions])


def bert_mask(
    tokens: torch.Tensor, rate: float, mask_id: int, vocab: tuple[int, int], generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking of word tokens (ids in ``[vocab[0], vocab[1])``: not pad, ``<sot>``, ``<eot>``): each is
    chosen with probability ``rate``; a chosen one becomes ``mask_id`` (80%), a random word (10%) or stays (10%).
    Returns ``(inputs, labels)``, ``labels`` = -100 where the token was not chosen."""
    words = (tokens >= vocab[0]) & (tokens < vocab[1])
    draw = torch.rand(tokens.shape, generator=generator)
    chosen = words & (draw < rate)
    labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))
    kind = torch.rand(tokens.shape, generator=generator)
    random_words = torch.randint(vocab[0], vocab[1], tokens.shape, generator=generator)
    inputs = torch.where(chosen & (kind < 0.8), torch.full_like(tokens, mask_id), tokens)
    inputs = torch.where(chosen & (kind >= 0.8) & (kind < 0.9), random_words, inputs)
    return inputs, labels


def pretrain(lm: WorldLM, tokens: torch.Tensor, config: Mapping[str, Any], vocab: tuple[int, int]) -> dict[str, Any]:
    """Pretrain ``lm`` in place on ``tokens`` ``[N, T]`` with BERT's masking (``bert_mask``) at ``mask_rate``:
    AdamW (weight decay 0.01), linear warm-up then cosine decay, ``epochs`` passes in batches of ``batch_size``.
    Returns the loss of the first and last tenth of the steps and the number of steps."""
    generator = torch.Generator().manual_seed(config["seed"])
    n, batch = len(tokens), min(config["batch_size"], len(tokens))
    steps = max(1, int(round(config["epochs"] * n / batch)))
    optimizer = torch.optim.AdamW(lm.parameters(), lr=config["lr"], weight_decay=0.01)
    warmup = min(config["warmup_steps"], steps // 2)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: (
            (s + 1) / warmup if s < warmup else 0.5 * (1 + math.cos(math.pi * (s - warmup) / max(1, steps - warmup)))
        ),
    )
    lm.train()
    losses, order, cursor = [], torch.randperm(n, generator=generator), 0
    for _ in range(steps):
        if cursor + batch > n:
            order, cursor = torch.randperm(n, generator=generator), 0
        rows = tokens[order[cursor : cursor + batch]]
        cursor += batch
        inputs, labels = bert_mask(rows, config["mask_rate"], lm.mask_id, vocab, generator)
        if not (labels >= 0).any():
            continue
        states = lm(inputs)
        chosen = labels >= 0
        loss = F.cross_entropy(lm.mlm_logits(states[chosen]), labels[chosen])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
    lm.eval()
    tenth = max(1, len(losses) // 10)
    return {
        "steps": len(losses),
        "loss_first": float(np.mean(losses[:tenth])),
        "loss_last": float(np.mean(losses[-tenth:])),
    }


def world_lm(config: Mapping[str, Any] | None = None, verbose: bool = True) -> tuple[WorldLM, dict[str, Any]]:
    """The frozen world-LM of ``config`` (``check_config``; ``None``: ``DEFAULTS``) and its pretraining info
    (losses, steps, seconds): pretrained on first use and cached (``teachers.frozen_model``), loaded afterwards.
    The module is in eval mode with ``requires_grad`` off."""
    config = check_config(config)
    tokenizer = world_tokenizer(config["context_length"])
    vocab = (tokenizer.sot_id + 1, tokenizer.eot_id)  # the word ids

    def architecture() -> WorldLM:
        torch.manual_seed(config["seed"])
        return WorldLM(
            tokenizer.vocab_size,
            config["context_length"],
            config["width"],
            config["layers"],
            config["heads"],
            config["mlp_ratio"],
            config["dropout"],
            tokenizer.pad_id,
        )

    def train(lm: WorldLM) -> dict[str, Any]:
        start = time.perf_counter()
        captions = caption_corpus(config["captions"], config["world_seed"], **config["world_knobs"])
        info = pretrain(lm, tokenize_all(tokenizer, captions), config, vocab)
        info["seconds"] = round(time.perf_counter() - start, 2)
        return info

    # frozen_model builds with ``architecture`` and trains with ``train``: the module is a WorldLM
    train_module = cast("Callable[[nn.Module], dict[str, Any]]", train)
    lm, info = frozen_model(FROZEN_NAME, config, architecture, train_module, verbose=verbose, paper=PAPER)
    return cast(WorldLM, lm), info


def masked_token_accuracy(
    lm: WorldLM,
    tokens: torch.Tensor,
    positions: torch.Tensor,
    targets: torch.Tensor,
    candidates: torch.Tensor | None = None,
    batch_size: int = 1024,
) -> float:
    """Top-1 accuracy of ``lm`` alone on masked captions (the "BERT_base alone" proxy, Supp Tab. 2 caption):
    ``tokens`` ``[M, T]`` with ``[MASK]`` at ``positions`` ``[M]``, ``targets`` ``[M]`` the hidden ids
    (``lexicon.masked_triplets`` builds them). ``candidates``: restrict the prediction to these token ids (e.g.
    the label set); ``None``: the whole vocabulary."""
    if not (len(tokens) == len(positions) == len(targets)) or len(tokens) == 0:
        raise ValueError(
            f"tokens, positions and targets must be non-empty and of one length, got "
            f"{len(tokens)}, {len(positions)}, {len(targets)}"
        )
    device = next(lm.parameters()).device
    correct = 0
    was_training = lm.training
    lm.eval()
    with torch.no_grad():
        for start in range(0, len(tokens), batch_size):
            rows = slice(start, start + batch_size)
            logits = lm.masked_logits(tokens[rows].to(device), positions[rows].to(device))
            if candidates is not None:
                ids = candidates.to(device)
                predicted = ids[logits[:, ids].argmax(1)]
            else:
                predicted = logits.argmax(1)
            correct += int((predicted.cpu() == targets[rows].cpu()).sum())
    lm.train(was_training)
    return correct / len(tokens)
