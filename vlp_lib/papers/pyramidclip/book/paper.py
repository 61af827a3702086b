"""The numbers the PyramidCLIP paper reports (Gao et al., arXiv 2204.14095 v1), in one place.
Every table and claim of the chapter shows them beside ours; none is ever used as a result.

Keys are (method, image encoder); ``CLIP`` is the authors' own implementation (CLIP◊) throughout.
"""

from __future__ import annotations

from typing import Any

# §3.4, §4.2: the method's settings
NUMBERS: dict[str, Any] = {
    "alpha": 0.2,  # label smoothing of the softened InfoNCE, Eq. 3-4
    "term_weight": 0.25,  # lambda = mu = gamma = 0.25 in Eq. 6, so every term weighs 0.25
    "global_crop_scale": (0.9, 1.0),  # §3.2
    "local_crop_scale": (0.5, 1.0),  # §3.2
    "rois": 10,  # §4.1: the 10 most confident VinVL boxes
    "lr": 5e-4,
    "warmup_fraction": 0.1,
    "weight_decay": 0.2,
    "vit_layers": 12,
    "vit_best_ls": 9,  # Fig. 4
}

# Table 2 (YFCC15M-V1, 32 epochs): ImageNet zero-shot top-1
TABLE2 = {
    ("CLIP", "ResNet50"): 25.5,
    ("PyramidCLIP", "ResNet50"): 44.7,
    ("CLIP", "ViT-B/32"): 22.9,
    ("PyramidCLIP", "ViT-B/32"): 41.4,
    ("CLIP", "ViT-B/16"): 27.6,
    ("PyramidCLIP", "ViT-B/16"): 47.2,
}

RETRIEVAL_COLUMNS = ("I2T R@1", "I2T R@5", "T2I R@1", "T2I R@5")
# Table 3 (YFCC15M-V1, 32 epochs): MS-COCO zero-shot retrieval, RETRIEVAL_COLUMNS
TABLE3 = {
    ("CLIP", "ResNet50"): (21.0, 45.2, 13.4, 31.2),
    ("PyramidCLIP", "ResNet50"): (37.2, 61.8, 22.0, 44.4),
    ("CLIP", "ViT-B/32"): (17.7, 40.4, 10.7, 27.1),
    ("PyramidCLIP", "ViT-B/32"): (30.8, 57.0, 18.9, 41.1),
    ("CLIP", "ViT-B/16"): (22.1, 45.8, 13.0, 30.9),
    ("PyramidCLIP", "ViT-B/16"): (34.7, 61.6, 22.7, 45.5),
}

# Table 4 (LAION15M, 32 epochs): RETRIEVAL_COLUMNS + ImageNet zero-shot top-1
TABLE4 = {
    ("CLIP", "ResNet50"): (31.5, 57.0, 18.9, 39.8, 35.6),
    ("PyramidCLIP", "ResNet50"): (31.2, 57.7, 21.4, 44.5, 41.1),
    ("CLIP", "ViT-B/32"): (25.9, 49.8, 15.6, 34.8, 32.6),
    ("PyramidCLIP", "ViT-B/32"): (25.3, 50.8, 18.8, 39.9, 39.2),
    ("CLIP", "ViT-B/16"): (31.4, 56.2, 19.2, 40.6, 38.3),
    ("PyramidCLIP", "ViT-B/16"): (30.6, 57.3, 22.7, 45.8, 45.0),
}

# Table 5 (128M pairs): (method, encoder, pairs, epochs) -> ImageNet zero-shot top-1
TABLE5 = {
    ("CLIP", "ResNet50", "128M", 8): 53.0,
    ("PyramidCLIP", "ResNet50", "128M", 8): 57.7,
    ("CLIP", "ViT-B/32", "128M", 32): 55.5,
    ("CLIP", "ViT-B/32", "128M", 8): 49.7,
    ("PyramidCLIP", "ViT-B/32", "128M", 8): 56.5,
    ("CLIP", "ViT-B/16", "128M", 8): 54.4,
    ("PyramidCLIP", "ViT-B/16", "128M", 8): 62.4,
    ("CLIP (OpenAI)", "ResNet50", "400M", 32): 59.6,
}

# Table 6 (YFCC15M-V1, 8 epochs, cumulative: each row adds one component): ImageNet zero-shot (top-1, top-5)
TABLE6_ROWS = ("L_CLIP", "L_LT", "+ L_GS", "+ LeFF", "+ L_RT", "+ L_RS", "+ Soften")
TABLE6 = {
    "ResNet50": {
        "L_CLIP": (29.2, 53.6),
        "L_LT": (30.3, 54.8),
        "+ L_GS": (34.7, 60.6),
        "+ L_RT": (35.9, 63.1),
        "+ L_RS": (37.2, 63.9),
        "+ Soften": (38.5, 64.7),
    },
    "ViT-B/16": {
        "L_CLIP": (25.6, 49.0),
        "L_LT": (27.3, 50.7),
        "+ L_GS": (33.4, 58.5),
        "+ LeFF": (36.0, 61.7),
        "+ L_RT": (38.6, 65.2),
        "+ L_RS": (39.6, 66.1),
        "+ Soften": (41.3, 68.1),
    },
}

DETECTION_COLUMNS = ("AP", "AP50", "AP75")
# Table 7 (VOC07 test, RN50 C4 Faster R-CNN): DETECTION_COLUMNS
TABLE7 = {
    ("CLIP", "YFCC15M", 32): (45.0, 72.7, 46.6),
    ("PyramidCLIP", "YFCC15M", 32): (49.2, 77.1, 52.5),
    ("CLIP", "LAION15M", 32): (46.8, 74.9, 49.5),
    ("PyramidCLIP", "LAION15M", 32): (48.6, 76.4, 52.5),
    ("CLIP", "YFCC15M", 8): (43.5, 72.4, 45.3),
    ("PyramidCLIP w/o Relation", "YFCC15M", 8): (45.2, 74.1, 46.9),
    ("PyramidCLIP", "YFCC15M", 8): (46.8, 75.6, 49.8),
}
