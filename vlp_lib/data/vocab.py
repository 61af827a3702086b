"""The generated world's vocabulary, as data: every word a caption, summary, definition or prompt can hold.

The world stands in for web image-text data (the world tour page says why). Its vocabulary is
chosen for the experiments of the book, not for realism:

- 24 shape categories in 6 superclasses, with look-alike pairs inside a superclass (square / rectangle,
  circle / ellipse, star / hexagram, triangle / arrowhead, cross / letter t, letter e / letter f, ...), so
  that neighbouring concepts exist: ProtoCLIP's prototypes and soft targets need "cat vs tiger" structure;
- 12 colours that stay distinct at 32 px, each with 2-3 synonyms used in captions (red / crimson / scarlet),
  so a pretrained text teacher that knows synonyms (ProtoCLIP's external teacher, DIME-FM) has something to add;
- 8 background textures, 3 sizes, 9 positions and 4 spatial relations for captions such as
  "a red star left of a blue ring" (PyramidCLIP's ROI-relation branch has relations to read);
- 20+ alt-text caption templates and non-visual junk phrases ("free shipping", "IMG 2041", "by anna")
  that imitate web alt-text noise;
- a dictionary definition of every shape (iCLIP's dictionary-enhanced class names);
- prompt templates for zero-shot classification of every evaluation task.

Everything here is plain data; ``vlp_lib.data.world`` composes it and ``vocabulary()`` lists its words.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Superclass -> its shapes. The order of this dict fixes the integer ids of shapes and superclasses.
# Look-alike pairs sit next to each other inside a superclass.
SUPERCLASSES: dict[str, list[str]] = {
    "polygon": ["square", "rectangle", "pentagon", "hexagon"],
    "round shape": ["circle", "ellipse", "ring", "crescent"],
    "star shape": ["star", "hexagram", "sparkle", "burst"],
    "pointer": ["triangle", "arrowhead", "arrow", "chevron"],
    "glyph": ["cross", "letter t", "letter e", "letter f"],
    "line figure": ["bar", "zigzag", "wave", "spiral"],
}

SHAPES: list[str] = [shape for shapes in SUPERCLASSES.values() for shape in shapes]
SHAPE_SUPERCLASS: dict[str, str] = {s: sup for sup, shapes in SUPERCLASSES.items() for s in shapes}

# The visually closest other category of each shape (the look-alike pairs); used by the notebooks to
# name the confusions a model should find hardest.
LOOKALIKES: dict[str, str] = {
    "square": "rectangle",
    "rectangle": "square",
    "pentagon": "hexagon",
    "hexagon": "pentagon",
    "circle": "ellipse",
    "ellipse": "circle",
    "ring": "crescent",
    "crescent": "ring",
    "star": "hexagram",
    "hexagram": "star",
    "sparkle": "burst",
    "burst": "sparkle",
    "triangle": "arrowhead",
    "arrowhead": "triangle",
    "arrow": "chevron",
    "chevron": "arrow",
    "cross": "letter t",
    "letter t": "cross",
    "letter e": "letter f",
    "letter f": "letter e",
    "bar": "zigzag",
    "zigzag": "wave",
    "wave": "zigzag",
    "spiral": "wave",
}

# Canonical colour name -> RGB (saturated, far apart at 32 px) and the synonyms captions may use.
COLOUR_TABLE: dict[str, dict] = {
    "red": dict(rgb=(215, 35, 35), synonyms=["crimson", "scarlet"]),
    "orange": dict(rgb=(245, 135, 20), synonyms=["amber", "tangerine"]),
    "yellow": dict(rgb=(245, 215, 30), synonyms=["golden", "lemon"]),
    "green": dict(rgb=(40, 150, 50), synonyms=["emerald", "jade"]),
    "teal": dict(rgb=(20, 175, 175), synonyms=["cyan", "turquoise", "aqua"]),
    "blue": dict(rgb=(35, 75, 215), synonyms=["cobalt", "sapphire"]),
    "purple": dict(rgb=(135, 50, 185), synonyms=["violet", "plum"]),
    "pink": dict(rgb=(250, 120, 195), synonyms=["rose", "fuchsia"]),
    "brown": dict(rgb=(125, 75, 35), synonyms=["chocolate", "chestnut"]),
    "white": dict(rgb=(250, 250, 250), synonyms=["ivory", "snowy"]),
    "black": dict(rgb=(15, 15, 15), synonyms=["ebony", "jet"]),
    "grey": dict(rgb=(135, 135, 135), synonyms=["gray", "silver", "ash"]),
}
COLOURS: list[str] = list(COLOUR_TABLE)
COLOUR_SYNONYMS: dict[str, list[str]] = {c: list(v["synonyms"]) for c, v in COLOUR_TABLE.items()}

# Colour families for the CIFAR-100 stand-in (shape x colour): five hues that no synonym blurs together.
COLOUR_FAMILIES: list[str] = ["red", "yellow", "green", "blue", "purple"]

# Background texture -> the words captions use for it (the first is canonical, used in summaries).
BACKGROUNDS_TABLE: dict[str, list[str]] = {
    "plain": ["plain", "blank", "solid"],
    "striped": ["striped", "stripy"],
    "dotted": ["dotted", "polka dot", "spotted"],
    "checkered": ["checkered", "chequered", "checked"],
    "gradient": ["gradient", "fading", "shaded"],
    "speckled": ["speckled", "grainy", "noisy"],
    "grid": ["grid", "tiled"],
    "wavy": ["wavy", "rippled"],
}
BACKGROUNDS: list[str] = list(BACKGROUNDS_TABLE)

# Size -> caption words (canonical first). The pixel fractions live in ``world.SIZE_FRACTIONS``.
SIZES_TABLE: dict[str, list[str]] = {
    "small": ["small", "little", "tiny"],
    "medium": ["medium", "mid sized"],
    "large": ["large", "big"],
}
SIZES: list[str] = list(SIZES_TABLE)

# Position of an object's centre on a 3 x 3 grid -> caption phrases.
POSITIONS_TABLE: dict[str, list[str]] = {
    "top left": ["in the top left corner", "at the top left"],
    "top": ["at the top", "near the top"],
    "top right": ["in the top right corner", "at the top right"],
    "left": ["on the left", "on the left side"],
    "centre": ["in the centre", "in the middle"],
    "right": ["on the right", "on the right side"],
    "bottom left": ["in the bottom left corner", "at the bottom left"],
    "bottom": ["at the bottom", "near the bottom"],
    "bottom right": ["in the bottom right corner", "at the bottom right"],
}
POSITIONS: list[str] = list(POSITIONS_TABLE)

# Spatial relation of object A to object B -> caption phrases ("A left of B").
RELATIONS: dict[str, list[str]] = {
    "left": ["left of", "to the left of"],
    "right": ["right of", "to the right of"],
    "above": ["above", "over"],
    "below": ["below", "under", "beneath"],
}
# Relation-free pairings, for captions that join two objects without saying where they are.
PAIRINGS: list[str] = ["and", "next to", "beside", "with"]

COUNT_WORDS: list[str] = ["one", "two", "three"]

# Alt-text caption templates. ``{objs}`` is the object phrase ("a red star and a blue ring"),
# ``{bg}`` a background word, ``{count}`` a count word: templates with ``{count}`` are only used when the
# caption names every object, so a caption's count is never wrong by construction (only by mismatch).
# Template 0 is the fixed template of ``paraphrase=False``.
CAPTION_TEMPLATES: list[str] = [
    "{objs} on a {bg} background",
    "{objs}",
    "photo of {objs}",
    "{objs} against a {bg} backdrop",
    "image of {objs} on {bg} background",
    "{objs} clipart",
    "stock image {objs} isolated on {bg} background",
    "{objs} icon",
    "vector illustration of {objs}",
    "close up of {objs} on a {bg} surface",
    "my drawing of {objs}",
    "{bg} wallpaper with {objs}",
    "simple {objs} design",
    "{objs} sticker on {bg} paper",
    "a picture showing {objs}",
    "cute {objs} logo",
    "{objs}, {bg} texture",
    "sketch of {objs}",
    "there is {objs} on a {bg} background",
    "{objs} printed on {bg} fabric",
    "{count} shapes: {objs}",
    "{count} shapes on a {bg} background, {objs}",
    "digital art {objs}",
    "{objs} in front of a {bg} pattern",
]
FIXED_TEMPLATE = 0

# Non-visual words of web alt-text. Disjoint from every other word of the world (a test checks), so that
# "no junk" is checkable word by word and a model can learn to ignore them.
JUNK_PHRASES: list[str] = [
    "free shipping",
    "IMG 2041",
    "IMG 7715",
    "DSC 0093",
    "by anna",
    "by tom",
    "by maria",
    "royalty free",
    "best price",
    "buy now",
    "click here",
    "high quality",
    "hd",
    "jpg",
    "png",
    "copyright 2019",
    "new arrival",
    "download",
    "sale",
    "limited edition",
    "follow me",
    "thanks for watching",
]

# Words that glue phrases together in captions and summaries.
CONNECTIVES: list[str] = ["a", "an", "and", ","]

# One dictionary definition per shape (iCLIP: dictionary-enhanced class names). Written in the world's
# own words so the word-level tokenizer knows them.
DEFINITIONS: dict[str, str] = {
    "square": "a flat shape with four equal straight sides and four right angles",
    "rectangle": "a flat shape with four right angles and two long and two short sides",
    "pentagon": "a flat shape with five straight sides and five corners",
    "hexagon": "a flat shape with six straight sides and six corners",
    "circle": "a round flat shape whose edge is everywhere the same distance from its centre",
    "ellipse": "a round flat shape like a stretched circle, longer than it is wide",
    "ring": "a thin round band with an empty hole in the middle",
    "crescent": "a curved shape like a thin moon, a circle with a bite taken out of one side",
    "star": "a shape with five sharp points around its centre",
    "hexagram": "a star shape with six points made of two triangles",
    "sparkle": "a star shape with four long sharp points like a twinkle of light",
    "burst": "a star shape with eight short points like an explosion",
    "triangle": "a flat shape with three straight sides and three corners",
    "arrowhead": "the pointed tip of an arrow, a triangle with a notch cut into its base",
    "arrow": "a line with a pointed head at one end that shows a direction",
    "chevron": "a shape like a bent line or a letter v turned upside down",
    "cross": "a mark of two straight bars that meet in the middle at right angles",
    "letter t": "the letter t, a straight bar with a short bar across its top",
    "letter e": "the letter e, an upright bar with three short bars pointing to the right",
    "letter f": "the letter f, an upright bar with two short bars pointing to the right at its top",
    "bar": "a long straight thick line",
    "zigzag": "a line that turns sharply from side to side with sharp corners",
    "wave": "a smooth curved line that goes up and down again and again",
    "spiral": "a curved line that winds around a centre and moves away from it",
}

# Zero-shot prompt templates per kind of evaluation task ("{}" is the class name).
PROMPT_TEMPLATES: dict[str, list[str]] = {
    "shape": [
        "a photo of a {}.",
        "a {} shape.",
        "a drawing of a {}.",
        "an icon of a {}.",
        "a picture of a {} on a background.",
        "a simple {}.",
    ],
    "shape_colour": [
        "a photo of a {}.",
        "a {} shape.",
        "a drawing of a {}.",
        "an icon of a {}.",
        "a picture of a {}.",
    ],
    "superclass": ["a photo of a {}.", "a drawing of a {}.", "a kind of {}.", "an icon of a {}."],
    "colour": ["a photo of a {} shape.", "a {} object.", "something {}.", "a drawing in {}."],
    "background": [
        "a shape on a {} background.",
        "a {} background.",
        "a photo with a {} backdrop.",
        "an object on {} paper.",
        "a drawing on a {} surface.",
    ],
    "count": ["a photo of {}.", "a picture showing {}.", "{} on a background.", "an image with {}."],
}

_WORD_RE = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """The words of ``text`` as the word-level tokenizer sees them: lowercase letter/digit runs."""
    return _WORD_RE.findall(text.lower())


def shape_names() -> list[str]:
    """Shape names in id order."""
    return list(SHAPES)


def superclass_names() -> list[str]:
    """Superclass names in id order."""
    return list(SUPERCLASSES)


def colour_names() -> list[str]:
    """Canonical colour names in id order."""
    return list(COLOURS)


def background_names() -> list[str]:
    """Background texture names in id order."""
    return list(BACKGROUNDS)


def shape_superclass_ids() -> list[int]:
    """``[superclass id of shape i for i in range(len(SHAPES))]``."""
    supers = list(SUPERCLASSES)
    return [supers.index(SHAPE_SUPERCLASS[s]) for s in SHAPES]


def junk_words() -> set[str]:
    """Every word a junk phrase can contribute."""
    return {w for phrase in JUNK_PHRASES for w in words(phrase)}


def _all_texts() -> list[str]:
    texts: list[str] = []
    texts += SHAPES + list(SUPERCLASSES) + COUNT_WORDS + CONNECTIVES + PAIRINGS + JUNK_PHRASES
    for colour, syns in COLOUR_SYNONYMS.items():
        texts += [colour] + syns
    for table in (BACKGROUNDS_TABLE, SIZES_TABLE, POSITIONS_TABLE, RELATIONS):
        for key, phrases in table.items():
            texts += [key] + phrases
    texts += [t.replace("{objs}", " ").replace("{bg}", " ").replace("{count}", " ") for t in CAPTION_TEMPLATES]
    texts += ["background", "shape", "shapes"]
    texts += list(DEFINITIONS.values())
    texts += [t.replace("{}", " ") for ts in PROMPT_TEMPLATES.values() for t in ts]
    # class names of the evaluation tasks (see ``vlp_lib.data.tasks``): shapes, "red circle", "two shapes"
    texts += [f"{n} shape" for n in COUNT_WORDS] + [f"{n} shapes" for n in COUNT_WORDS]
    return texts


@lru_cache(maxsize=1)
def _vocabulary() -> tuple[str, ...]:
    return tuple(sorted({w for text in _all_texts() for w in words(text)}))


def vocabulary() -> list[str]:
    """Sorted list of every word that any caption, summary, definition, prompt or class name can contain."""
    return list(_vocabulary())
