"""Downstream evaluation of image-text models: the protocols of ProtoCLIP Sec. IV-C, one module per idea.

- ``encode``: images, feature maps and texts through a model, in batches;
- ``zero_shot``: zero-shot classification with CLIP's prompt ensemble (C.1; Tables III, VI);
- ``probes``: linear probing with scikit-learn's L-BFGS logistic regression, 1,000 iterations (C.2; Table VII),
  DINO's weighted k-NN classifier with k = 20 (C.3; Table VII), per-class accuracy, multi-label mean average precision
  with linear SVMs (the PASCAL VOC / MS-COCO metric of ICMLM, the detection stand-in of PyramidCLIP);
- ``retrieval``: image-text retrieval recall@{1,5,10} and their mean (C.4; Table VIII);
- ``clustering``: K-Means clustering scored by ARI / AMI (Sec. IV-G3; Table XII) and the modality gap of Liang et
  al. [6] (ProtoCLIP Sec. I);
- ``chance``: chance levels, so that every number in the book can be read against what a random guess gets.

Features and labels may be numpy arrays or torch tensors everywhere. Features passed in are *unnormalised*; each
metric normalises where its protocol says so (zero-shot, k-NN, retrieval, clustering, modality gap) and not where it
does not (linear probe: "representations before normalization", C.2). A paper's own measures live with the paper
(DIME-FM's MMD: ``vlp_lib.papers.dimefm.mmd``; ICMLM's attribute zero-shot learning: ``vlp_lib.papers.icmlm.zsl``).
This package re-exports every public name of its modules: ``from vlp_lib.eval import linear_probe``.
"""

from __future__ import annotations

from vlp_lib.eval.chance import chance_level, majority_rate, retrieval_chance
from vlp_lib.eval.clustering import clustering_scores, modality_gap
from vlp_lib.eval.common import ArrayLike, has_text_tower
from vlp_lib.eval.encode import encode_feature_maps, encode_images, encode_texts
from vlp_lib.eval.probes import (
    DEFAULT_CS,
    DEFAULT_SVM_CS,
    knn_accuracy,
    knn_predict,
    linear_probe,
    macro_accuracy,
    multilabel_map,
    multilabel_svm_probe,
    per_class_accuracy,
    start_fit_pool,
)
from vlp_lib.eval.retrieval import retrieval_recall
from vlp_lib.eval.zero_shot import zero_shot_accuracy, zero_shot_classifier

__all__ = [
    "ArrayLike",
    "DEFAULT_CS",
    "DEFAULT_SVM_CS",
    "chance_level",
    "clustering_scores",
    "encode_feature_maps",
    "encode_images",
    "encode_texts",
    "has_text_tower",
    "knn_accuracy",
    "knn_predict",
    "linear_probe",
    "start_fit_pool",
    "macro_accuracy",
    "majority_rate",
    "modality_gap",
    "multilabel_map",
    "multilabel_svm_probe",
    "per_class_accuracy",
    "retrieval_chance",
    "retrieval_recall",
    "zero_shot_accuracy",
    "zero_shot_classifier",
]
