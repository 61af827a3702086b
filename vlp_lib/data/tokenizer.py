"""A word-level tokenizer for the generated world, shaped like open_clip's tokenizers.

The world's vocabulary is a few hundred words (``vlp_lib.data.vocab.vocabulary()``), so one id per word
is enough and keeps the text tower's embedding table tiny. Ids: ``<pad>`` = 0, ``<unk>`` = 1,
``<sot>`` = 2, words 3.., and ``<eot>`` = ``vocab_size - 1``: open_clip's text tower pools the token at
``text.argmax(-1)``, which must therefore be the end-of-text token.

Default context length: measured on 20,000 default-knob captions (``benchmarks/bench_world.py`` prints
it), captions have a median of 10 words, 99th percentile 21 and maximum 29; with ``<sot>``/``<eot>``,
24 tokens fit 99.6% of captions (16 would fit 81%). Summaries, definitions and prompts are shorter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vlp_lib.config import check_positive_int

if TYPE_CHECKING:
    import torch

PAD, UNK, SOT = "<pad>", "<unk>", "<sot>"
EOT = "<eot>"
DEFAULT_CONTEXT_LENGTH = 24

_WORD_RE = re.compile(r"[a-z0-9]+")


class WordTokenizer:
    """Lowercase, split into letter/digit runs (punctuation dropped), map words to ids.

    ``tokenizer(texts)`` returns a ``torch.LongTensor [B, context_length]``: ``<sot> w1 ... wk <eot>``,
    truncated so that ``<eot>`` is always present, padded with 0. Unknown words become ``<unk>``.
    """

    def __init__(self, vocab: Sequence[str], context_length: int = DEFAULT_CONTEXT_LENGTH):
        self.context_length = check_positive_int("context_length", context_length)
        if self.context_length < 2:
            raise ValueError(f"context_length must be >= 2 (room for <sot> and <eot>), got {context_length!r}")
        words = list(dict.fromkeys(vocab))  # unique, order kept
        bad = [w for w in words if not isinstance(w, str) or _WORD_RE.fullmatch(w) is None]
        if bad:
            raise ValueError(f"vocab must hold lowercase letter/digit words only, got {bad[:5]}")
        self.words: list[str] = [PAD, UNK, SOT] + words + [EOT]
        self.word_to_id: dict[str, int] = {w: i for i, w in enumerate(self.words)}
        self.pad_id, self.unk_id, self.sot_id = 0, 1, 2
        self.eot_id = len(self.words) - 1
        self.vocab_size = len(self.words)

    def encode(self, text: str) -> list[int]:
        """Word ids of ``text`` without ``<sot>``/``<eot>``."""
        get = self.word_to_id.get
        return [get(w, self.unk_id) for w in _WORD_RE.findall(text.lower())]

    def __call__(self, texts: str | Sequence[str], context_length: int | None = None) -> torch.Tensor:
        import torch  # here, not at module level: data-only users (notebooks, world workers) skip its import

        texts = [texts] if isinstance(texts, str) else list(texts)
        length = self.context_length if context_length is None else check_positive_int("context_length", context_length)
        rows = []
        for text in texts:
            ids = [self.sot_id] + self.encode(text)[: length - 2] + [self.eot_id]
            rows.append(ids + [self.pad_id] * (length - len(ids)))
        return torch.tensor(rows, dtype=torch.long).reshape(len(rows), length)

    def decode(self, ids: Sequence[int] | torch.Tensor) -> str:
        """Words of one id sequence, stopping at ``<eot>``; ``<pad>``/``<sot>`` dropped, ``<unk>`` kept."""
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        out = []
        for i in ids:
            if i == self.eot_id:
                break
            if i in (self.pad_id, self.sot_id):
                continue
            out.append(self.words[i])
        return " ".join(out)

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return f"WordTokenizer(vocab_size={self.vocab_size}, context_length={self.context_length})"


def world_tokenizer(context_length: int = DEFAULT_CONTEXT_LENGTH) -> WordTokenizer:
    """The tokenizer of the generated world: every word of captions, summaries, definitions and prompts."""
    from vlp_lib.data.vocab import vocabulary

    return WordTokenizer(vocabulary(), context_length=context_length)
