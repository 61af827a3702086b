"""The generated world: determinism, prefix property, knobs, cache, validation."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest

from vlp_lib.data import vocab, world


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A cache of this test's own (the session cache of conftest is shared across tests)."""
    monkeypatch.setenv("VLP_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _same_world(a: world.World, b: world.World, n: int | None = None) -> None:
    n = len(b) if n is None else n
    assert np.array_equal(np.asarray(a.images[:n]), np.asarray(b.images[:n]))
    assert a.captions[:n] == b.captions[:n] and a.summaries[:n] == b.summaries[:n]
    assert all(np.array_equal(x, y) for x, y in zip(a.boxes[:n], b.boxes[:n]))
    assert all(np.array_equal(x, y) for x, y in zip(a.objects[:n], b.objects[:n]))
    for k in b.labels:
        assert np.array_equal(a.labels[k][:n], b.labels[k][:n]), k


def test_shapes_dtypes_and_keys():
    w = world.generate(40, 0, cache=False)
    assert len(w) == 40 and w.images.shape == (40, 32, 32, 3) and w.images.dtype == np.uint8
    assert len(w.captions) == len(w.summaries) == len(w.boxes) == len(w.objects) == 40
    assert {"shape", "superclass", "colour", "background", "count"} <= set(w.labels)
    for k, v in w.labels.items():
        assert v.dtype == np.int64 and v.shape == (40,), k
    for i in range(40):
        boxes, objs = w.boxes[i], w.objects[i]
        assert boxes.dtype == np.float32 and boxes.shape == (len(objs), 4)
        assert objs.shape[1] == 3 and np.issubdtype(objs.dtype, np.integer)
        assert w.labels["count"][i] == len(objs)
        assert (objs[0, 0], objs[0, 1]) == (w.labels["shape"][i], w.labels["colour"][i])
        assert w.labels["superclass"][i] == vocab.shape_superclass_ids()[objs[0, 0]]
        assert (boxes >= 0).all() and (boxes <= 32).all() and (boxes[:, 2:] > boxes[:, :2]).all()
        # the primary object is the largest
        assert objs[0, 2] == objs[:, 2].max()
    assert w.seed == 0 and w.knobs["mismatch_rate"] == 0.1 and w.knobs["shapes"] == vocab.SHAPES


def test_deterministic_and_prefix():
    a = world.generate(30, 5, cache=False)
    b = world.generate(30, 5, cache=False)
    _same_world(a, b)
    assert a.images.tobytes() == b.images.tobytes()
    _same_world(a, world.generate(12, 5, cache=False))
    other = world.generate(30, 6, cache=False)
    assert not np.array_equal(a.images, other.images)


def test_workers_give_the_same_world(monkeypatch):
    monkeypatch.setattr(world.generation, "CHUNK", 8)  # several chunks, so the 2-process path runs
    serial = world.generate(20, 3, cache=False, workers=1)
    parallel = world.generate(20, 3, cache=False, workers=2)
    _same_world(serial, parallel)


def test_scene_does_not_depend_on_image_size():
    small = world.generate(6, 2, cache=False)
    large = world.generate(6, 2, image_size=64, cache=False)
    assert large.images.shape == (6, 64, 64, 3)
    assert small.captions == large.captions
    for b32, b64 in zip(small.boxes, large.boxes):
        np.testing.assert_allclose(b32 * 2, b64, atol=0.01)


def test_boxes_cover_the_object():
    w = world.generate(30, 4, cache=False, max_objects=1, backgrounds=["plain"])
    for img, box in zip(w.images, w.boxes):
        x0, y0 = np.floor(box[0, :2]).astype(int)
        x1, y1 = np.ceil(box[0, 2:]).astype(int)
        outside = np.ones(img.shape[:2], bool)
        outside[max(y0 - 1, 0) : y1 + 1, max(x0 - 1, 0) : x1 + 1] = False
        assert len(np.unique(img[outside], axis=0)) <= 1  # only the background tone outside the box


def test_mismatch_rate():
    clean = world.generate(40, 1, cache=False, mismatch_rate=0.0)
    swapped = world.generate(40, 1, cache=False, mismatch_rate=1.0)
    assert clean.labels["mismatched"].sum() == 0 and swapped.labels["mismatched"].all()
    assert sum(a != b for a, b in zip(clean.captions, swapped.captions)) >= 35
    _same_world(clean, swapped, n=0)
    assert np.array_equal(clean.images, swapped.images)


def test_junk_rate():
    junk = vocab.junk_words()
    none = world.generate(60, 1, cache=False, junk_rate=0.0)
    assert not any(set(vocab.words(c)) & junk for c in none.captions)
    every = world.generate(60, 1, cache=False, junk_rate=1.0, mismatch_rate=0.0)
    assert all(set(vocab.words(c)) & junk for c in every.captions)
    # junk words never collide with the words that describe the picture
    others = {w for t in vocab._all_texts() if t not in vocab.JUNK_PHRASES for w in vocab.words(t)}
    assert not junk & others


def test_object_counts_and_subsets():
    w = world.generate(50, 2, cache=False, max_objects=1)
    assert (w.labels["count"] == 1).all()
    w = world.generate(50, 2, cache=False, min_objects=3)
    assert (w.labels["count"] == 3).all()
    w = world.generate(
        60,
        2,
        cache=False,
        shapes=["circle", "square", "star"],
        colours=["red", "blue"],
        backgrounds=["dotted"],
        held_out_shapes=["star"],
    )
    drawn = {vocab.SHAPES[s] for o in w.objects for s in o[:, 0]}
    assert drawn == {"circle", "square"}
    assert {vocab.COLOURS[c] for o in w.objects for c in o[:, 1]} <= {"red", "blue"}
    assert (w.labels["background"] == vocab.BACKGROUNDS.index("dotted")).all()
    assert w.knobs["shapes"] == ["square", "circle"] and w.knobs["held_out_shapes"] == ["star"]


def test_held_out_shapes_never_appear():
    held = ["square", "hexagram", "letter e"]
    w = world.generate(200, 3, cache=False, held_out_shapes=held)
    ids = {vocab.SHAPES.index(s) for s in held}
    assert not any(ids & set(o[:, 0].tolist()) for o in w.objects)
    assert not any(h in s for s in w.summaries for h in held)


def test_fixed_template_clean_captions_equal_summaries():
    w = world.generate(
        30, 4, cache=False, paraphrase=False, synonym_rate=0.0, omit_rate=0.0, junk_rate=0.0, mismatch_rate=0.0
    )
    assert w.captions == w.summaries
    assert all(s.endswith(" background") for s in w.summaries)


def test_omit_and_synonym_rates():
    w = world.generate(40, 5, cache=False, min_objects=2, omit_rate=1.0, mismatch_rate=0.0)
    assert w.labels["omitted"].all()
    w = world.generate(40, 5, cache=False, omit_rate=0.0, mismatch_rate=0.0, junk_rate=0.0)
    for cap, objs in zip(w.captions, w.objects):
        assert all(vocab.SHAPES[s] in cap.lower() for s in objs[:, 0])
    canonical = set(vocab.COLOURS)
    synonyms = {s for syns in vocab.COLOUR_SYNONYMS.values() for s in syns}
    w0 = world.generate(40, 5, cache=False, synonym_rate=0.0)
    w1 = world.generate(40, 5, cache=False, synonym_rate=1.0)
    assert not any(set(vocab.words(c)) & synonyms for c in w0.captions)
    assert not any(set(vocab.words(c)) & canonical for c in w1.captions)


def test_clutter_changes_pixels_not_captions():
    plain = world.generate(10, 6, cache=False)
    cluttered = world.generate(10, 6, cache=False, clutter=0.8)
    assert plain.captions == cluttered.captions
    assert not np.array_equal(plain.images, cluttered.images)


def test_every_caption_word_is_in_the_vocabulary():
    known = set(vocab.vocabulary())
    w = world.generate(300, 7, cache=False)
    texts = w.captions + w.summaries + world.paraphrases(7, 0, w.knobs, 10)
    assert {x for t in texts for x in vocab.words(t)} <= known
    assert {x for d in vocab.DEFINITIONS.values() for x in vocab.words(d)} <= known
    assert set(vocab.DEFINITIONS) == set(vocab.SHAPES)


def test_vocab_structure():
    assert len(vocab.SHAPES) == 24 and len(set(vocab.SHAPES)) == 24 and len(vocab.SUPERCLASSES) == 6
    assert len(vocab.COLOURS) == 12 and all(1 <= len(s) <= 3 for s in vocab.COLOUR_SYNONYMS.values())
    assert len(vocab.BACKGROUNDS) >= 6 and len(vocab.CAPTION_TEMPLATES) >= 20
    for a, b in vocab.LOOKALIKES.items():
        assert a in vocab.SHAPES and b in vocab.SHAPES
    rgb = np.array([vocab.COLOUR_TABLE[c]["rgb"] for c in vocab.COLOURS], float)
    dist = np.linalg.norm(rgb[:, None] - rgb[None], axis=-1) + np.eye(len(rgb)) * 1e3
    assert dist.min() > 60  # colours stay apart


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(n=0), "n"),
        (dict(n=2.5), "n"),
        (dict(image_size=0), "image_size"),
        (dict(seed=-1), "seed"),
        (dict(mismatch_rate=1.5), "mismatch_rate"),
        (dict(omit_rate=-0.1), "omit_rate"),
        (dict(junk_rate="a lot"), "junk_rate"),
        (dict(synonym_rate=2), "synonym_rate"),
        (dict(clutter=1.1), "clutter"),
        (dict(min_objects=3, max_objects=2), "min_objects"),
        (dict(max_objects=4), "max_objects"),
        (dict(shapes=["blob"]), "shapes"),
        (dict(shapes="circle"), "shapes"),
        (dict(colours=["mauve"]), "colours"),
        (dict(backgrounds=["marble"]), "backgrounds"),
        (dict(held_out_shapes=["blob"]), "held_out_shapes"),
        (dict(shapes=["circle"], held_out_shapes=["circle"]), "shapes"),
        (dict(paraphrase="yes"), "paraphrase"),
        (dict(brightness=0.5), "brightness"),
    ],
)
def test_bad_arguments_raise_before_rendering(kwargs, name, monkeypatch, fresh_cache):
    monkeypatch.setattr(world.items, "render", _no_render)
    args = dict(n=4, seed=0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        world.generate(**args)


def _no_render(*args, **kwargs):
    raise AssertionError("rendered")


def test_cache_returns_memmap_without_rendering(monkeypatch, fresh_cache):
    first = world.generate(40, 9, max_objects=2)
    assert isinstance(first.images, np.memmap)
    monkeypatch.setattr(world.items, "render", _no_render)
    again = world.generate(40, 9, max_objects=2)
    assert isinstance(again.images, np.memmap)
    _same_world(first, again)
    prefix = world.generate(15, 9, max_objects=2)
    assert len(prefix) == 15 and isinstance(prefix.images, np.memmap)
    _same_world(first, prefix)
    with pytest.raises(AssertionError, match="rendered"):
        world.generate(40, 9, max_objects=1)  # other knobs: another key


def test_cache_extends_by_rendering_only_new_indices(monkeypatch, fresh_cache):
    world.generate(20, 8)
    calls = []
    real = world.render

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(world.items, "render", counting)
    grown = world.generate(30, 8)
    assert len(calls) == 10
    _same_world(grown, world.generate(30, 8, cache=False))
    key_dirs = [p for p in (fresh_cache / "world").iterdir() if p.is_dir()]
    assert len(key_dirs) == 1 and [p.name for p in key_dirs[0].iterdir()] == ["n30"]


def _hash_world(args: tuple) -> str:
    import hashlib
    import os

    cache, n = args
    os.environ["VLP_CACHE_DIR"] = cache
    from vlp_lib.data import world as w

    return hashlib.sha1(np.asarray(w.generate(n, 11).images).tobytes()).hexdigest()


def test_concurrent_generators_share_one_cache_entry(fresh_cache):
    with mp.get_context("spawn").Pool(2) as pool:
        hashes = pool.map(_hash_world, [(str(fresh_cache), 300), (str(fresh_cache), 300)])
    assert hashes[0] == hashes[1]
    (key_dir,) = [p for p in (fresh_cache / "world").iterdir() if p.is_dir()]
    assert [p.name for p in key_dir.iterdir()] == ["n300"]


def test_sample_grid():
    w = world.generate(10, 0, cache=False)
    grid = world.sample_grid(w, range(10), ncols=5, pad=2)
    assert grid.dtype == np.uint8 and grid.shape == (2 * 34 + 2, 5 * 34 + 2, 3)
    assert world.sample_grid(w.images, [3], scale=2).shape == (68, 68, 3)


def test_paraphrases_are_distinct_and_clean():
    knobs = world.check_knobs()
    caps = world.paraphrases(0, 3, knobs, 5)
    assert len(caps) == 5 and len(set(caps)) == 5
    assert not any(set(vocab.words(c)) & vocab.junk_words() for c in caps)


def test_relation_labels_from_box_centres():
    box = lambda x, y: [x - 1, y - 1, x + 1, y + 1]  # noqa: E731
    boxes = [
        np.array([box(2, 5), box(8, 5)]),
        np.array([box(8, 5), box(2, 5), box(0, 0)]),
        np.array([box(5, 2), box(5, 8)]),
        np.array([box(5, 8), box(5, 2)]),
        np.array([box(5, 5)]),
        np.zeros((0, 4)),
        np.array([box(2, 2), box(4, 4)]),
    ]
    names = world.RELATION_NAMES
    assert names == ("left", "right", "above", "below")
    got = world.relation_labels(boxes)
    assert got.dtype == np.int64
    assert got.tolist() == [
        names.index("left"),
        names.index("right"),
        names.index("above"),
        names.index("below"),
        -1,
        -1,
        names.index("left"),
    ]  # a tie (dx == dy) goes to left / right
    with pytest.raises(ValueError, match=r"boxes\[0\]"):
        world.relation_labels([np.zeros(4)])


def test_world_relations_use_the_caption_rule():
    w = world.generate(150, 13, cache=False, omit_rate=0.0, mismatch_rate=0.0)
    rel = w.relations
    assert rel.shape == (150,) and ((rel == -1) == (w.labels["count"] == 1)).all()
    assert set(rel[rel >= 0].tolist()) == {0, 1, 2, 3}
    same_rule = box_vs_scene = stated = stated_agree = 0
    for i in np.flatnonzero(rel >= 0):
        scene = world.sample_scene(w.seed, int(i), w.knobs)
        a, b = scene["objects"][:2]
        # one rule: degenerate boxes at the drawing centres give exactly the captions' relation
        point = np.array([[o["cx"], o["cy"], o["cx"], o["cy"]] for o in (a, b)])
        same_rule += world.RELATION_NAMES[world.relation_labels([point])[0]] == world._relation(a, b)
        box_vs_scene += world.RELATION_NAMES[rel[i]] == world._relation(a, b)
        facts: dict = {}
        world.caption(w.seed, int(i), w.knobs, scene, facts=facts)
        if facts["relation"] is not None and facts["objects"][:2] == [0, 1]:
            stated += 1
            stated_agree += world.RELATION_NAMES[rel[i]] == facts["relation"]
    n2 = int((rel >= 0).sum())
    assert same_rule == n2
    # box centres are not drawing centres (rotation, a shape's offset in its box): near-diagonal pairs may differ
    assert box_vs_scene >= 0.93 * n2 and stated_agree >= 0.9 * stated and stated >= 5


def test_the_world_cache_is_keyed_by_the_code_that_makes_worlds(tmp_path):
    import shutil

    from vlp_lib.data import vocab as vocab_module
    from vlp_lib.data.world import WORLD_VERSION, generation

    folder = tmp_path / "world"
    shutil.copytree(Path(generation.__file__).parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    vocabulary = tmp_path / "vocab.py"
    shutil.copy(vocab_module.__file__, vocabulary)
    assert generation.world_code(folder, vocabulary) == WORLD_VERSION
    (folder / "rendering.py").write_text((folder / "rendering.py").read_text() + "\n# supersample differently\n")
    assert generation.world_code(folder, vocabulary) != WORLD_VERSION
