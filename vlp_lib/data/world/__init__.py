"""The procedural image-caption world: the book's default training and evaluation data (no network needed).

Every image is a scene of 1-3 coloured shapes on a textured background, rendered with PIL at 4x
supersampling and box-downsampled, with an alt-text style caption (noisy, like web data), a clean
one-clause summary, the bounding box of every object and labels of the primary (largest) object.
Vocabulary and caption templates live in ``vlp_lib.data.vocab``.

Determinism: image ``i`` is a function of ``(seed, i, image_size, knobs)`` only. Each index draws from its
own independent streams (``Draws(seed, i, stream)`` for the scene and the caption, and
``np.random.default_rng([seed, i, RENDER_STREAM])`` for pixel noise), so

- the same call gives byte-identical arrays, in one process or split across worker processes;
- the world of ``n`` images is a prefix of the world of ``n' > n`` with the same seed and knobs;
- a mismatched caption is the caption of a pseudo-random *other index* ``j`` (drawn from ``i``'s caption
  stream, not limited to ``n``), re-derived from ``(seed, j)`` without rendering ``j``.

Caching: ``generate`` stores worlds under ``cache_dir() / "world" / <key> / "n<N>"`` (``images.npy`` loaded
with ``mmap_mode="r"``, ``meta.npz``, ``text.json``, ``info.json``), with ``<key>`` a hash of
``(WORLD_VERSION, seed, image_size, knobs)``, ``WORLD_VERSION`` being a hash of the code that makes worlds (this
package and the vocabulary). A request for ``n`` returns the prefix of any cached ``N >= n``
without rendering; a larger request renders only the missing indices. Directories are written under a
temporary name and published with one ``os.replace``; a ``filelock.FileLock`` per key serialises concurrent
generators (two notebooks at once never corrupt the cache).

Modules, in the order an image is made:

- ``validation``: knob defaults and checks (``check_knobs``);
- ``randomness``: the per-index random streams (``Draws``);
- ``scenes``: what is in an image (``sample_scene``), positions and relations (``relation_labels``);
- ``captioning``: the alt-text caption, the oracle summary and clean paraphrases;
- ``geometry`` and ``rendering``: shapes as polygons, pixels, boxes and object masks;
- ``items``: one image's item (``make_item``) and the ``World`` container;
- ``generation``: ``generate`` and the on-disk cache;
- ``display``: mosaics, the shape gallery and caption statistics for the notebooks.

Everything public is re-exported here, so ``from vlp_lib.data.world import generate`` and ``world.<name>`` work
as they did when this was one module. To monkeypatch a function or constant, patch it in the submodule that
*uses* it (e.g. ``world.items.render``, ``world.generation.CHUNK``).
"""

from __future__ import annotations

from vlp_lib.data.world.captioning import caption, describe, paraphrases, summary
from vlp_lib.data.world.display import caption_statistics, gallery, sample_grid
from vlp_lib.data.world.generation import (
    CHUNK,
    PARALLEL_MIN_N,
    PROGRESS_MIN_N,
    WORLD_VERSION,
    generate,
)
from vlp_lib.data.world.geometry import shape_geometry
from vlp_lib.data.world.items import LABEL_KEYS, World, make_item
from vlp_lib.data.world.randomness import (
    CAPTION_STREAM,
    PARAPHRASE_STREAM,
    RENDER_STREAM,
    SCENE_STREAM,
    Draws,
)
from vlp_lib.data.world.rendering import SUPERSAMPLE, object_masks, render
from vlp_lib.data.world.scenes import (
    BG_TONES,
    MAX_OVERLAP,
    MAX_ROTATION,
    MIN_CONTRAST,
    RELATION_NAMES,
    SIZE_FRACTIONS,
    _position_name,  # noqa: F401  (private, read by vlp_lib.data.consistency: one rule for positions and relations)
    _relation,  # noqa: F401
    relation_from_offset,
    relation_labels,
    sample_scene,
)
from vlp_lib.data.world.validation import DEFAULT_KNOBS, check_knobs

__all__ = [
    "BG_TONES",
    "CAPTION_STREAM",
    "CHUNK",
    "DEFAULT_KNOBS",
    "Draws",
    "LABEL_KEYS",
    "MAX_OVERLAP",
    "MAX_ROTATION",
    "MIN_CONTRAST",
    "PARALLEL_MIN_N",
    "PARAPHRASE_STREAM",
    "PROGRESS_MIN_N",
    "RELATION_NAMES",
    "RENDER_STREAM",
    "SCENE_STREAM",
    "SIZE_FRACTIONS",
    "SUPERSAMPLE",
    "WORLD_VERSION",
    "World",
    "caption",
    "caption_statistics",
    "check_knobs",
    "describe",
    "gallery",
    "generate",
    "make_item",
    "object_masks",
    "paraphrases",
    "relation_from_offset",
    "relation_labels",
    "render",
    "sample_grid",
    "sample_scene",
    "shape_geometry",
    "summary",
]
