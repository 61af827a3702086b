"""The world detector, PyramidCLIP's VinVL stand-in (``vlp_lib.papers.pyramidclip.detector``): boxes, crops, features, cache."""

import numpy as np
import pytest
import torch

from vlp_lib.data.tasks import TASK_SEED_BASE
from vlp_lib.data.world import MAX_OVERLAP, generate
from vlp_lib.papers.pyramidclip import detector as det

# A detector small enough for tests: 300 training images (about 600 crops), 4 epochs of a width-8 CNN.
TINY = dict(train_images=300, test_images=150, epochs=4, width=8, batch_size=32, lr=3e-3, probe=False)


@pytest.fixture(scope="module")
def tiny_detector(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("VLP_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batches of 32 tiny crops: a second thread only adds contention on a busy machine
    try:
        yield det.load_detector(True, verbose=False, **TINY)
    finally:
        torch.set_num_threads(threads)
        mp.undo()


@pytest.fixture(scope="module")
def world():
    return generate(40, 3, cache=False, progress=False)


def test_trained_detector_classifies_held_out_crops_far_above_chance(tiny_detector):
    """Even this tiny detector (about 600 crops, under a second to train; the book's default: ~24k crops, ~98%
    shape accuracy) is far above chance on crops of its held-out world."""
    acc = tiny_detector.accuracy
    assert acc["shape"] > 3 * acc["chance_shape"]
    assert acc["colour"] > 0.6 > 6 * acc["chance_colour"]
    info = tiny_detector.info
    assert info["n_train_crops"] > 450 and info["n_test_crops"] > 200 and info["train_seconds"] > 0
    assert len(info["losses"]) == TINY["epochs"] and info["losses"][-1] < info["losses"][0]
    assert tiny_detector.trained and "held-out crops" in tiny_detector.describe()
    assert not tiny_detector.net.training and not any(p.requires_grad for p in tiny_detector.net.parameters())


def test_detector_is_built_once_then_loaded(tiny_detector, monkeypatch):
    monkeypatch.setattr(det, "_train", lambda *a, **k: pytest.fail("trained again"))
    again = det.load_detector(True, verbose=False, **TINY)
    assert again.info == tiny_detector.info
    for a, b in zip(again.net.state_dict().values(), tiny_detector.net.state_dict().values()):
        assert torch.equal(a, b)


def test_untrained_control_is_deterministic_given_its_seed(tmp_path, monkeypatch):
    nets = []
    for i, seed in enumerate((3, 3, 4)):
        monkeypatch.setenv("VLP_CACHE_DIR", str(tmp_path / str(i)))  # fresh caches: built three times
        d = det.load_detector(False, seed=seed, width=8, probe=False, verbose=False)
        assert not d.trained and d.accuracy["shape"] is None and d.info["n_train_crops"] == 0
        nets.append(d.net.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(nets[0].values(), nets[1].values()))
    assert not torch.equal(nets[0]["body.0.weight"], nets[2]["body.0.weight"])
    crops = torch.rand(5, 3, 16, 16)
    assert det.Detector(det.CropNet(width=8), {"trained": False}, {}).embed(crops).shape == (5, det.FEATURE_DIM)


def test_roi_features_shapes_mask_and_boxes(tiny_detector, world):
    feats, mask = det.roi_features(world, tiny_detector, cache=False)
    counts = np.array([len(b) for b in world.boxes])
    assert feats.shape == (40, 3, det.ROI_DIM) == (40, 3, 68) and feats.dtype == np.float32
    assert mask.shape == (40, 3) and mask.dtype == bool
    np.testing.assert_array_equal(mask.sum(1), counts)
    assert mask[:, 0].all() and (counts < 3).any() and (counts == 3).any()
    assert not feats[~mask].any()  # padding rows are zeros
    np.testing.assert_allclose(feats[mask][:, 64:], np.concatenate(world.boxes) / 32, atol=1e-6)
    assert (feats[mask][:, :64] >= 0).all() and feats[mask][:, :64].any(1).all()  # ReLU features, none empty
    wide, wide_mask = det.roi_features(world.images, tiny_detector, boxes=world.boxes, max_rois=5, cache=False)
    assert wide.shape == (40, 5, 68) and not wide_mask[:, 3:].any()
    np.testing.assert_allclose(wide[:, :3], feats, atol=1e-5)


def test_roi_features_are_cached_per_world_and_knobs(tiny_detector, world, monkeypatch):
    calls = []
    embed = det.Detector.embed
    monkeypatch.setattr(det.Detector, "embed", lambda self, crops: calls.append(1) or embed(self, crops))
    first = det.roi_features(world, tiny_detector, verbose=False)
    second = det.roi_features(world, tiny_detector, verbose=False)
    assert len(calls) == 1
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    det.roi_features(world, tiny_detector, jitter=0.1, verbose=False)  # other knobs: computed
    other = generate(40, 4, cache=False, progress=False)
    det.roi_features(other, tiny_detector, verbose=False)  # another world: computed
    assert len(calls) == 3


def test_crops_are_squares_around_the_box():
    images = np.zeros((1, 32, 32, 3), np.uint8)
    images[0, 12:16, 4:28] = (255, 0, 0)  # a wide red bar, 24 x 4 px
    crops = det.crop_rois(images, [np.array([[4, 12, 28, 16]], np.float32)], margin=0.0)
    assert crops.shape == (1, 3, 16, 16) and crops.dtype == torch.float32
    red = crops[0, 0]
    assert red[7:9].min() > 0.9 and red[:5].max() < 0.05 and red[-5:].max() < 0.05  # aspect kept: black above/below
    assert crops[0, 1:].max() < 0.05


def _many_boxes(n=400):
    w = generate(n, 5, cache=False, progress=False)
    return w.images, w.boxes


def test_jitter_moves_boxes_by_the_stated_fraction_and_is_seeded():
    images, boxes = _many_boxes()
    assert all(np.array_equal(a, b) for a, b in zip(det.detect_boxes(images, boxes), boxes))
    out = det.detect_boxes(images, boxes, jitter=0.05, seed=1)
    true, moved = np.concatenate(boxes), np.concatenate(out)
    size = np.concatenate([true[:, 2:] - true[:, :2]] * 2, 1)
    rel = (moved - true) / size
    assert 0.03 < rel.std() < 0.07 and abs(rel.mean()) < 0.01
    assert (moved >= 0).all() and (moved <= 32).all() and (moved[:, 2:] - moved[:, :2] >= 1 - 1e-5).all()
    again = det.detect_boxes(images, boxes, jitter=0.05, seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(out, again))
    assert not np.array_equal(np.concatenate(det.detect_boxes(images, boxes, jitter=0.05, seed=2)), moved)
    prefix = det.detect_boxes(images[:50], boxes[:50], jitter=0.05, seed=1)  # per-image streams
    assert all(np.array_equal(a, b) for a, b in zip(prefix, out[:50]))


def test_miss_rate_drops_objects_but_keeps_one_per_image():
    images, boxes = _many_boxes()
    out = det.detect_boxes(images, boxes, miss_rate=0.4, seed=0)
    counts = np.array([len(b) for b in boxes])
    kept = np.array([len(b) for b in out])
    assert (kept >= 1).all() and (kept <= counts).all()
    multi = counts > 1
    assert 0.3 < 1 - kept[multi].sum() / counts[multi].sum() < 0.5  # about the rate where nothing is forced
    for o, b in zip(out, boxes):  # kept boxes are unchanged true boxes, in the world's order
        idx = [int(np.flatnonzero((b == row).all(1))[0]) for row in o]
        assert idx == sorted(idx)


def test_false_positives_land_on_background_after_the_true_boxes(tiny_detector):
    images, boxes = _many_boxes(100)
    out = det.detect_boxes(images, boxes, false_positive_rate=1.0, seed=0)
    assert all(len(o) == len(b) + 1 and np.array_equal(o[:-1], b) for o, b in zip(out, boxes))
    fp = np.stack([o[-1] for o in out])
    side = fp[:, 2] - fp[:, 0]
    assert (
        np.allclose(side, 0.34 * 32) and np.allclose(side, fp[:, 3] - fp[:, 1]) and (fp >= 0).all() and (fp <= 32).all()
    )
    free = np.array([det._overlap(f, b).max() <= MAX_OVERLAP + 1e-6 for f, b in zip(fp, boxes)])
    counts = np.array([len(b) for b in boxes])
    assert free[counts == 1].mean() > 0.9 and free[counts < 3].mean() > free[counts == 3].mean() > 0.4
    half = det.detect_boxes(images, boxes, false_positive_rate=0.5, seed=0)
    assert 30 < sum(len(o) - len(b) for o, b in zip(half, boxes)) < 70
    feats, mask = det.roi_features(images, tiny_detector, boxes=boxes, max_rois=4, false_positive_rate=1.0, cache=False)
    np.testing.assert_array_equal(mask.sum(1), [min(len(b) + 1, 4) for b in boxes])
    trunc, tmask = det.roi_features(
        images, tiny_detector, boxes=boxes, max_rois=3, false_positive_rate=1.0, cache=False
    )
    three = np.array([len(b) == 3 for b in boxes])
    np.testing.assert_allclose(trunc[three][:, :, 64:] * 32, np.stack([b for b in boxes if len(b) == 3]), atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, param",
    [
        (dict(jitter=-0.1), "jitter"),
        (dict(jitter=float("nan")), "jitter"),
        (dict(miss_rate=1.0), "miss_rate"),
        (dict(false_positive_rate=1.5), "false_positive_rate"),
        (dict(noise_seed=-1), "noise_seed"),
        (dict(max_rois=0), "max_rois"),
        (dict(boxes=[np.zeros((1, 4))]), "boxes"),
    ],
)
def test_bad_roi_knobs_raise_naming_the_parameter(kwargs, param, world, monkeypatch):
    monkeypatch.setattr(det, "crop_rois", lambda *a, **k: pytest.fail("computed before validating"))
    fake = det.Detector(det.CropNet(width=8), {"trained": False}, {})
    with pytest.raises(ValueError, match=param):
        det.roi_features(world, fake, cache=False, **kwargs)


def test_bad_inputs_and_detector_knobs_raise_naming_the_parameter(world, monkeypatch):
    monkeypatch.setattr(det, "generate", lambda *a, **k: pytest.fail("generated before validating"))
    with pytest.raises(ValueError, match="detector"):
        det.roi_features(world, "vinvl")
    with pytest.raises(ValueError, match="images"):
        det.roi_features(world.images.astype(np.float32), None, boxes=world.boxes)
    with pytest.raises(ValueError, match=r"boxes\[0\]"):
        det.detect_boxes(world.images, [np.zeros((1, 3))] + list(world.boxes[1:]))
    with pytest.raises(ValueError, match="seed"):
        det.detect_boxes(world.images, world.boxes, seed=-2)
    for kwargs, param in [
        (dict(epochs=0), "epochs"),
        (dict(width=1.5), "width"),
        (dict(lr=0.0), "lr"),
        (dict(world_seed=TASK_SEED_BASE), "world_seed"),
        (dict(trained="yes"), "trained"),
        (dict(train_images=0), "train_images"),
        (dict(probe=1), "probe"),
    ]:
        with pytest.raises(ValueError, match=param):
            det.load_detector(verbose=False, **kwargs)
    with pytest.raises(TypeError):
        det.load_detector(verbose=False, epoch=3)  # a misspelt knob is not silently ignored
