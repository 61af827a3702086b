import pytest
import torch
import torchvision.transforms.functional as TF

from vlp_lib.data.transforms import (
    AUGMENTATIONS,
    augment,
    color_jitter,
    gaussian_blur,
    random_grayscale,
    to_model_input,
)


def _images(n=8, size=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 3, size, size, generator=g)


def test_color_jitter_with_zero_strength_is_identity():
    x = _images()
    y = color_jitter(x, brightness=0, contrast=0, saturation=0, hue=0, p=1.0)
    torch.testing.assert_close(y, x, atol=1e-5, rtol=0)


def test_color_jitter_probability_zero_leaves_images():
    x = _images()
    assert torch.equal(color_jitter(x, p=0.0), x)


def test_brightness_only_scales_each_image_by_one_factor():
    x = _images() * 0.5  # no clamping at factors up to 1.4
    y = color_jitter(
        x, brightness=0.4, contrast=0, saturation=0, hue=0, p=1.0, generator=torch.Generator().manual_seed(1)
    )
    factor = (y.flatten(1) * x.flatten(1)).sum(1) / (x.flatten(1) ** 2).sum(1)  # least squares per image
    torch.testing.assert_close(y, x * factor.view(-1, 1, 1, 1), atol=1e-4, rtol=0)
    assert ((factor >= 0.6 - 1e-4) & (factor <= 1.4 + 1e-4)).all()
    assert factor.std() > 0.01  # factors differ between images


def test_hue_shift_keeps_grey_pixels_grey_and_changes_colour():
    grey = _images()[:, :1].expand(-1, 3, -1, -1).contiguous()
    y = color_jitter(grey, brightness=0, contrast=0, saturation=0, hue=0.5, p=1.0)
    torch.testing.assert_close(y, grey, atol=1e-4, rtol=0)
    red = torch.zeros(4, 3, 8, 8)
    red[:, 0] = 0.8
    shifted = color_jitter(
        red, brightness=0, contrast=0, saturation=0, hue=0.5, p=1.0, generator=torch.Generator().manual_seed(0)
    )
    assert (shifted - red).abs().amax() > 0.05


def test_random_grayscale_copies_luma_to_every_channel():
    x = _images()
    y = random_grayscale(x, p=1.0)
    luma = 0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2]
    for c in range(3):
        torch.testing.assert_close(y[:, c], luma)
    assert torch.equal(random_grayscale(x, p=0.0), x)


def test_gaussian_blur_matches_torchvision_at_a_fixed_sigma():
    x = _images(n=3, size=32)
    y = gaussian_blur(x, sigma=(1.3, 1.3), p=1.0, kernel_fraction=0.1)  # kernel 3
    expected = torch.stack([TF.gaussian_blur(img, kernel_size=[3, 3], sigma=[1.3, 1.3]) for img in x])
    torch.testing.assert_close(y, expected, atol=1e-5, rtol=0)
    constant = torch.full((2, 3, 16, 16), 0.3)
    torch.testing.assert_close(gaussian_blur(constant, p=1.0), constant)


@pytest.mark.parametrize("name", sorted(AUGMENTATIONS))
def test_every_augmentation_keeps_shape_and_is_reproducible(name):
    x = to_model_input((_images(16) * 255).to(torch.uint8).permute(0, 2, 3, 1))
    a = augment(x, name, generator=torch.Generator().manual_seed(3))
    b = augment(x, name, generator=torch.Generator().manual_seed(3))
    assert a.shape == x.shape and torch.isfinite(a).all()
    assert torch.equal(a, b)


def test_simclr_changes_images_more_than_protoclip_more_than_none():
    x = to_model_input((_images(256) * 255).to(torch.uint8).permute(0, 2, 3, 1))
    change = {
        name: (augment(x, name, generator=torch.Generator().manual_seed(0)) - x).abs().mean().item()
        for name in ("none", "protoclip", "simclr")
    }
    assert change["none"] < change["protoclip"] < change["simclr"]


def test_unknown_augmentation_is_refused():
    with pytest.raises(ValueError, match="augmentation"):
        augment(_images(), "heavy")


def test_from_model_input_inverts_to_model_input():
    images = (_images(4) * 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()
    from vlp_lib.data.transforms import from_model_input

    assert (from_model_input(to_model_input(images)) == images).all()


def test_local_view_is_a_half_to_full_crop_without_flip_or_colour():
    """PyramidCLIP's local view L (Section 3.2): RandomResizedCrop scale (0.5, 1), ratio (3/4, 4/3), nothing else."""
    x = to_model_input((_images(256) * 255).to(torch.uint8).permute(0, 2, 3, 1))
    y, params = augment(x, "local", generator=torch.Generator().manual_seed(0), return_params=True)
    w, h = params["theta"][:, 0, 0], params["theta"][:, 1, 1]
    area = w * h
    assert (w > 0).all() and not params["flip"].any()
    assert area.min() >= 0.5 - 1e-6 and area.max() <= 1.0 + 1e-6 and area.min() < 0.6  # the whole range is used
    unclamped = (w < 1) & (h < 1)
    ratio = w[unclamped] / h[unclamped]
    assert ratio.min() >= 3 / 4 - 1e-5 and ratio.max() <= 4 / 3 + 1e-5
    assert not (params["jitter"].any() or params["gray"].any() or params["blur"].any())
    _, global_params = augment(x, "none", generator=torch.Generator().manual_seed(0), return_params=True)
    global_area = global_params["theta"][:, 0, 0] * global_params["theta"][:, 1, 1]
    assert global_area.mean() > area.mean() + 0.15  # G keeps more of the image than L
