"""WordNet 3.0 glosses for the class names of real class data: iCLIP's dictionary-enhanced class texts ("a photo of a
{name}, {definition}") on a reader's own classes.

iCLIP (Wei et al., CVPR 2023) enriches every class name with its dictionary
definition so that a one-word class name reads like an alt-text. On the world the definitions are the world's own
(``vocab.DEFINITIONS``); on real class data they are WordNet 3.0's glosses, the dictionary ImageNet's classes come
from (an ImageNet-21K class folder is named by its WordNet noun synset: ``n02084071`` is ``dog.n.01``).

Source: Debian's ``wordnet-base`` package (Princeton's WordNet 3.0 database files), fetched at install time by
``python -m vlp_lib.papers.iclip.wordnet fetch`` (``apt-get download`` and ``dpkg-deb -x``: no root needed) into
``sys.prefix/share/wordnet/wordnet-3.0`` (installed with the environment); never at run time. Debian's copy lacks the ``lexnames`` file, which
``fetch`` writes from lexnames(5WN) (``LEXNAMES``). Read with nltk's ``WordNetCorpusReader``: nltk 3.10 reads only
corpora under ``nltk.data.path`` (the ``wordnet`` folder is appended to it), and its reader maps WordNet
versions through nltk's own ``wordnet`` corpus on construction (``map_wn``), which this reader skips (no mapping
between versions is needed: the database is 3.0).

Which synset a class name stands for (``sense``; "_" in a folder name reads as a space):

1. an ImageNet WordNet id (``n`` + the 8-digit noun offset, ``n02084071``): that noun synset, exactly;
2. a WordNet synset name (``plant.n.02``): that synset, exactly;
3. any other name: its first noun synset (plurals through WordNet's morphy: "plants" -> "plant"). WordNet orders a
   word's senses by their frequency in its sense-tagged corpus, so this is the most frequent sense, which is not
   always the one a picture shows ("plants": plant.n.01, "buildings for carrying on industrial labor"); a folder
   renamed to the synset's name (``plant.n.02``) names the sense exactly;
4. no noun synset: no gloss, and the class text keeps the bare name.

The class name written in a text is the folder's name, or for rules 1 and 2 the synset's first lemma ("dog").
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from vlp_lib.data import debian

PACKAGE = "wordnet-base"  # Debian's WordNet 3.0 database
FETCH_COMMAND = "python -m vlp_lib.papers.iclip.wordnet fetch"
DEBIAN = debian.Package(
    PACKAGE, "1:3.0-37", "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752", FETCH_COMMAND
)  # bookworm's, pinned
VERSION = "3.0"
FOLDER = "wordnet"  # under sys.prefix/share: appended to nltk.data.path
CORPUS = "wordnet-3.0"  # the database files, inside FOLDER
# What nltk's reader opens on construction (lexnames, the four indices and exception lists, data.adj for its
# satellites) and data.noun, which every gloss is read from.
REQUIRED_FILES = (
    "lexnames",
    *(f"{kind}.{pos}" for kind in ("index", "data") for pos in ("noun", "verb", "adj", "adv")),
    *(f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")),
)
# lexnames(5WN) of WordNet 3.0: the 45 lexicographer files, numbered in this order (the file's first field), and
# the syntactic category of each (1 noun, 2 verb, 3 adjective, 4 adverb).
LEXNAMES = (
    *("adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute"),
    *("noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group"),
    *("noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant"),
    *("noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state"),
    *("noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication"),
    *("verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion"),
    *("verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl"),
)
CATEGORIES = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
WNID = re.compile(r"n(\d{8})")  # an ImageNet class: its WordNet 3.0 noun offset
SYNSET_NAME = re.compile(r"[^\s.][^\s]*\.[nvasr]\.\d{2}")  # lemma.pos.nn


def directory() -> Path:
    """Where the WordNet 3.0 database lives: installed with the Python environment (``sys.prefix/share``, where nltk
    looks for its data too), not in the run caches, which tests and scratch stores replace (``fetch`` writes it;
    nothing is downloaded at run time)."""
    return Path(sys.prefix) / "share" / FOLDER / CORPUS


def installed() -> bool:
    """Whether every file the reader needs is in ``directory()``."""
    return all((directory() / name).is_file() for name in REQUIRED_FILES)


def not_installed(parameter: str) -> ValueError:
    """The error of a run that needs WordNet where it is not installed, naming ``parameter`` and the command."""
    return ValueError(
        f"{parameter}: WordNet {VERSION} (Debian's {PACKAGE}) is not installed at {directory()}; install it with "
        f"`{FETCH_COMMAND}` (`make venv` runs it; it needs apt-get and dpkg-deb, or --deb a downloaded "
        f"{PACKAGE}_*.deb)"
    )


def lexnames_text() -> str:
    """The ``lexnames`` file Debian's package lacks: ``NN<TAB>name<TAB>category`` per line (lexnames(5WN))."""
    return "".join(f"{i:02d}\t{name}\t{CATEGORIES[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))


def fetch(deb: str | os.PathLike | None = None, force: bool = False) -> Path:
    """Install WordNet 3.0 into ``directory()``: ``deb`` (a downloaded ``wordnet-base_*.deb``) or the package
    ``apt-get download`` fetches, unpacked with ``dpkg-deb -x``; its ``usr/share/wordnet`` files copied, the
    ``lexnames`` file written, and the result read once. Does nothing when already installed (unless ``force``).
    Install time only: ``RuntimeError`` naming the package and the commands when apt-get or dpkg-deb fails."""
    target = directory()
    if installed() and not force:
        return target
    with tempfile.TemporaryDirectory() as tmp:
        source = debian.unpack(DEBIAN, Path(tmp), deb) / "usr" / "share" / "wordnet"
        if not source.is_dir():
            raise RuntimeError(f"{deb} holds no usr/share/wordnet: not Debian's {PACKAGE}")
        staging = target.with_name(f".{CORPUS}.{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(source, staging)
        if not (staging / "lexnames").exists():
            (staging / "lexnames").write_text(lexnames_text())
        missing = [name for name in REQUIRED_FILES if not (staging / name).is_file()]
        if missing:
            raise RuntimeError(f"{deb} lacks the WordNet files {missing}")
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, target)
    reader.cache_clear()
    sense.cache_clear()
    version = reader().get_version()
    if version != VERSION:
        raise RuntimeError(f"{deb or PACKAGE} holds WordNet {version}, not {VERSION}")
    return target


@lru_cache(maxsize=1)
def reader() -> Any:
    """nltk's reader of the installed database (about 2 s, once per process); ``ValueError`` with the install
    command when it is not installed."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    if not installed():
        raise not_installed("class_data")

    class Reader(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:  # no version mapping: nltk's own corpus is not loaded
            return None

    if str(directory().parent) not in nltk.data.path:
        nltk.data.path.append(str(directory().parent))
    with warnings.catch_warnings():  # "multilingual functions are not available": no Open Multilingual WordNet
        warnings.simplefilter("ignore", UserWarning)
        return Reader(str(directory()), None)


@dataclass(frozen=True)
class Sense:
    """What WordNet says of one class: ``folder`` as given, the ``name`` a class text writes, the ``synset`` chosen
    (``None``: none found), its ``gloss`` and the ``rule`` that chose it (the module docstring's 1-4)."""

    folder: str
    name: str
    synset: str | None
    gloss: str | None
    rule: str


def needs_wordnet(folder: str) -> bool:
    """Whether the name a text writes for class ``folder`` comes from WordNet (a WordNet id or synset name)."""
    return WNID.fullmatch(folder) is not None or SYNSET_NAME.fullmatch(folder) is not None


def display_name(folder: str) -> str:
    """The class name a text writes for class ``folder``: the synset's first lemma for a WordNet id or synset name,
    else the folder's name with "_" read as a space."""
    if needs_wordnet(folder):
        return sense(folder).name
    return folder.replace("_", " ")


@cache
def sense(folder: str) -> Sense:
    """The synset and gloss of class ``folder`` (the module docstring's rules); ``ValueError`` with the install
    command when WordNet is not installed."""
    from nltk.corpus.reader.wordnet import WordNetError

    wn = reader()
    synset = None
    if match := WNID.fullmatch(folder):
        rule = "WordNet id"
        try:
            synset = wn.synset_from_pos_and_offset("n", int(match.group(1)))
        except WordNetError:
            synset = None
    elif SYNSET_NAME.fullmatch(folder):
        rule = "synset name"
        try:
            synset = wn.synset(folder)
        except (WordNetError, ValueError):
            synset = None
    else:
        found = wn.synsets(folder.strip().replace(" ", "_"), pos="n")
        rule = "first noun sense"
        synset = found[0] if found else None
    if synset is None:
        return Sense(folder, folder.replace("_", " "), None, None, "no noun synset")
    name = synset.lemma_names()[0].replace("_", " ") if rule != "first noun sense" else folder.replace("_", " ")
    return Sense(folder, name, synset.name(), synset.definition(), rule)


def senses(folders: Sequence[str]) -> list[Sense]:
    """``sense`` of each class, in order."""
    return [sense(f) for f in folders]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlp_lib.papers.iclip.wordnet", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    get = commands.add_parser("fetch", help=f"install WordNet {VERSION} from Debian's {PACKAGE} (install time)")
    get.add_argument("--deb", help=f"a downloaded {PACKAGE}_*.deb instead of `apt-get download`")
    get.add_argument("--force", action="store_true", help="install again over an existing copy")
    show = commands.add_parser("show", help="the synset and gloss chosen for each class name")
    show.add_argument("names", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        was = installed() and not args.force
        try:
            path = fetch(args.deb, args.force)
        except RuntimeError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        print(f"WordNet {VERSION} {'already installed' if was else 'installed'} at {path}")
        return 0
    for s in senses(args.names):
        print(f"{s.folder}\t{s.synset or '-'}\t{s.gloss or '(no gloss: the name alone)'}\t[{s.rule}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
