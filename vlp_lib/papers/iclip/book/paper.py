"""The numbers the iCLIP supplement reports (Wei et al., CVPR 2023, supplementary material), in one place. Every table
and claim of the chapter shows them beside ours; none is ever used as a result. The main paper's text could not be
obtained (only its abstract and the abstract of its preprint, iCAR). Accuracies and recalls in percent, as printed.
"""

from __future__ import annotations

# Supp Tab. 1: the share of IN-21K (classification) samples at equal total samples -> (IN-1K zero-shot top-1,
# MS-COCO image retrieval R@1, MS-COCO text retrieval R@1). Share 0 is CLIP on 100% YFCC-14M.
TABLE1_COLUMNS = ("IN-1K ZS", "COCO IR", "COCO TR")
TABLE1: dict[float, tuple[float, float, float]] = {
    0.0: (30.1, 12.5, 21.2),
    0.1: (40.9, 13.9, 25.5),
    0.25: (43.9, 15.2, 27.5),
    0.5: (45.9, 15.5, 27.2),
    0.75: (44.8, 14.1, 27.1),
    0.9: (44.2, 14.9, 25.9),
}
DEFAULT_RATIO = 0.5  # Supp A: "We sample 50% images from both datasets in our manuscript as default"

# Supp Tab. 2: iCLIP vs UniCL (the authors' reproduction, marked †), 32 epochs from scratch, R@1.
# Keys (method, IN-21K share: "half" or "full"); columns as printed.
TABLE2_COLUMNS = ("Flickr IR", "Flickr TR", "COCO IR", "COCO TR")
TABLE2: dict[tuple[str, str], tuple[float, float, float, float]] = {
    ("UniCL", "half"): (21.5, 37.9, 12.5, 21.2),
    ("iCLIP", "half"): (31.9, 49.8, 15.5, 27.2),
    ("UniCL", "full"): (34.0, 50.3, 17.7, 28.0),
    ("iCLIP", "full"): (37.1, 55.7, 18.5, 30.7),
}

# Supp Tab. 3: Kornblith-12 zero-shot top-1 (ViT-B/16 class models); averages as printed.
TABLE3_DATASETS = (
    "Food101",
    "CIFAR10",
    "CIFAR100",
    "Birdsnap",
    "SUN397",
    "Stanford Cars",
    "FGVC Aircraft",
    "VOC2007",
    "DTD",
    "Oxford Pets",
    "Caltech101",
    "Flowers102",
)
TABLE3: dict[str, tuple[float, ...]] = {
    "CLIP-ViT-B/16": (89.2, 91.6, 68.7, 39.1, 65.2, 65.6, 27.1, 83.9, 46.0, 88.9, 89.3, 70.4),
    "OpenCLIP-ViT-B/16": (86.1, 91.7, 71.4, 50.2, 69.4, 83.7, 17.7, 82.9, 50.8, 89.3, 91.7, 66.6),
    "iCLIP": (82.7, 94.8, 78.4, 48.5, 62.9, 63.1, 8.4, 84.5, 62.9, 87.9, 92.1, 81.3),
}
TABLE3_AVERAGE = {"CLIP-ViT-B/16": 68.8, "OpenCLIP-ViT-B/16": 70.9, "iCLIP": 70.6}

# What the sources say of the source itself (checked against the supplement): two rows repeat others
SOURCE_DEFECTS = (
    "Supp Tab. 2's reproduced UniCL (half IN-21K) has COCO IR / TR 12.5 / 21.2, exactly CLIP's 100%-YFCC row of "
    "Supp Tab. 1: a coincidence or a copy error.",
    "Supp Tab. 2's iCLIP (half) COCO IR / TR, 15.5 / 27.2, equal Supp Tab. 1's 50% row, so 'IN-21K (half)' is read "
    "as the 50:50 equal-sample setting.",
)


def table1_gain(share: float, column: int) -> float:
    """iCLIP at ``share`` minus CLIP (Supp Tab. 1), in points."""
    return round(TABLE1[share][column] - TABLE1[0.0][column], 2)
